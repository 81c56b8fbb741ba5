package relief

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

func TestThrottleFloor(t *testing.T) {
	assert.Equal(t, int64(1<<30+64<<20), ThrottleFloor(3<<30, 2<<30), "anon 1 GiB + the 64-MiB margin")
	assert.Equal(t, int64(4<<30+128<<20), ThrottleFloor(4<<30, 0), "1/32 of 4 GiB")
	assert.Equal(t, int64(64<<20), ThrottleFloor(1<<30, 2<<30), "more cache than charge: the margin alone")
}

func TestThrottlePlan(t *testing.T) {
	const gib = int64(1 << 30)
	base := ThrottleInput{Threshold: 20 * gib, Band: 2 * gib, Current: 6 * gib, Reclaimable: 2 * gib, Own: cgroups.MemoryUnlimited}
	with := func(f func(*ThrottleInput)) ThrottleInput { in := base; f(&in); return in }
	floor := ThrottleFloor(6*gib, 2*gib) // 4 GiB + 128 MiB
	for _, tc := range []struct {
		name    string
		in      ThrottleInput
		release bool
		high    int64
		atFloor bool
		held    bool
	}{
		{name: "far below the band: none", in: with(func(in *ThrottleInput) { in.Used = 10 * gib }), release: true},
		{name: "just below the band, not throttled: none", in: with(func(in *ThrottleInput) { in.Used = 18*gib - 1 }), release: true},
		{name: "at the band's start: the root may grow to the middle", in: with(func(in *ThrottleInput) { in.Used = 18 * gib }), high: floor + gib},
		{name: "in the band: what is left to the middle", in: with(func(in *ThrottleInput) { in.Used = 18*gib + gib/2 }), high: floor + gib/2},
		{name: "past the middle: the floor", in: with(func(in *ThrottleInput) { in.Used = 19*gib + gib/2 }), high: floor, atFloor: true},
		{name: "above the threshold: the floor, never lower", in: with(func(in *ThrottleInput) { in.Used = 25 * gib }), high: floor, atFloor: true},
		{name: "throttled, below the start within the hysteresis: held", in: with(func(in *ThrottleInput) {
			in.Used, in.Throttled = 18*gib-gib/4, true
		}), high: floor + gib + gib/4},
		{name: "throttled, past the hysteresis: released", in: with(func(in *ThrottleInput) { in.Used, in.Throttled = 18*gib-gib/2-1, true }), release: true},
		{name: "at the floor, the root grown past the value written: held, not chased", in: with(func(in *ThrottleInput) {
			in.Used, in.Throttled, in.Written = 19*gib+gib/2, true, floor-gib/2
		}), high: floor - gib/2, atFloor: true, held: true},
		{name: "at the floor, grown past the value written, the root's own memory.high lower: not koordlet's hold", in: with(func(in *ThrottleInput) {
			in.Used, in.Throttled, in.Written, in.Own = 19*gib+gib/2, true, floor-gib/2, floor-gib
		}), high: floor - gib, atFloor: true},
		{name: "at the floor, the value written above it: lowered to it", in: with(func(in *ThrottleInput) {
			in.Used, in.Throttled, in.Written = 19*gib+gib/2, true, floor+gib
		}), high: floor, atFloor: true},
		{name: "headroom back: raised with it", in: with(func(in *ThrottleInput) {
			in.Used, in.Throttled, in.Written = 18*gib, true, floor-gib/2
		}), high: floor + gib},
		{name: "never above the root's own memory.high", in: with(func(in *ThrottleInput) { in.Used, in.Own = 18*gib, 5*gib }), high: 5 * gib},
		{name: "no band: off", in: with(func(in *ThrottleInput) { in.Used, in.Band = 25*gib, 0 }), release: true},
		{name: "no threshold: off", in: with(func(in *ThrottleInput) { in.Used, in.Threshold = 25*gib, 0 }), release: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ThrottlePlan(tc.in)
			assert.Equal(t, tc.release, d.Release)
			if !tc.release {
				assert.Equal(t, tc.high, d.High)
				assert.Equal(t, tc.atFloor, d.Floor)
				assert.Equal(t, tc.held, d.Held)
				if tc.in.Written == 0 {
					assert.GreaterOrEqual(t, d.High, min(floor, tc.in.Own), "never written below the floor (unless the own value is lower)")
				}
			}
			if tc.in.Band == base.Band && tc.in.Threshold == base.Threshold {
				assert.Equal(t, 18*gib, d.Start)
			}
		})
	}
}
