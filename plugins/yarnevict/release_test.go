package yarnevict

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

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
	e.held = func(c *store.Container) (kill.Held, bool) {
		if c.Name == stuck.Name {
			return kill.Held{Bytes: 300 << 20}, true // nothing freed
		}
		return kill.Held{}, true
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
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.Evictions.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "failed")))
	assert.Equal(t, float64(100<<20), testutil.ToFloat64(e.metrics.Released.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "memory", "byte")))

	assert.True(t, ReleasesLater([]Victim{{Holding: 1}}), "still held: cooling")
	assert.False(t, ReleasesLater(done), "all freed: no cooling")
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
		m.deps.Killer = func() *kill.Killer { return &kill.Killer{H: h} }
		held, ok := m.heldMemory(c)
		require.True(t, ok)
		assert.Equal(t, kill.Held{Bytes: 300 << 20, Running: true}, held, "v2 %v: a thread is still exiting", v2)

		require.NoError(t, os.WriteFile(filepath.Join(h.AbsDir(cgroups.CPU, dir), threadsFile), nil, 0o644))
		held, ok = m.heldMemory(c)
		require.True(t, ok)
		assert.Equal(t, kill.Held{}, held, "v2 %v: no thread left", v2)
	}
}
