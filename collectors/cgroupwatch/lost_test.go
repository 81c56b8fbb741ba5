package cgroupwatch

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// resyncs counts the resyncs the watcher asks for.
type resyncs struct{ n atomic.Int64 }

func (r *resyncs) request()   { r.n.Add(1) }
func (r *resyncs) get() int64 { return r.n.Load() }

// lostMetric reads koordlet_yarn_discovery_events_lost_total{source} from reg.
func lostMetric(t *testing.T, reg *prometheus.Registry, src Source) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "koordlet_yarn_discovery_events_lost_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == string(src) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// gate holds a watcher's reader before each read until opened.
type gate struct {
	ch     chan struct{}
	opened atomic.Bool
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) wait(Source) { <-g.ch }

func (g *gate) open() {
	if g.opened.CompareAndSwap(false, true) {
		close(g.ch)
	}
}

// startWatcher runs w until the test ends and waits for its first source.
func startWatcher(t *testing.T, w *Watcher) {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	w.Run(stop)
	require.Eventually(t, func() bool { return w.Active() != "" }, 5*time.Second, 5*time.Millisecond)
}

// TestRealKernelWatcherRingBufferDrops: while the reader is held, more
// events than the (one page) ring buffer holds are made below the YARN
// root. The kernel counts the drops; the watcher exports them and asks for
// a resync only once the reader has read what the ring held, so that the
// resync comes after every event older than the drops.
func TestRealKernelWatcherRingBufferDrops(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	top := kerneltest.UniqueRoot(t)
	yarnRoot := kerneltest.MakeCgroup(t, "cpu", top+"/hadoop-yarn")
	h := cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: top + "/hadoop-yarn"}
	reg := prometheus.NewRegistry()
	var rs resyncs
	g := newGate()
	t.Cleanup(g.open)
	w := New(Options{Store: store.New(), Force: SourceEBPF, ResyncInterval: time.Hour, Resync: rs.request, Registerer: reg,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true },
		ringSize:  os.Getpagesize(), tick: 10 * time.Millisecond, beforeRead: g.wait})
	startWatcher(t, w)
	if w.Active() != SourceEBPF {
		kerneltest.Skipf(t, "real-kernel test: eBPF is not available here (active: %s)", w.Active())
	}
	require.Eventually(t, func() bool { return rs.get() == 1 }, time.Second, 5*time.Millisecond, "the first watch asks for a resync")

	const n = 200 // a page holds ~40 events
	for i := 0; i < n; i++ {
		dir := filepath.Join(yarnRoot, fmt.Sprintf("c-%d", i))
		require.NoError(t, os.Mkdir(dir, 0o755))
		t.Cleanup(func() { _ = os.Remove(dir) })
	}
	require.Eventually(t, func() bool { return lostMetric(t, reg, SourceEBPF) >= n/2 }, 2*time.Second, 5*time.Millisecond,
		"the kernel's drops are exported")
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, int64(1), rs.get(), "no resync while the ring buffer still holds older events")

	g.open()
	require.Eventually(t, func() bool { return rs.get() == 2 }, 2*time.Second, 5*time.Millisecond,
		"one resync once the reader has read the ring buffer")
	require.Eventually(t, func() bool { return w.Wakeups()+int64(lostMetric(t, reg, SourceEBPF)) == n }, 2*time.Second, 5*time.Millisecond,
		"every event was either read or counted as lost")
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, int64(2), rs.get())
	assert.Equal(t, SourceEBPF, w.Active())
}

// TestInotifyOverflowAnsweredWithResync: while the reader is held, more
// events than the inotify queue holds are made below the YARN root; the
// overflow is counted and answered with a resync.
func TestInotifyOverflowAnsweredWithResync(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		kerneltest.Skipf(t, "no inotify queue limit to overflow: %v", err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	if limit > 1<<18 {
		kerneltest.Skipf(t, "the inotify queue holds %d events here; overflowing it takes too long", limit)
	}
	h := cgroups.Hierarchy{CgroupRoot: fastTempDir(t), ProcRoot: "/proc", Dir: "hadoop-yarn"}
	root := h.RootDir(cgroups.CPU)
	require.NoError(t, os.MkdirAll(root, 0o755))
	reg := prometheus.NewRegistry()
	var rs resyncs
	g := newGate()
	t.Cleanup(g.open)
	w := New(Options{Store: store.New(), Force: SourceInotify, ResyncInterval: time.Hour, Resync: rs.request, Registerer: reg,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }, tick: 10 * time.Millisecond, beforeRead: g.wait})
	startWatcher(t, w)
	require.Equal(t, SourceInotify, w.Active())
	require.Eventually(t, func() bool { return rs.get() == 1 }, time.Second, 5*time.Millisecond)

	dir := filepath.Join(root, "x")
	for i := 0; i < limit/2+8; i++ { // two events each
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, os.Remove(dir))
	}
	assert.Zero(t, lostMetric(t, reg, SourceInotify))
	g.open()
	require.Eventually(t, func() bool { return lostMetric(t, reg, SourceInotify) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return rs.get() == 2 }, time.Second, 5*time.Millisecond)
	assert.Equal(t, SourceInotify, w.Active())

	// Events keep flowing after the overflow.
	st := w.opts.Store
	name := "container_e17_1700000000000_0042_01_000002"
	require.NoError(t, os.Mkdir(filepath.Join(root, name), 0o755))
	require.Eventually(t, func() bool { _, ok := st.Get(name); return ok }, 2*time.Second, 5*time.Millisecond)
}

