package yarnevict

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
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
	assert.Equal(t, float64(100<<20), testutil.ToFloat64(e.metrics.Released.WithLabelValues("n1", ReasonBEMemoryEvict, "memory", "byte")))

	assert.True(t, ReleasesLater([]Victim{{Holding: 1}}), "still held: cooling")
	assert.False(t, ReleasesLater(done), "all freed: no cooling")
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

// TestHeldMemoryCountsThreads: a killed process whose cgroup.procs is
// already empty while one of its threads is still in exit (freeing the
// address space) still holds what its memory cgroup counts; only an empty
// thread list (cgroup.threads on v2, tasks on v1) means nothing is held.
func TestHeldMemoryCountsThreads(t *testing.T) {
	for _, v2 := range []bool{true, false} {
		root := t.TempDir()
		h := cgroups.Hierarchy{CgroupRoot: root, ProcRoot: "/proc", Dir: "hadoop-yarn", V2: v2}
		name := "container_e17_1700000000000_0005_01_000003"
		dir := h.ContainerRelDir(name)
		c := &store.Container{Name: name}
		threadsFile, stat := "cgroup.threads", "anon 314572800\nfile 0\ninactive_file 0\nactive_file 0\ninactive_anon 0\nactive_anon 314572800\nunevictable 0\n"
		if !v2 {
			threadsFile, stat = "tasks", "total_cache 0\ntotal_rss 314572800\ntotal_inactive_file 0\ntotal_active_file 0\ntotal_inactive_anon 0\ntotal_active_anon 314572800\ntotal_unevictable 0\n"
		}
		for _, ctrl := range []cgroups.Controller{cgroups.CPU, cgroups.Memory} {
			c.Cgroups[ctrl] = cgroups.Ref{Dir: dir, Owned: true}
			abs := h.AbsDir(ctrl, dir)
			require.NoError(t, os.MkdirAll(abs, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(abs, "cgroup.procs"), nil, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(abs, threadsFile), []byte("4242\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(abs, "memory.stat"), []byte(stat), 0o644))
		}
		m := &MemoryEvict{reader: cgroups.NewUsageReader(root, v2).NoKeep()}
		m.deps.Killer = func() *Killer { return &Killer{H: h} }
		held, ok := m.heldMemory(c)
		require.True(t, ok)
		assert.Equal(t, Held{Bytes: 300 << 20, Running: true}, held, "v2 %v: a thread is still exiting", v2)

		require.NoError(t, os.WriteFile(filepath.Join(h.AbsDir(cgroups.CPU, dir), threadsFile), nil, 0o644))
		held, ok = m.heldMemory(c)
		require.True(t, ok)
		assert.Equal(t, Held{}, held, "v2 %v: no thread left", v2)
	}
}
