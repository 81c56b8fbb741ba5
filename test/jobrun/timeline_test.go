package jobrun

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimelinePlot(t *testing.T) {
	tl := Timeline{
		Phases: []Point{
			{At: 10 * time.Second, Level: 0.2, Rate: 100, P99: 5 * time.Millisecond, Node: 0.5, Batch: 0.6, Capacity: Capacity{VCores: 1, MemoryMB: 4000}},
			{At: 20 * time.Second, Level: 0.7, Rate: 400, P99: 9 * time.Millisecond, Node: 0.9, Batch: 0.2, Capacity: Capacity{VCores: -1, MemoryMB: -1}},
		},
		Marks: []Mark{{At: 15 * time.Second, Kind: "killed"}, {At: 18 * time.Second, Kind: "NM pod evicted"}},
	}
	file := filepath.Join(t.TempDir(), "day.svg")
	require.NoError(t, tl.Plot("a day", file))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	svg := string(b)
	assert.Contains(t, svg, "<svg")
	for _, legend := range []string{"LS p99 (ms)", "YARN capacity on the RM (vcores)", "YARN CPU use (cores)", "killed", "NM pod evicted"} {
		assert.Contains(t, svg, legend)
	}
	assert.Error(t, tl.Plot("a day", filepath.Join(t.TempDir(), "no", "such", "dir.svg")), "an unwritable file is an error")
}
