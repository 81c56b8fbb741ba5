package jobs

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
)

func TestSLOTargetOf(t *testing.T) {
	runs := []Outcome{{PhaseP99: []time.Duration{3 * ms, 10 * ms}}, {PhaseP99: []time.Duration{4 * ms, 12 * ms}}, {PhaseP99: []time.Duration{5 * ms, 20 * ms}}}
	cases := []struct {
		name string
		runs []Outcome
		peak int
		want time.Duration
	}{
		{"the peak phase's median × 1.3", runs, 1, 15600 * time.Microsecond},
		{"another phase", runs, 0, 5200 * time.Microsecond},
		{"no run", nil, 1, 0},
		{"no such phase", runs, 2, 0},
		{"a run without a p99 there is left out", []Outcome{{PhaseP99: []time.Duration{0, 0}}, {PhaseP99: []time.Duration{0, 10 * ms}}}, 1, 13 * ms},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SLOTargetOf(tc.runs, tc.peak))
		})
	}
}

func TestRowViolations(t *testing.T) {
	ref := refs(t)
	ref.SLOTarget = 10 * ms
	none := colocation.NoRequests
	runs := []Outcome{
		// 1 of 4 windows over the report's target (an empty one not counted).
		{PhaseP99: []time.Duration{11 * ms, 20 * ms}, Windows: []time.Duration{5 * ms, 11 * ms, none, 9 * ms, 10 * ms}},
		// Its own declared target, 20 ms: none over.
		{PhaseP99: []time.Duration{11 * ms, 20 * ms}, Windows: []time.Duration{15 * ms, 19 * ms}, SLOTarget: 20 * ms},
		// 3 of 3 (a failed request's window included).
		{PhaseP99: []time.Duration{11 * ms, 20 * ms}, Windows: []time.Duration{30 * ms, colocation.Failed, 12 * ms}},
	}
	r, err := RowOf("x", runs, ref)
	require.NoError(t, err)
	assert.Equal(t, 3, r.Violations.N)
	assert.InDelta(t, 0, r.Violations.Min, 1e-9)
	assert.InDelta(t, 0.25, r.Violations.Median, 1e-9)
	assert.InDelta(t, 1, r.Violations.Max, 1e-9)
	assert.Equal(t, 3, r.ViolatedMax)

	ref.SLOTarget = 0
	r, err = RowOf("x", runs[:1], ref)
	require.NoError(t, err)
	assert.Zero(t, r.Violations.N, "no target: nothing counted")
}

func TestCheckSLO(t *testing.T) {
	up := Row{Config: "upstream", WorstPhase: colocation.SpreadOf([]float64{1.8, 2.1, 2.3}), UtilisationGain: spread(12)}
	good := Row{Config: "slo", Violations: colocation.SpreadOf([]float64{0, 0, 0}), WorstPhase: colocation.SpreadOf([]float64{1.1, 1.3, 1.7}),
		UtilisationGain: spread(22.5)}
	verdicts := func(c Config, r Row, up *Row) map[string]bool {
		out := map[string]bool{}
		for _, v := range DefaultTargets().CheckSLO(c, r, up) {
			out[v.Target] = v.Met
		}
		return out
	}
	const zero, util, below = "zero SLO violations in every repeat", "utilisation ≥ upstream's best + 10 points", "the recommended configuration's worst phase range entirely below upstream's"
	cases := []struct {
		name   string
		c      Config
		change func(*Row)
		up     *Row
		want   map[string]bool
	}{
		{"all met", PluginSLO, nil, &up, map[string]bool{zero: true, util: true, below: true}},
		{"one window in one repeat", PluginSLO, func(r *Row) { r.Violations, r.ViolatedMax = colocation.SpreadOf([]float64{0, 0.01, 0}), 1 }, &up,
			map[string]bool{zero: false, util: true, below: true}},
		{"no windows counted is not zero violations", PluginSLO, func(r *Row) { r.Violations = colocation.Spread{} }, &up,
			map[string]bool{zero: false, util: true, below: true}},
		{"+9.9 points over upstream", PluginSLO, func(r *Row) { r.UtilisationGain = spread(21.9) }, &up,
			map[string]bool{zero: true, util: false, below: true}},
		{"ranges overlap", PluginSLO, func(r *Row) { r.WorstPhase = colocation.SpreadOf([]float64{1.1, 1.8}) }, &up,
			map[string]bool{zero: true, util: true, below: false}},
		{"without upstream: the SLO only", PluginSLO, nil, nil, map[string]bool{zero: true}},
		{"another configuration: none", PluginControlled, nil, &up, map[string]bool{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			if tc.change != nil {
				tc.change(&r)
			}
			assert.Equal(t, tc.want, verdicts(tc.c, r, tc.up))
		})
	}
	assert.True(t, math.IsNaN(colocation.Violations{}.Share()))
}
