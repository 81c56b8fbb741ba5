package yarnevict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestGrowthTracker(t *testing.T) {
	g := GrowthTracker{Window: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	_, ok := g.Rate()
	assert.False(t, ok, "no samples")
	for i := 0; i < 3; i++ {
		g.Add(t0.Add(time.Duration(i)*time.Second), int64(i)*(10<<20))
	}
	_, ok = g.Rate()
	assert.False(t, ok, "3 samples over 2 s of a 10-s window: too short")
	for i := 3; i <= 12; i++ {
		g.Add(t0.Add(time.Duration(i)*time.Second), int64(i)*(10<<20))
	}
	r, ok := g.Rate()
	assert.True(t, ok)
	assert.InDelta(t, 10<<20, r, 1, "10 MiB a second")
	assert.Len(t, g.samples, 11, "only the window's samples are kept")
	g.Reset()
	_, ok = g.Rate()
	assert.False(t, ok)
}

func TestRMAskPlan(t *testing.T) {
	const mib = int64(1 << 20)
	base := RMAskInput{Start: 18000 * mib, Threshold: 20000 * mib, Lower: 19000 * mib, RMDelay: 20 * time.Second, AllocatedMB: 8192}
	with := func(f func(*RMAskInput)) RMAskInput { in := base; f(&in); return in }
	for _, tc := range []struct {
		name    string
		in      RMAskInput
		ask     bool
		release int64
	}{
		{name: "below the band", in: with(func(in *RMAskInput) { in.Used, in.Rate = 17000*mib, float64(10*mib) })},
		{name: "in the band, not growing", in: with(func(in *RMAskInput) { in.Used, in.Rate = 19000*mib, 0 })},
		{name: "in the band, slow: asked what the projection needs", in: with(func(in *RMAskInput) { in.Used, in.Rate = 19000*mib, float64(10*mib) }),
			ask: true, release: 200},
		{name: "in the band, slow, below lower when the RM acts: nothing", in: with(func(in *RMAskInput) { in.Used, in.Rate = 18500*mib, float64(10*mib) })},
		{name: "fast: the kill at the threshold", in: with(func(in *RMAskInput) { in.Used, in.Rate = 19000*mib, float64(100*mib) })},
		{name: "above the threshold: the kill", in: with(func(in *RMAskInput) { in.Used, in.Rate = 20000*mib, float64(mib) })},
		{name: "never more than YARN holds", in: with(func(in *RMAskInput) {
			in.Used, in.Rate, in.AllocatedMB, in.Lower = 19000*mib, float64(10*mib), 100, 18000*mib
		}), ask: true, release: 100},
		{name: "no YARN allocation: nothing to ask", in: with(func(in *RMAskInput) { in.Used, in.Rate, in.AllocatedMB = 19000*mib, float64(10*mib), 0 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := RMAskPlan(tc.in)
			assert.Equal(t, tc.ask, d.Ask)
			if tc.ask {
				assert.InDelta(t, tc.release, d.ReleaseMB, 1)
				assert.Greater(t, d.TimeToThreshold, tc.in.RMDelay)
			}
		})
	}
}
