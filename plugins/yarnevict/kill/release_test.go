package kill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestMeasureRelease(t *testing.T) {
	const mi = int64(1 << 20)
	seq := func(hs ...Held) func() (Held, bool) {
		i := 0
		return func() (Held, bool) {
			h := hs[min(i, len(hs)-1)]
			i++
			return h, true
		}
	}
	noSleep := func(time.Duration) {}
	rel, still, known := MeasureRelease(512*mi, seq(Held{Bytes: 400 * mi, Running: true}, Held{Bytes: 100 * mi, Running: true}, Held{Bytes: 0, Running: false}), time.Minute, noSleep)
	assert.Equal(t, [3]any{512 * mi, int64(0), true}, [3]any{rel, still, known}, "freed while the processes exited")

	rel, still, _ = MeasureRelease(512*mi, seq(Held{Bytes: 500 * mi, Running: false}), time.Minute, noSleep)
	assert.Equal(t, 12*mi, rel, "no process left but the memory still counted: only what was freed")
	assert.Equal(t, int64(0), still, "no process holds it: no cooling for it")

	rel, still, _ = MeasureRelease(512*mi, seq(Held{Bytes: 512 * mi, Running: true}), 0, noSleep)
	assert.Equal(t, int64(0), rel, "exiting at the deadline, nothing freed yet: nothing released")
	assert.Equal(t, 512*mi, still)

	rel, _, _ = MeasureRelease(512*mi, seq(Held{Bytes: 600 * mi, Running: false}), time.Minute, noSleep)
	assert.Equal(t, int64(0), rel, "never below 0")

	_, _, known = MeasureRelease(512*mi, func() (Held, bool) { return Held{}, false }, time.Minute, noSleep)
	assert.False(t, known)
}

// TestMeasureReleaseUnmeasured: without a memory cgroup, threads left whose
// memory no /proc shows (a killed process's last thread freeing its address
// space) are waited for; at the deadline nothing is claimed released.
func TestMeasureReleaseUnmeasured(t *testing.T) {
	const mi = int64(1 << 20)
	i := 0
	seq := func() (Held, bool) {
		i++
		if i < 3 {
			return Held{Running: true, Unmeasured: true}, true
		}
		return Held{}, true
	}
	rel, still, known := MeasureRelease(300*mi, seq, time.Minute, func(time.Duration) {})
	assert.Equal(t, [3]any{300 * mi, int64(0), true}, [3]any{rel, still, known}, "waited for the last thread")
	assert.Equal(t, 3, i)

	rel, still, _ = MeasureRelease(300*mi, func() (Held, bool) { return Held{Running: true, Unmeasured: true}, true }, 0, func(time.Duration) {})
	assert.Equal(t, [2]int64{0, 300 * mi}, [2]int64{rel, still}, "still unmeasured at the deadline: nothing claimed")
}
