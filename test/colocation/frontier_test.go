package colocation

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func row(c Config, setting string, level, ratio, batch, idle float64) Row {
	return Row{Config: c, Setting: setting, Level: level, P99Ratio: ratio, BatchCPUSeconds: Spread{Min: batch, Median: batch, Max: batch, N: 1},
		IdleCPUSeconds: Spread{Median: idle, N: 1}, BatchShare: batch / 20}
}

func TestFrontierPicksTheBestSettingMeetingEachSLO(t *testing.T) {
	rows := []Row{
		row(LSAlone, "", 0.6, 1, 0, 20),
		row(UpstreamBest, "suppress 50%", 0.6, 1.05, 2, 0),
		row(UpstreamBest, "suppress 70%", 0.6, 1.25, 6, 0),
		row(UpstreamBest, "suppress 100%", 0.6, 2.5, 18, 0),
		row(Controlled, "target 500µs", 0.6, 1.08, 4, 0),
		row(Controlled, "target 1ms", 0.6, 1.2, 12, 0),
		row(Controlled, "target 5ms", 0.6, 1.9, 16, 0),
	}
	fr := FrontierOf(rows, DefaultSLOs)
	require.Len(t, fr, 4)
	assert.Equal(t, "suppress 50%", fr[0].Static.Setting)
	assert.Equal(t, "target 500µs", fr[0].Controlled.Setting)
	assert.InDelta(t, 2, fr[0].Gain, 1e-9)
	assert.Equal(t, "suppress 70%", fr[1].Static.Setting)
	assert.Equal(t, "target 1ms", fr[1].Controlled.Setting)
	assert.InDelta(t, 2, fr[1].Gain, 1e-9)
	assert.Equal(t, "target 5ms", fr[3].Controlled.Setting, "2×: the 5 ms target; 100% is over")
	ts := FrontierTargets(fr, rows)
	var names []string
	for _, tg := range ts {
		names = append(names, tg.Name)
	}
	require.Len(t, ts, 6, "%v", names) // 4 SLOs, the wins, evictions
	for i := 0; i < 4; i++ {
		assert.True(t, ts[i].Met, "%s: %s", ts[i].Name, ts[i].Measured)
	}
	assert.True(t, ts[4].Met, "wins at all four: %s", ts[4].Measured)
	assert.Contains(t, ts[4].Measured, "4 (60%/1.1×")
	assert.True(t, ts[5].Met, "no eviction")

	// The controller a little below static at one SLO: that target missed,
	// and a single win is not two.
	rows[5] = row(Controlled, "target 1ms", 0.6, 1.2, 5.9, 0)
	rows[4] = row(Controlled, "target 500µs", 0.6, 1.08, 2, 0)
	rows[6] = row(Controlled, "target 5ms", 0.6, 1.9, 7, 0)
	ts = FrontierTargets(FrontierOf(rows, DefaultSLOs), rows)
	assert.True(t, ts[0].Met, "a tie at 1.1×: 2 = 2")
	assert.False(t, ts[1].Met, "5.9 < 6 at 1.3×: %s", ts[1].Measured)
	assert.False(t, ts[4].Met, "no win (2×: 7 vs 6 is 1.17×, not 1.25×): %s", ts[4].Measured)
}

func TestFrontierNoneMeets(t *testing.T) {
	rows := []Row{row(LSAlone, "", 0.3, 1, 0, 40), row(UpstreamBest, "suppress 100%", 0.3, 3, 30, 0), row(Controlled, "target 1ms", 0.3, 1.2, 10, 0)}
	fr := FrontierOf(rows, []float64{1.1, 1.3})
	assert.True(t, math.IsNaN(fr[0].Gain), "neither")
	assert.True(t, math.IsInf(fr[1].Gain, 1), "only the controller")
	ts := FrontierTargets(fr, rows)
	assert.True(t, ts[0].Met, "neither meets 1.1×: a tie at none")
	assert.True(t, ts[1].Met, "only the controller meets 1.3×")
	assert.False(t, ts[2].Met, "one win of two needed: %s", ts[2].Measured)
}

func TestFrontierSLOControl(t *testing.T) {
	slo := func(ratio, p99Ratio, batch float64) Row {
		r := row(SLOControlled, fmt.Sprintf("declared %.1f×", ratio), 0.6, p99Ratio, batch, 0)
		r.SLORatio = ratio
		r.BatchCPUSeconds = Spread{Min: batch - 1, Median: batch, Max: batch + 1, N: 3}
		return r
	}
	static := row(UpstreamBest, "suppress 70%", 0.6, 1.25, 6, 0)
	static.BatchCPUSeconds = Spread{Min: 0.4, Median: 6, Max: 9, N: 3}
	rows := []Row{row(LSAlone, "", 0.6, 1, 0, 20), row(UpstreamBest, "suppress 50%", 0.6, 1.05, 2, 0), static,
		slo(1.1, 1.2, 8), // missed the SLO it declared: no batch counts
		slo(1.3, 1.2, 7), // met, 7 ≥ 6
		slo(1.5, 1.4, 5), // met, 5 < 6 (static 70% meets 1.5× too)
		// 2×: SLO control did not run there.
	}
	fr := FrontierOf(rows, DefaultSLOs)
	require.Len(t, fr, 4)
	cases := []struct {
		slo                  float64
		ran, met             bool
		batch, gain          float64
		staticMin, staticMax float64
	}{
		{1.1, true, false, 0, 0, 2, 2},
		{1.3, true, true, 7, 7.0 / 6, 0.4, 9},
		{1.5, true, false, 5, 5.0 / 6, 0.4, 9},
		{2, false, false, 0, math.NaN(), 0.4, 9},
	}
	for i, tc := range cases {
		f := fr[i]
		assert.Equal(t, tc.slo, f.SLO)
		assert.Equal(t, tc.ran, f.SLORan, "%.1f×", tc.slo)
		assert.InDelta(t, tc.batch, f.SLOControl.Batch, 1e-9, "%.1f×", tc.slo)
		if math.IsNaN(tc.gain) {
			assert.True(t, math.IsNaN(f.SLOGain))
		} else {
			assert.InDelta(t, tc.gain, f.SLOGain, 1e-9, "%.1f×", tc.slo)
		}
		assert.Equal(t, tc.staticMin, f.Static.BatchMin, "the frontier's own range at %.1f×", tc.slo)
		assert.Equal(t, tc.staticMax, f.Static.BatchMax)
	}
	ts := FrontierTargets(fr, rows)
	var got []bool
	for _, tg := range ts {
		if strings.Contains(tg.Name, "SLO control") {
			got = append(got, tg.Met)
		}
	}
	assert.Equal(t, []bool{false, true, false}, got, "one verdict per SLO it declared: missed, met, below static")
	var b strings.Builder
	PrintFrontier(&b, fr)
	assert.Contains(t, b.String(), "| 60% | 1.3× | suppress 70% (1.25×) | 6.0 [0.4–9.0] |")
	assert.Contains(t, b.String(), "| met it (1.20×) | 7.0 [6.0–8.0] |")
	assert.Contains(t, b.String(), "| 60% | 2.0× |")
	assert.Regexp(t, `\| 60% \| 2\.0× .*\| - \| - \| - \| - \|`, b.String(), "no SLO control at 2×")
}
