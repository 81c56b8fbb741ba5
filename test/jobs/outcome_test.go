package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
)

const ms = time.Millisecond

// spread is one repeat's value.
func spread(v float64) colocation.Spread { return colocation.SpreadOf([]float64{v}) }

func refs(t *testing.T) References {
	t.Helper()
	ref, err := RefOf(
		[]Outcome{{PhaseP99: []time.Duration{10 * ms, 20 * ms}, Utilisation: 0.30},
			{PhaseP99: []time.Duration{12 * ms, 20 * ms}, Utilisation: 0.32}},
		[]Outcome{{JobTimes: map[string]time.Duration{"a": 60 * time.Second, "b": 100 * time.Second}}})
	require.NoError(t, err)
	return ref
}

func TestRefOf(t *testing.T) {
	ref := refs(t)
	assert.Equal(t, []time.Duration{11 * ms, 20 * ms}, ref.PhaseP99, "median per phase")
	assert.InDelta(t, 0.31, ref.Utilisation, 1e-9)
	assert.Equal(t, 60*time.Second, ref.JobTimes["a"])

	_, err := RefOf(nil, []Outcome{{}})
	assert.ErrorContains(t, err, "at least one run")
	_, err = RefOf([]Outcome{{PhaseP99: []time.Duration{ms}}, {PhaseP99: []time.Duration{ms, ms}}}, []Outcome{{}})
	assert.ErrorContains(t, err, "phases")

	// Without batch alone (the SLO day): LS alone's references, no job
	// time compared.
	noBatch, err := RefOf([]Outcome{{PhaseP99: []time.Duration{10 * ms}, Utilisation: 0.3}}, nil)
	require.NoError(t, err)
	assert.Empty(t, noBatch.JobTimes)
	row, err := RowOf("slo", []Outcome{{Jobs: 2, JobTimes: map[string]time.Duration{"a": time.Minute}, PhaseP99: []time.Duration{20 * ms}, Utilisation: 0.5}}, noBatch)
	require.NoError(t, err)
	assert.Zero(t, row.JobP50.N, "no job time ratio without batch alone, not a ratio of 0")
	assert.InDelta(t, 2.0, row.WorstPhase.Median, 1e-9)
}

func TestRowOf(t *testing.T) {
	ref := refs(t)
	runs := []Outcome{
		{Launched: 1000, Killed: 1, Jobs: 10, FailedAttempts: 1, JobTimes: map[string]time.Duration{"a": 66 * time.Second, "b": 150 * time.Second},
			PhaseP99: []time.Duration{11 * ms, 30 * ms}, Utilisation: 0.70, BatchCPU: 100 * time.Second, Koordlet: 5 * time.Second},
		{Launched: 1000, Preempted: 3, Jobs: 10, JobTimes: map[string]time.Duration{"a": 60 * time.Second, "b": 100 * time.Second},
			PhaseP99: []time.Duration{22 * ms, 20 * ms}, Utilisation: 0.60, BatchCPU: 80 * time.Second, Koordlet: 7 * time.Second},
	}
	r, err := RowOf("plugin set", runs, ref)
	require.NoError(t, err)
	assert.InDelta(t, 0.002, r.EvictionRate.Median, 1e-9, "(0.1% + 0.3%) / 2")
	assert.InDelta(t, 0.001, r.EvictionRate.Min, 1e-9)
	assert.InDelta(t, 0.5, r.FailedAttempts.Median, 1e-9)
	assert.InDelta(t, 0.5, r.Killed, 1e-9)
	assert.InDelta(t, 1.5, r.Preempted, 1e-9)
	// Run 1: a 1.1×, b 1.5× → p50 1.1, p95 1.5; run 2: 1.0 and 1.0.
	assert.InDelta(t, 1.05, r.JobP50.Median, 1e-9)
	assert.InDelta(t, 1.25, r.JobP95.Median, 1e-9)
	// Phase ratios: run 1 1.0 and 1.5, run 2 2.0 and 1.0.
	assert.InDelta(t, 1.5, r.PhaseRatio[0], 1e-9)
	assert.InDelta(t, 1.25, r.PhaseRatio[1], 1e-9)
	assert.Equal(t, 0, r.WorstPhaseIndex)
	assert.InDelta(t, 1.75, r.WorstPhase.Median, 1e-9, "the worst phase of each run: 1.5 and 2.0")
	assert.InDelta(t, 34, r.UtilisationGain.Median, 1e-9, "(70+60)/2 − 31")
	assert.InDelta(t, 90, r.BatchCPU.Median, 1e-9)

	_, err = RowOf("x", nil, ref)
	assert.ErrorContains(t, err, "no runs")
	_, err = RowOf("x", []Outcome{{PhaseP99: []time.Duration{ms}}}, ref)
	assert.ErrorContains(t, err, "phases")
}

func TestEvictionRateCountsTheNMPodsContainers(t *testing.T) {
	o := Outcome{Launched: 40, WithNMPod: 12, Killed: 0}
	assert.Equal(t, 12, o.Evicted())
	assert.InDelta(t, 0.3, o.EvictionRate(), 1e-9)
	assert.Zero(t, Outcome{}.EvictionRate())
}

func TestTargets(t *testing.T) {
	good := Row{Config: "plugin set", UtilisationGain: spread(35), WorstPhase: spread(1.2)}
	up := Row{Config: "upstream", EvictionRate: spread(0.3), FailedJobs: spread(2), WorstPhase: spread(1.25), UtilisationGain: spread(20)}
	for _, v := range DefaultTargets().Check(good, &up) {
		assert.True(t, v.Met, "%s: %s (%s)", v.Config, v.Target, v.Got)
	}
	cases := []struct {
		name   string
		change func(*Row)
		missed []string
	}{
		{"a failed job in one repeat", func(r *Row) { r.FailedJobs = colocation.SpreadOf([]float64{0, 1}) }, []string{"zero failed jobs"}},
		{"a job unfinished after the drain", func(r *Row) { r.Unfinished = colocation.SpreadOf([]float64{1, 0}) }, []string{"zero failed jobs"}},
		{"0.2% evicted", func(r *Row) { r.EvictionRate = spread(0.002) }, []string{"eviction rate"}},
		{"a phase 1.4×", func(r *Row) { r.WorstPhase = spread(1.4) }, []string{"every phase", "upstream"}},
		{"29 points", func(r *Row) { r.UtilisationGain = spread(29) }, []string{"utilisation"}},
		{"worse LS than upstream", func(r *Row) { r.WorstPhase = spread(1.28) }, []string{"upstream"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			tc.change(&r)
			var missed []string
			for _, v := range DefaultTargets().Check(r, &up) {
				if !v.Met {
					missed = append(missed, v.Target)
				}
			}
			require.Len(t, missed, len(tc.missed), "%v", missed)
			for i, m := range tc.missed {
				assert.Contains(t, missed[i], m)
			}
		})
	}
	// Equal to upstream on both is not strictly better.
	tie := Row{Config: "tie", WorstPhase: spread(1.0), UtilisationGain: spread(40)}
	upTie := Row{Config: "upstream", WorstPhase: spread(1.0)}
	vs := DefaultTargets().Check(tie, &upTie)
	assert.False(t, vs[len(vs)-1].Met, "no evictions and no failures on both: not strictly better")
	assert.Len(t, DefaultTargets().Check(good, nil), 4, "without upstream, no comparison")
}
