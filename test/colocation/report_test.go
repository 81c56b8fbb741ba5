package colocation

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ep(c Config, level float64, p99 time.Duration, batch, util float64) Episode {
	return Episode{Config: c, Level: level, Window: 10 * time.Second, CPUs: 2, NodeUtilisation: util, BatchCPUSeconds: batch,
		LS: Latencies{P50: p99 / 4, P99: p99, P999: 2 * p99, Requests: 100}}
}

func TestRowsRatiosAgainstLSAlone(t *testing.T) {
	eps := []Episode{
		ep(LSAlone, 0.3, 4*time.Millisecond, 0, 0.30),
		ep(LSAlone, 0.3, 6*time.Millisecond, 0, 0.40),
		ep(LSAlone, 0.3, 5*time.Millisecond, 0, 0.35),
		ep(PluginSet, 0.3, 5*time.Millisecond, 12, 0.95),
		ep(PluginSet, 0.3, 5*time.Millisecond, 13, 0.96),
		ep(PluginSet, 0.3, 6*time.Millisecond, 11, 0.94),
		ep(NoQoS, 0.6, 50*time.Millisecond, 8, 1),
	}
	eps[4].Evicted = 1
	eps[4].Events = map[string]int{"YARNContainerEvicted": 1}
	rows := Rows(eps)
	require.Len(t, rows, 3)
	alone, plugin, noqos := rows[0], rows[1], rows[2]
	assert.Equal(t, LSAlone, alone.Config)
	assert.Equal(t, Spread{Min: 4, Median: 5, Max: 6, N: 3}, alone.P99)
	assert.InDelta(t, 13.0, alone.IdleCPUSeconds.Median, 1e-9) // (1-0.35) × 2 × 10 s
	assert.Equal(t, PluginSet, plugin.Config)
	assert.InDelta(t, 1.0, plugin.P99Ratio, 1e-9)
	assert.InDelta(t, 12.0/13.0, plugin.BatchShare, 1e-9)
	assert.Equal(t, 1, plugin.Evicted)
	assert.Equal(t, map[string]int{"YARNContainerEvicted": 1}, plugin.Events)
	assert.Equal(t, 0.6, noqos.Level)
	assert.True(t, math.IsNaN(noqos.P99Ratio), "no LS-alone row at 60%")

	busy := Rows([]Episode{ep(LSAlone, 0.3, time.Millisecond, 0, 0.99), ep(NoQoS, 0.3, time.Millisecond, 5, 1)})
	assert.True(t, math.IsNaN(busy[1].BatchShare), "1% idle with LS alone: the machine was busy, no share")
}

func TestTargets(t *testing.T) {
	rows := Rows([]Episode{
		ep(LSAlone, 0.3, 10*time.Millisecond, 0, 0.3),      // idle 14 CPU-s
		ep(UpstreamBest, 0.3, 30*time.Millisecond, 5, 0.6), //
		ep(PluginSet, 0.3, 11*time.Millisecond, 13, 0.95),  // 1.1×, 93% of idle
		ep(LSAlone, 0.6, 10*time.Millisecond, 0, 0.6),      // idle 8 CPU-s
		ep(UpstreamBest, 0.6, 12*time.Millisecond, 4, 0.8), //
		ep(PluginSet, 0.6, 12*time.Millisecond, 4, 0.8),    // equal to upstream: not strictly better; 1.2×
	})
	ts := Targets(rows)
	require.Len(t, ts, 5)
	assert.True(t, ts[0].Met, ts[0].Measured)
	assert.True(t, ts[1].Met, ts[1].Measured)
	assert.False(t, ts[2].Met, ts[2].Measured)
	assert.False(t, ts[3].Met, ts[3].Measured)
	assert.True(t, ts[4].Met)

	var b strings.Builder
	PrintTargets(&b, ts)
	assert.Contains(t, b.String(), "NOT MET (p99 12.00 vs 12.00 ms; batch 4.0 vs 4.0 CPU-s)")
}

