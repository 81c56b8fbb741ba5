package yarnevict

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
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
	rel, still, known := MeasureRelease(512*mi, seq(Held{400 * mi, true}, Held{100 * mi, true}, Held{0, false}), time.Minute, noSleep)
	assert.Equal(t, [3]any{512 * mi, int64(0), true}, [3]any{rel, still, known}, "freed while the processes exited")

	rel, still, _ = MeasureRelease(512*mi, seq(Held{500 * mi, false}), time.Minute, noSleep)
	assert.Equal(t, 12*mi, rel, "no process left but the memory still counted: only what was freed")
	assert.Equal(t, int64(0), still, "no process holds it: no cooling for it")

	rel, still, _ = MeasureRelease(512*mi, seq(Held{512 * mi, true}), 0, noSleep)
	assert.Equal(t, int64(0), rel, "exiting at the deadline, nothing freed yet: nothing released")
	assert.Equal(t, 512*mi, still)

	rel, _, _ = MeasureRelease(512*mi, seq(Held{600 * mi, false}), time.Minute, noSleep)
	assert.Equal(t, int64(0), rel, "never below 0")

	_, _, known = MeasureRelease(512*mi, func() (Held, bool) { return Held{}, false }, time.Minute, noSleep)
	assert.False(t, known)
}

// TestRealKernelKillThatReleasedNothingFails: the kill ends (its processes
// gone), but what the container held is not freed (here the reader reports
// it still held): the eviction is reported failed - warning Event,
// result=failed, nothing counted released - and the next victim is taken.
// The code before reported the victim's whole usage released at the kill.
// A container whose processes still hold memory after the wait sets the
// cooling (ReleasesLater), so the next check does not take another victim
// for memory that is on its way out.
func TestRealKernelKillThatReleasedNothingFails(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "memory")
	kerneltest.UseHostRoots(t)
	hier := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	stuck := realContainer(t, hier, "container_e17_1700000000000_0042_01_000004", true)
	next := realContainer(t, hier, "container_e17_1700000000000_0042_01_000005", true)
	e := newExecuteEnv(t, hier)
	e.deps.held = func(c *store.Container) (Held, bool) {
		if c.Name == stuck.Name {
			return Held{Bytes: 300 << 20}, true // nothing freed
		}
		return Held{}, true
	}
	ranked := []Victim{ContainerVictim(stuck, 0, 300<<20, 0), ContainerVictim(next, 0, 100<<20, 0)}
	done, released, attempted := e.run(ranked, 200<<20)
	assert.True(t, attempted)
	require.Len(t, done, 1)
	assert.Equal(t, next.Name, done[0].Name())
	assert.Equal(t, int64(100<<20), released)
	evs := e.events()
	require.Len(t, evs, 2, "%v", evs)
	assert.Contains(t, evs[0], EventReasonEvictFailed)
	assert.Contains(t, evs[0], "none of its 300Mi was released")
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.Evictions.WithLabelValues("n1", ReasonBEMemoryEvict, "failed")))
	assert.Equal(t, float64(100<<20), testutil.ToFloat64(e.metrics.Released.WithLabelValues("n1", ReasonBEMemoryEvict, "memory")))

	assert.True(t, ReleasesLater([]Victim{{Holding: 1}}), "still held: cooling")
	assert.False(t, ReleasesLater(done), "all freed: no cooling")
}
