package colocation

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCutOf(t *testing.T) {
	s := []StepSample{{At: -200 * time.Millisecond, Budget: 1.5}, {At: -100 * time.Millisecond, Budget: 1.6},
		{At: 300 * time.Millisecond, Budget: 1.6}, {At: 1100 * time.Millisecond, Budget: 0.8}, {At: 2100 * time.Millisecond, Budget: 0.4}}
	at, low, cut := cutOf(s)
	assert.Equal(t, 1.6, at)
	assert.Equal(t, 0.4, low)
	assert.Equal(t, 1100*time.Millisecond, cut)
	_, _, cut = cutOf(s[:3])
	assert.Equal(t, time.Duration(-1), cut, "never cut")
	at, _, _ = cutOf([]StepSample{{At: -time.Second, Budget: math.NaN()}, {At: time.Second, Budget: 1}})
	assert.True(t, math.IsNaN(at))
}

func TestLatencyBinsAndPlot(t *testing.T) {
	step := time.Unix(1000, 0)
	var rs []attackResult
	for i := -200; i < 400; i++ {
		lat := 2 * time.Millisecond
		if i >= 0 && i < 20 {
			lat = 20 * time.Millisecond // the step's first second
		}
		rs = append(rs, attackResult{Sent: step.Add(time.Duration(i) * 50 * time.Millisecond), Latency: lat})
	}
	bins, before, during, after := latencyBins(rs, step, 10*time.Second, 20*time.Second)
	assert.Equal(t, 2*time.Millisecond, before)
	assert.Equal(t, 20*time.Millisecond, during)
	assert.Equal(t, 2*time.Millisecond, after)
	require.Len(t, bins, 60)
	assert.Equal(t, -10*time.Second, bins[0].At)
	assert.Equal(t, 20*time.Millisecond, bins[20].P99)

	file := filepath.Join(t.TempDir(), "step.svg")
	r := StepResult{Opts: StepOptions{Target: time.Millisecond, From: 0.3, To: 0.6, Before: 10 * time.Second, After: 10 * time.Second},
		Bins: bins, Samples: []StepSample{{At: -time.Second, Budget: 1.5, Usage: 1.4, Signal: 800 * time.Microsecond}, {At: time.Second, Budget: 0.7, Usage: 0.7, Signal: -1}}}
	require.NoError(t, writeStepPlot(file, r))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(b), "<svg"), "an SVG")
	assert.Contains(t, string(b), "batch budget")
}

func TestP99Text(t *testing.T) {
	assert.Equal(t, "12.35 ms", p99Text(12345*time.Microsecond))
	assert.Equal(t, "no requests", p99Text(0))
	assert.Equal(t, "failed (over 1% of the requests failed or timed out)", p99Text(failedLatency),
		"a window whose p99 is a failed request's says so, not the stand-in's 4.6e12 ms (measure-colocation-v2, 2026-11-29)")
}