func TestPrintTable(t *testing.T) {
	eps := []Episode{ep(LSAlone, 0.3, 4*time.Millisecond, 0, 0.3), ep(LSAlone, 0.3, 6*time.Millisecond, 0, 0.3),
		ep(NoQoS, 0.3, 40*time.Millisecond, 10, 1)}
	eps[2].LS.Errors = 3
	eps[2].Events = map[string]int{"b": 2, "a": 1}
	eps[0].KoordletCPUSeconds, eps[1].KoordletCPUSeconds, eps[2].KoordletCPUSeconds = 0.1, 0.2, 0.3
	// LS alone's median p99 is 5 ms: the SLO 6.5 ms; no QoS's windows 2 of 3 over it.
	eps[0].Windows = []time.Duration{4 * time.Millisecond, NoRequests}
	eps[2].Windows = []time.Duration{40 * time.Millisecond, 5 * time.Millisecond, 7 * time.Millisecond}
	var b strings.Builder
	PrintTable(&b, Rows(eps))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, "| 1 LS alone | 30% | 1.25 (1.00–1.50) | 5.00 (4.00–6.00) | 10.00 (8.00–12.00) | 1.00× | 0.0% (0/1) | 0.00% | 0.0 (0.0–0.0) | 0% | 30% (30%–30%) | 0.15 (0.10–0.20) | 0 | 0 |", lines[2])
	assert.Equal(t, "| 2 + YARN, no QoS | 30% | 10.00 | 40.00 | 80.00 | 8.00× | 66.7% (2/3) | 3.00% | 10.0 | 71% | 100% | 0.30 | 0 | a×1, b×2 |", lines[3])
}

func TestRowsViolations(t *testing.T) {
	msec := time.Millisecond
	eps := []Episode{ep(LSAlone, 0.3, 10*msec, 0, 0.3), ep(UpstreamBest, 0.3, 20*msec, 5, 0.6), ep(SLOControlled, 0.3, 12*msec, 4, 0.6),
		ep(UpstreamBest, 0.6, 20*msec, 5, 0.6)}
	eps[1].Windows = []time.Duration{12 * msec, 14 * msec, Failed} // over 13 ms (1.3 × 10): 2 of 3
	eps[2].Windows, eps[2].SLOTarget = []time.Duration{12 * msec, 14 * msec}, 15*msec
	eps[3].Windows = []time.Duration{50 * msec}
	rows := Rows(eps)
	require.Len(t, rows, 4)
	assert.Equal(t, Violations{Violated: 2, Windows: 3}, rows[1].Violations, "against 1.3× LS alone at the level")
	assert.Equal(t, Violations{Violated: 0, Windows: 2}, rows[2].Violations, "against its own declared target")
	assert.Equal(t, Violations{}, rows[3].Violations, "no LS alone at 60%: no target, nothing counted")
}

func TestSLOTargetAt(t *testing.T) {
	msec := time.Millisecond
	eps := []Episode{ep(LSAlone, 0.3, 10*msec, 0, 0.3), ep(LSAlone, 0.3, 14*msec, 0, 0.3), ep(LSAlone, 0.3, 12*msec, 0, 0.3), ep(PluginSet, 0.3, 50*msec, 0, 0.3)}
	cases := []struct {
		name  string
		th    Thresholds
		level float64
		want  time.Duration
		err   string
	}{
		{"the issue's rule at the level", Thresholds{}, 0.3, 15600 * time.Microsecond, ""},
		{"a ratio of the sweep", Thresholds{SLORatio: 2}, 0.3, 24 * msec, ""},
		{"fixed", Thresholds{SLOTarget: 7 * msec, SLORatio: 2}, 0.6, 7 * msec, ""},
		{"no LS alone at the level", Thresholds{SLORatio: 1.5}, 0.6, 0, "LS alone has not run at that level"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sloTargetAt(tc.th, eps, tc.level)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTargetsSLOControl(t *testing.T) {
	msec := time.Millisecond
	cases := []struct {
		name    string
		windows []time.Duration
		met     bool
	}{
		{"every window within", []time.Duration{10 * msec, 12 * msec}, true},
		{"one window over", []time.Duration{10 * msec, 14 * msec}, false},
		{"no window counted", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slo := ep(SLOControlled, 0.3, 12*msec, 5, 0.6)
			slo.Windows, slo.SLOTarget = tc.windows, 13*msec
			ts := Targets(Rows([]Episode{ep(LSAlone, 0.3, 10*msec, 0, 0.3), slo}))
			require.Len(t, ts, 2)
			assert.Contains(t, ts[0].Name, "SLO control at 30%")
			assert.Equal(t, tc.met, ts[0].Met, ts[0].Measured)
		})
	}
}
