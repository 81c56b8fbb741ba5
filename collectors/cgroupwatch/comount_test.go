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

// useSelfCgroup points the hierarchy-id lookup at a /proc/self/cgroup
// with content b for the test.
func useSelfCgroup(t *testing.T, b string) {
	f := filepath.Join(t.TempDir(), "cgroup")
	require.NoError(t, os.WriteFile(f, []byte(b), 0o644))
	old, oldProc := selfCgroupFile, procCgroupFile
	selfCgroupFile, procCgroupFile = f, filepath.Join(t.TempDir(), "none")
	t.Cleanup(func() { selfCgroupFile, procCgroupFile = old, oldProc })
}

// distroSelfCgroup is /proc/self/cgroup on a distribution's v1 layout.
const distroSelfCgroup = `12:pids:/user.slice/user-0.slice
11:net_cls,net_prio:/
10:memory:/user.slice/user-0.slice
9:blkio:/user.slice
8:freezer:/
6:cpuset:/
4:cpu,cpuacct:/user.slice
1:name=systemd:/user.slice/user-0.slice/session-1.scope
0::/user.slice/user-0.slice/session-1.scope
`

// TestCoMountedControllersEBPF: with eBPF on the distribution's layout, cpu
// and cpuacct are one hierarchy (one id) and one directory: the watcher
// puts one parent in the kernel for both, and its events credit both.
func TestCoMountedControllersEBPF(t *testing.T) {
	useSelfCgroup(t, distroSelfCgroup)
	h := distroRoot(t)
	st := store.New()
	var fakes fakeEBPFs
	w := New(Options{Store: st, ResyncInterval: time.Hour, Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true },
		openEBPF: fakes.open})
	startWatcher(t, w)
	require.Equal(t, SourceEBPF, w.Active())
	f := fakes.last()
	f.mu.Lock()
	parents := make(map[ParentKey]bool, len(f.parents))
	for k := range f.parents {
		parents[k] = true
	}
	f.mu.Unlock()
	cpuKey := ParentKey{HierarchyID: 4, ID: inode(t, h.RootDir(cgroups.CPU))}
	assert.Equal(t, map[ParentKey]bool{
		cpuKey: true,
		{HierarchyID: 6, ID: inode(t, h.RootDir(cgroups.CPUSet))}:  true,
		{HierarchyID: 10, ID: inode(t, h.RootDir(cgroups.Memory))}: true,
		{HierarchyID: 9, ID: inode(t, h.RootDir(cgroups.Blkio))}:   true,
	}, parents)

	name := "container_1700000000000_0007_01_000003"
	own := cgroups.Ref{Dir: h.ContainerRelDir(name), Owned: true}
	f.send(t, fakeRead{ev: Event{Type: Mkdir, Parent: cpuKey, Name: name}})
	f.send(t, fakeRead{ev: Event{Type: Attach, Parent: cpuKey, Name: name, Pid: 4242}})
	require.Eventually(t, func() bool { c, ok := st.Get(name); return ok && len(c.Pids) == 1 }, time.Second, 5*time.Millisecond)
	c, _ := st.Get(name)
	assert.Equal(t, own, c.Cgroups[cgroups.CPU])
	assert.Equal(t, own, c.Cgroups[cgroups.CPUAcct])
	assert.Equal(t, []int{4242}, c.Pids)

	// The same kernfs id in another hierarchy (pids is 12) is not a parent.
	f.send(t, fakeRead{ev: Event{Type: Mkdir, Parent: ParentKey{HierarchyID: 12, ID: cpuKey.ID}, Name: "container_1700000000000_0007_01_000004"}})
	f.send(t, fakeRead{ev: Event{Type: Rmdir, Parent: cpuKey, Name: name}})
	require.Eventually(t, func() bool { _, ok := st.Get(name); return !ok }, time.Second, 5*time.Millisecond)
	assert.Zero(t, st.Len())
}

// TestHierarchyID: ids come from /proc/self/cgroup (co-mounted controllers
// share theirs), else /proc/cgroups; the unified hierarchy is 0; a
// controller in no v1 hierarchy is an error.
func TestHierarchyID(t *testing.T) {
	useSelfCgroup(t, distroSelfCgroup)
	for c, want := range map[cgroups.Controller]uint32{cgroups.CPU: 4, cgroups.CPUAcct: 4, cgroups.CPUSet: 6, cgroups.Memory: 10, cgroups.Blkio: 9} {
		got, err := hierarchyID(cgroups.Hierarchy{}, c)
		require.NoError(t, err, c)
		assert.Equal(t, want, got, c)
	}
	got, err := hierarchyID(cgroups.Hierarchy{V2: true}, cgroups.Memory)
	require.NoError(t, err)
	assert.Zero(t, got)

	useSelfCgroup(t, "0::/\n") // a v2-only host seen as v1
	_, err = hierarchyID(cgroups.Hierarchy{}, cgroups.CPU)
	assert.Error(t, err)
}
