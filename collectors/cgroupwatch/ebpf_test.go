package cgroupwatch

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func inode(t testing.TB, dir string) uint64 {
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(dir, &st))
	return st.Ino
}

// openEBPF loads the programs (ring buffer of ringSize bytes, 0: default)
// or skips where this kernel or these privileges cannot.
func openEBPF(t *testing.T, ringSize int) *EBPF {
	t.Helper()
	w, err := OpenEBPF(ringSize)
	if err != nil {
		kerneltest.Skipf(t, "real-kernel test: cannot load the BPF programs here: %v", err)
	}
	t.Cleanup(w.Close)
	return w
}

// readAll reads w's events into a channel until w is closed.
func readAll(w *EBPF) <-chan Event {
	events := make(chan Event, 1024)
	go func() {
		for {
			ev, err := w.Read()
			if err != nil {
				return
			}
			events <- ev
		}
	}()
	return events
}

// TestRealKernelEBPF loads the programs on this kernel, creates container
// cgroups below a watched YARN root with real processes, and checks the
// events; a cgroup created elsewhere (a pod) yields none.
func TestRealKernelEBPF(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	top := kerneltest.UniqueRoot(t)
	yarnRoot := kerneltest.MakeCgroup(t, "cpu", top+"/hadoop-yarn")
	pods := kerneltest.MakeCgroup(t, "cpu", top+"/pods")
	w := openEBPF(t, 0)
	hid, err := hierarchyID(cgroups.Hierarchy{}, cgroups.CPU)
	require.NoError(t, err)
	parent := ParentKey{HierarchyID: hid, ID: inode(t, yarnRoot)}
	require.NoError(t, w.AddParent(parent))
	events := readAll(w)

	require.NoError(t, os.Mkdir(filepath.Join(pods, "pod-1234"), 0o755)) // not watched
	name := "container_e17_1700000000000_0042_01_000002"
	dir := filepath.Join(yarnRoot, name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	p := kerneltest.Start(t, "exec sleep 3600", dir)
	require.NoError(t, p.Release())

	next := func() Event {
		select {
		case ev := <-events:
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return Event{}
	}
	ev := next()
	assert.Equal(t, Mkdir, ev.Type)
	assert.Equal(t, name, ev.Name)
	assert.Equal(t, inode(t, dir), ev.CgroupID)
	assert.Equal(t, parent, ev.Parent)
	ev = next()
	assert.Equal(t, Attach, ev.Type)
	assert.Equal(t, p.Pid(), ev.Pid)
	assert.Equal(t, name, ev.Name)

	kerneltest.RemoveCgroupTree(t, dir)
	for ev = next(); ev.Type != Rmdir; ev = next() {
	}
	assert.Equal(t, name, ev.Name)
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestRealKernelEBPFCountsDrops: with a one-page ring buffer nobody reads,
// the events that find no room are counted in the kernel, and Pending
// says what waits in the ring.
func TestRealKernelEBPFCountsDrops(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	top := kerneltest.UniqueRoot(t)
	yarnRoot := kerneltest.MakeCgroup(t, "cpu", top+"/hadoop-yarn")
	w := openEBPF(t, os.Getpagesize())
	hid, err := hierarchyID(cgroups.Hierarchy{}, cgroups.CPU)
	require.NoError(t, err)
	require.NoError(t, w.AddParent(ParentKey{HierarchyID: hid, ID: inode(t, yarnRoot)}))
	lost, err := w.Lost()
	require.NoError(t, err)
	require.Zero(t, lost)

	const n = 200 // a page holds ~40 events
	for i := 0; i < n; i++ {
		require.NoError(t, os.Mkdir(filepath.Join(yarnRoot, fmt.Sprintf("c-%d", i)), 0o755))
	}
	t.Cleanup(func() {
		for i := 0; i < n; i++ {
			_ = os.Remove(filepath.Join(yarnRoot, fmt.Sprintf("c-%d", i)))
		}
	})
	lost, err = w.Lost()
	require.NoError(t, err)
	record := (binary.Size(cgroupwatchEvent{}) + 8 + 7) &^ 7 // with its header, 8-byte aligned
	held := w.Pending() / record
	assert.Greater(t, held, 0)
	assert.Equal(t, uint64(n), lost+uint64(held), "every event is either in the ring or counted as lost")
	assert.Greater(t, lost, uint64(n/2))
}

// TestRealKernelEBPFUnified: on the unified (v2) hierarchy the parent's
// hierarchy id is 0, and a mkdir there is reported with it.
func TestRealKernelEBPFUnified(t *testing.T) {
	const unified = kerneltest.CgroupRoot + "/unified"
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "real-kernel test: needs root to create cgroups")
	}
	if _, err := os.Stat(filepath.Join(unified, "cgroup.procs")); err != nil {
		kerneltest.Skipf(t, "real-kernel test: no cgroup v2 hierarchy at %s: %v", unified, err)
	}
	top := kerneltest.UniqueRoot(t)
	yarnRoot := kerneltest.MakeCgroup(t, "unified", top+"/hadoop-yarn")
	w := openEBPF(t, 0)
	hid, err := hierarchyID(cgroups.Hierarchy{V2: true}, cgroups.CPU)
	require.NoError(t, err)
	require.Zero(t, hid)
	parent := ParentKey{HierarchyID: hid, ID: inode(t, yarnRoot)}
	require.NoError(t, w.AddParent(parent))
	events := readAll(w)

	name := "container_e17_1700000000000_0042_01_000002"
	dir := filepath.Join(yarnRoot, name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() { kerneltest.RemoveCgroupTree(t, dir) })
	select {
	case ev := <-events:
		assert.Equal(t, Mkdir, ev.Type)
		assert.Equal(t, name, ev.Name)
		assert.Equal(t, parent, ev.Parent)
	case <-time.After(5 * time.Second):
		t.Fatal("no event from the unified hierarchy")
	}
}

// TestRealKernelWatcherUnified: the watcher on the unified hierarchy keys
// its root with hierarchy id 0, and a container's mkdir and process reach
// the store, owned in every controller its YARN root enables.
func TestRealKernelWatcherUnified(t *testing.T) {
	const unified = kerneltest.CgroupRoot + "/unified"
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "real-kernel test: needs root to create cgroups")
	}
	if _, err := os.Stat(filepath.Join(unified, "cgroup.procs")); err != nil {
		kerneltest.Skipf(t, "real-kernel test: no cgroup v2 hierarchy at %s: %v", unified, err)
	}
	top := kerneltest.UniqueRoot(t)
	yarnRoot := kerneltest.MakeCgroup(t, "unified", top+"/hadoop-yarn")
	h := cgroups.Hierarchy{CgroupRoot: unified, ProcRoot: "/proc", V2: true, Dir: top + "/hadoop-yarn"}
	st := store.New()
	w := New(Options{Store: st, Force: SourceEBPF, ResyncInterval: time.Hour, Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }})
	startWatcher(t, w)
	if w.Active() != SourceEBPF {
		kerneltest.Skipf(t, "real-kernel test: eBPF is not available here (active: %s)", w.Active())
	}
	name := "container_e17_1700000000000_0042_01_000002"
	dir := filepath.Join(yarnRoot, name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() { kerneltest.RemoveCgroupTree(t, dir) })
	p := kerneltest.Start(t, "exec sleep 3600", dir)
	require.NoError(t, p.Release())
	require.Eventually(t, func() bool { c, ok := st.Get(name); return ok && len(c.Pids) == 1 }, 2*time.Second, 5*time.Millisecond)
	c, _ := st.Get(name)
	assert.Equal(t, []int{p.Pid()}, c.Pids)
	own := cgroups.Ref{Dir: h.ContainerRelDir(name), Owned: true}
	assert.Equal(t, own, c.Cgroups[cgroups.CPU], "membership and the base cpu.stat are the container's own")
	assert.Equal(t, own, c.Cgroups[cgroups.CPUAcct])
	// The other controllers are the container's own only when the YARN root
	// enables them for its children; this hybrid host binds every
	// controller to cgroup v1, so its unified hierarchy enables none.
	enabled, err := os.ReadFile(filepath.Join(yarnRoot, "cgroup.subtree_control"))
	require.NoError(t, err)
	for ctrl, v2name := range map[cgroups.Controller]string{cgroups.Memory: "memory", cgroups.CPUSet: "cpuset", cgroups.Blkio: "io"} {
		assert.Equal(t, strings.Contains(string(enabled), v2name), c.Cgroups[ctrl].Owned, ctrl.String())
	}
}
