package cgroupwatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// distroRoot lays out a fake cgroup root the way most distributions mount
// cgroup v1: cpu and cpuacct co-mounted at "cpu,cpuacct" with "cpu" and
// "cpuacct" symlinks to it, the other controllers apart. It creates the YARN
// root in every controller and returns the hierarchy.
func distroRoot(t *testing.T) cgroups.Hierarchy {
	t.Helper()
	root := t.TempDir()
	h := cgroups.Hierarchy{CgroupRoot: root, ProcRoot: "/proc", Dir: "kubepods/besteffort/hadoop-yarn"}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "cpu,cpuacct", h.Dir), 0o755))
	require.NoError(t, os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")))
	require.NoError(t, os.Symlink("cpu,cpuacct", filepath.Join(root, "cpuacct")))
	for _, c := range []string{"cpuset", "memory", "blkio"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, c, h.Dir), 0o755))
	}
	return h
}

// TestCoMountedControllersInotify: on a distribution's layout (cpu,cpuacct
// co-mounted, symlinked) a container cgroup found by an event is owned in
// both cpu and cpuacct at once, and its removal clears both; the scan and a
// resync agree with the events.
func TestCoMountedControllersInotify(t *testing.T) {
	h := distroRoot(t)
	st := store.New()
	w := New(Options{Store: st, Force: SourceInotify, ResyncInterval: time.Hour,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }})
	stop := make(chan struct{})
	defer close(stop)
	w.Run(stop)
	require.Eventually(t, func() bool { return w.Active() != "" }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, SourceInotify, w.Active())

	name := "container_e17_1700000000000_0042_01_000002"
	own := cgroups.Ref{Dir: h.ContainerRelDir(name), Owned: true}
	// YARN with the memory handler: the container has cpu,cpuacct and memory.
	require.NoError(t, os.Mkdir(filepath.Join(h.RootDir(cgroups.CPU), name), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(h.RootDir(cgroups.Memory), name), 0o755))
	require.Eventually(t, func() bool {
		c, ok := st.Get(name)
		return ok && c.Cgroups[cgroups.Memory].Owned
	}, 2*time.Second, 5*time.Millisecond)
	c, _ := st.Get(name)
	assert.Equal(t, own, c.Cgroups[cgroups.CPU], "cpu is credited by the event on the co-mounted root")
	assert.Equal(t, own, c.Cgroups[cgroups.CPUAcct], "cpuacct is credited by the same event")
	assert.Equal(t, own, c.Cgroups[cgroups.Memory])
	assert.Equal(t, cgroups.Ref{}, c.Cgroups[cgroups.CPUSet])

	// The scan of the same layout finds the same cgroups, and a resync that
	// started after the events changes nothing.
	scan, err := cgroups.NewScanner(h).Scan()
	require.NoError(t, err)
	require.Len(t, scan.Containers, 1)
	assert.Equal(t, c.Cgroups, scan.Containers[0].Cgroups)
	stats := st.Resync(store.Observation{Scan: scan.Containers, ScanOK: true, Started: time.Now()}, time.Now())
	assert.Equal(t, store.Stats{}, stats)

	// rmdir in cpu,cpuacct clears both references at once; the memory
	// cgroup keeps the container.
	require.NoError(t, os.Remove(filepath.Join(h.RootDir(cgroups.CPU), name)))
	require.Eventually(t, func() bool {
		c, ok := st.Get(name)
		return ok && !c.Cgroups[cgroups.CPU].Owned
	}, 2*time.Second, 5*time.Millisecond)
	c, _ = st.Get(name)
	assert.Equal(t, cgroups.Ref{}, c.Cgroups[cgroups.CPU])
	assert.Equal(t, cgroups.Ref{}, c.Cgroups[cgroups.CPUAcct], "the rmdir clears cpuacct too")
	assert.Equal(t, own, c.Cgroups[cgroups.Memory])
	require.NoError(t, os.Remove(filepath.Join(h.RootDir(cgroups.Memory), name)))
	require.Eventually(t, func() bool { _, ok := st.Get(name); return !ok }, 2*time.Second, 5*time.Millisecond)
}

// TestCoMountedCPUOnly: CPU-only YARN on a co-mounted node (the chart's
// layout): the container has cpu,cpuacct only; the event makes it owned in
// both, and its rmdir removes it from the store.
func TestCoMountedCPUOnly(t *testing.T) {
	h := distroRoot(t)
	st := store.New()
	removed := make(chan string, 4)
	st.Subscribe("t", func(ev store.Event) {
		if ev.Type == store.Removed {
			removed <- ev.Container.Name
		}
	})
	w := New(Options{Store: st, Force: SourceInotify, ResyncInterval: time.Hour,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }})
	stop := make(chan struct{})
	defer close(stop)
	w.Run(stop)
	require.Eventually(t, func() bool { return w.Active() != "" }, 5*time.Second, 10*time.Millisecond)

	name := "container_1700000000000_0007_01_000003"
	require.NoError(t, os.Mkdir(filepath.Join(h.RootDir(cgroups.CPUAcct), name), 0o755))
	require.Eventually(t, func() bool { _, ok := st.Get(name); return ok }, 2*time.Second, 5*time.Millisecond)
	c, _ := st.Get(name)
	assert.True(t, c.Cgroups[cgroups.CPU].Owned, "cpu owned")
	assert.True(t, c.Cgroups[cgroups.CPUAcct].Owned, "cpuacct owned")
	require.NoError(t, os.Remove(filepath.Join(h.RootDir(cgroups.CPU), name)))
	select {
	case n := <-removed:
		assert.Equal(t, name, n)
	case <-time.After(2 * time.Second):
		c, _ := st.Get(name)
		t.Fatalf("the rmdir did not remove the container: %+v", c.Cgroups)
	}
}
