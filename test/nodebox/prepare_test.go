package nodebox

import (
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCounterSum(t *testing.T) {
	const text = `# TYPE koordlet_yarn_evicted_resource_total counter
koordlet_yarn_evicted_resource_total{reason="BEMemoryEvict",resource="memory"} 100
koordlet_yarn_evicted_resource_total{reason="MemoryAllocatableEvict",resource="memory"} 20
koordlet_yarn_evicted_resource_total{reason="BECPUEvict",resource="cpu"} 3
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	assert.Equal(t, 120.0, CounterSum(fams, "koordlet_yarn_evicted_resource_total", "resource", "memory"))
	assert.Equal(t, 123.0, CounterSum(fams, "koordlet_yarn_evicted_resource_total", "", ""))
	assert.Equal(t, 0.0, CounterSum(fams, "koordlet_yarn_missing_total", "", ""))
}