// fastTempDir returns a temp dir on tmpfs (/dev/shm) where there is one, so
// that the many mkdirs of an overflow are quick, else t.TempDir.
func fastTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/dev/shm", "koordlet-yarn-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// TestInotifyOverflowRecord: an IN_Q_OVERFLOW record (wd -1) is counted and
// answered with a resync; it changes nothing else.
func TestInotifyOverflowRecord(t *testing.T) {
	reg := prometheus.NewRegistry()
	var rs resyncs
	st := store.New()
	w := New(Options{Store: st, Resync: rs.request, Registerer: reg})
	rec := make([]byte, unix.SizeofInotifyEvent)               // wd, mask, cookie, len: no name
	binary.NativeEndian.PutUint32(rec[0:], uint32(0xffffffff)) // wd -1
	binary.NativeEndian.PutUint32(rec[4:], unix.IN_Q_OVERFLOW)
	w.handleInotify(rec, nil)
	assert.Equal(t, float64(1), lostMetric(t, reg, SourceInotify))
	assert.Equal(t, int64(1), rs.get())
	assert.Zero(t, st.Len())
}

// TestRecreatedRootWatchedAgainInotify: a YARN root removed (IN_IGNORED)
// and made again is watched again, with a resync for each change; the
// containers made in the new root reach the store.
func TestRecreatedRootWatchedAgainInotify(t *testing.T) {
	h := cgroups.Hierarchy{CgroupRoot: t.TempDir(), ProcRoot: "/proc", Dir: "hadoop-yarn"}
	root := h.RootDir(cgroups.CPU)
	require.NoError(t, os.MkdirAll(root, 0o755))
	st := store.New()
	var rs resyncs
	w := New(Options{Store: st, Force: SourceInotify, ResyncInterval: time.Hour, Resync: rs.request,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }, tick: 10 * time.Millisecond})
	startWatcher(t, w)
	require.Equal(t, SourceInotify, w.Active())
	require.Eventually(t, func() bool { return rs.get() == 1 }, time.Second, 5*time.Millisecond)

	require.NoError(t, os.Remove(root))
	require.Eventually(t, func() bool { return rs.get() == 2 }, time.Second, 5*time.Millisecond, "the root's removal asks for a resync")
	time.Sleep(50 * time.Millisecond) // polls find no root
	require.NoError(t, os.Mkdir(root, 0o755))
	require.Eventually(t, func() bool { return rs.get() == 3 }, time.Second, 5*time.Millisecond, "the new root is watched, with a resync")

	name := "container_e17_1700000000000_0042_01_000002"
	require.NoError(t, os.Mkdir(filepath.Join(root, name), 0o755))
	require.Eventually(t, func() bool { _, ok := st.Get(name); return ok }, 2*time.Second, 5*time.Millisecond)
	require.NoError(t, os.Remove(filepath.Join(root, name)))
	require.Eventually(t, func() bool { _, ok := st.Get(name); return !ok }, 2*time.Second, 5*time.Millisecond)
	assert.Equal(t, SourceInotify, w.Active())
}

// TestRealKernelRecreatedRootWatchedAgainEBPF: a YARN root removed and made
// again between two polls (a new kernfs id) is watched again with a resync,
// and the old id is no longer watched.
func TestRealKernelRecreatedRootWatchedAgainEBPF(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	top := kerneltest.UniqueRoot(t)
	kerneltest.MakeCgroup(t, "cpu", top)
	h := cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: top + "/hadoop-yarn"}
	root := h.RootDir(cgroups.CPU)
	require.NoError(t, os.Mkdir(root, 0o755))
	t.Cleanup(func() { kerneltest.RemoveCgroupTree(t, root) })
	st := store.New()
	var rs resyncs
	w := New(Options{Store: st, Force: SourceEBPF, ResyncInterval: time.Hour, Resync: rs.request,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }, tick: 10 * time.Millisecond})
	startWatcher(t, w)
	if w.Active() != SourceEBPF {
		kerneltest.Skipf(t, "real-kernel test: eBPF is not available here (active: %s)", w.Active())
	}
	require.Eventually(t, func() bool { return rs.get() == 1 }, time.Second, 5*time.Millisecond)
	old := inode(t, root)

	require.NoError(t, os.Remove(root))
	require.NoError(t, os.Mkdir(root, 0o755))
	require.NotEqual(t, old, inode(t, root))
	require.Eventually(t, func() bool { return rs.get() >= 3 }, 2*time.Second, 5*time.Millisecond,
		"the swap asks for a resync, and so does the new watch")
	w.mu.Lock()
	var keys []ParentKey
	for k := range w.roots {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	require.Len(t, keys, 1)
	assert.Equal(t, inode(t, root), keys[0].ID)

	name := "container_e17_1700000000000_0042_01_000002"
	dir := filepath.Join(root, name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.Eventually(t, func() bool { _, ok := st.Get(name); return ok }, 2*time.Second, 5*time.Millisecond)
	kerneltest.RemoveCgroupTree(t, dir)
	require.Eventually(t, func() bool { _, ok := st.Get(name); return !ok }, 2*time.Second, 5*time.Millisecond)
	assert.Equal(t, SourceEBPF, w.Active())
}
