package relief

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

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
