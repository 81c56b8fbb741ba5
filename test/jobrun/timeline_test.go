package jobrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
)

func TestTimelinePlot(t *testing.T) {
	tl := Timeline{
		Phases: []Point{
			{At: 10 * time.Second, Level: 0.2, Rate: 100, P99: 5 * time.Millisecond, Node: 0.5, Batch: 0.6, Capacity: Capacity{VCores: 1, MemoryMB: 4000}},
			{At: 20 * time.Second, Level: 0.7, Rate: 400, P99: 9 * time.Millisecond, Node: 0.9, Batch: 0.2, Capacity: Capacity{VCores: -1, MemoryMB: -1}},
		},
		Marks: []Mark{{At: 15 * time.Second, Kind: "killed"}, {At: 18 * time.Second, Kind: "NM pod evicted"}},
		SLO: []SLOSample{{At: 5 * time.Second, Slack: 0.3, HasSlack: true, Dominant: "slo"},
			{At: 10 * time.Second, Slack: -0.1, HasSlack: true, Dominant: "cpu-wait"}, {At: 15 * time.Second}},
	}
	tl.Phases[1].Violations = colocation.Violations{Violated: 1, Windows: 2}
	file := filepath.Join(t.TempDir(), "day.svg")
	require.NoError(t, tl.Plot("a day", file))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	svg := string(b)
	assert.Contains(t, svg, "<svg")
	for _, legend := range []string{"LS p99 (ms)", "YARN capacity on the RM (vcores)", "YARN CPU use (cores)", "killed", "NM pod evicted",
		"worst SLO slack (koordlet)", "winning signal: slo", "winning signal: cpu-wait", "a phase with SLO windows violated"} {
		assert.Contains(t, svg, legend)
	}
	assert.Error(t, tl.Plot("a day", filepath.Join(t.TempDir(), "no", "such", "dir.svg")), "an unwritable file is an error")

	// A day without koordlet's SLO series (upstream, LS alone) still plots.
	tl.SLO, tl.Phases[1].Violations = nil, colocation.Violations{}
	require.NoError(t, tl.Plot("a day", file))
	b, err = os.ReadFile(file)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "winning signal")
}

func TestSLOSampleOf(t *testing.T) {
	cases := []struct {
		name, text string
		want       SLOSample
	}{
		{"both", `# TYPE koordlet_yarn_ls_slo_worst_slack_ratio gauge
koordlet_yarn_ls_slo_worst_slack_ratio -0.25
# TYPE koordlet_yarn_interference_dominant_signal gauge
koordlet_yarn_interference_dominant_signal{signal="cpu-wait"} 0
koordlet_yarn_interference_dominant_signal{signal="slo"} 1
koordlet_yarn_interference_dominant_signal{signal="static"} 0
`, SLOSample{Slack: -0.25, HasSlack: true, Dominant: "slo"}},
		{"no pod known: no slack; the static threshold won", `# TYPE koordlet_yarn_interference_dominant_signal gauge
koordlet_yarn_interference_dominant_signal{signal="slo"} 0
koordlet_yarn_interference_dominant_signal{signal="static"} 1
`, SLOSample{Dominant: "static"}},
		{"neither (gates off)", `# TYPE koordlet_yarn_other gauge
koordlet_yarn_other 3
`, SLOSample{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(tc.text))
			require.NoError(t, err)
			assert.Equal(t, tc.want, sloSampleOf(fams))
		})
	}
}
