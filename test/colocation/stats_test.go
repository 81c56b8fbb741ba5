package colocation

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPercentileNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 1000; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, 500*time.Millisecond, Percentile(s, 0.5))
	assert.Equal(t, 990*time.Millisecond, Percentile(s, 0.99))
	assert.Equal(t, 999*time.Millisecond, Percentile(s, 0.999))
	assert.Equal(t, 1000*time.Millisecond, Percentile(s, 1))
	assert.Equal(t, time.Millisecond, Percentile(s, 0.0001))
	assert.Zero(t, Percentile(nil, 0.99))
	assert.Equal(t, 7*time.Millisecond, Percentile([]time.Duration{7 * time.Millisecond}, 0.999))
}

func TestSummariseLeavesErrorsOutOfLatencies(t *testing.T) {
	samples := []Sample{{3 * time.Millisecond, true}, {time.Millisecond, true}, {time.Hour, false}, {2 * time.Millisecond, true}}
	l := Summarise(samples)
	assert.Equal(t, 4, l.Requests)
	assert.Equal(t, 1, l.Errors)
	assert.Equal(t, 0.25, l.ErrorRate())
	assert.Equal(t, 2*time.Millisecond, l.P50)
	assert.Equal(t, 3*time.Millisecond, l.P99)
	assert.Equal(t, 3*time.Millisecond, l.P999)
	assert.Zero(t, Latencies{}.ErrorRate())
}

func TestSpreadOf(t *testing.T) {
	assert.Equal(t, Spread{Min: 1, Median: 2, Max: 5, N: 3}, SpreadOf([]float64{5, 1, 2}))
	assert.Equal(t, Spread{Min: 1, Median: 2.5, Max: 4, N: 4}, SpreadOf([]float64{4, 1, 3, 2}))
	assert.Equal(t, Spread{}, SpreadOf(nil))
}

func TestUtilisationAndIdle(t *testing.T) {
	assert.InDelta(t, 0.25, Utilisation(CPUTimes{Busy: 100, Total: 1000}, CPUTimes{Busy: 150, Total: 1200}), 1e-9)
	assert.Zero(t, Utilisation(CPUTimes{Busy: 1, Total: 10}, CPUTimes{Busy: 1, Total: 10}))
	assert.InDelta(t, 21.0, IdleCPUSeconds(0.3, 2, 15*time.Second), 1e-9)
	assert.Zero(t, IdleCPUSeconds(1.2, 2, time.Second))
	assert.True(t, math.IsNaN(Ratio(1, 0)))
	assert.Equal(t, 0.5, Ratio(1, 2))
}

func TestParseCPUTimes(t *testing.T) {
	stat := "cpu  100 5 50 1000 20 3 2 1 7 0\ncpu0 50 2 25 500 10 1 1 0 0 0\nintr 1\n"
	got, err := parseCPUTimes(stat)
	assert.NoError(t, err)
	assert.Equal(t, CPUTimes{Busy: 100 + 5 + 50 + 3 + 2 + 1, Total: 100 + 5 + 50 + 3 + 2 + 1 + 1000 + 20}, got)
	_, err = parseCPUTimes("intr 1\n")
	assert.Error(t, err)
}
