package cgroupwatch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// fakeEBPF is an eBPF source whose reads the test feeds.
type fakeEBPF struct {
	reads  chan fakeRead
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	parents map[ParentKey]bool
}

type fakeRead struct {
	ev  Event
	err error
}

func newFakeEBPF() *fakeEBPF {
	return &fakeEBPF{reads: make(chan fakeRead), closed: make(chan struct{}), parents: map[ParentKey]bool{}}
}

func (f *fakeEBPF) Read() (Event, error) {
	select {
	case r := <-f.reads:
		return r.ev, r.err
	case <-f.closed:
		return Event{}, fmt.Errorf("fake ring buffer: %w", os.ErrClosed)
	}
}

func (f *fakeEBPF) AddParent(k ParentKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parents[k] = true
	return nil
}

func (f *fakeEBPF) RemoveParent(k ParentKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parents, k)
	return nil
}

func (f *fakeEBPF) Lost() (uint64, error) { return 0, nil }
func (f *fakeEBPF) Pending() int          { return 0 }
func (f *fakeEBPF) Close()                { f.once.Do(func() { close(f.closed) }) }

func (f *fakeEBPF) isClosed() bool {
	select {
	case <-f.closed:
		return true
	default:
		return false
	}
}

// parent returns the one watched parent.
func (f *fakeEBPF) parent(t *testing.T) ParentKey {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.parents, 1)
	for k := range f.parents {
		return k
	}
	return ParentKey{}
}

// send hands the reader one read, failing the test if it does not take it.
func (f *fakeEBPF) send(t *testing.T, r fakeRead) {
	t.Helper()
	select {
	case f.reads <- r:
	case <-time.After(2 * time.Second):
		t.Fatal("the eBPF reader did not read")
	}
}

// fakeEBPFs hands out fake eBPF sources, one per open.
type fakeEBPFs struct {
	mu     sync.Mutex
	opened []*fakeEBPF
}

func (fs *fakeEBPFs) open(int) (ebpfSource, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := newFakeEBPF()
	fs.opened = append(fs.opened, f)
	return f, nil
}

func (fs *fakeEBPFs) count() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.opened)
}

func (fs *fakeEBPFs) last() *fakeEBPF {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.opened[len(fs.opened)-1]
}

// syncBuffer is a bytes.Buffer safe for klog's writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// count returns the lines holding s.
func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.b.String(), s)
}

// captureLog sends klog's output to a buffer until the test ends (the INFO
// stream, which has every line once).
func captureLog(t *testing.T) *syncBuffer {
	buf := &syncBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	klog.SetOutputBySeverity("INFO", buf)
	t.Cleanup(func() {
		klog.Flush()
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	return buf
}

// fakeRoot returns a hierarchy on a temp dir with the YARN root in cpu.
func fakeRoot(t *testing.T) cgroups.Hierarchy {
	h := cgroups.Hierarchy{CgroupRoot: t.TempDir(), ProcRoot: "/proc", Dir: "hadoop-yarn"}
	require.NoError(t, os.MkdirAll(h.RootDir(cgroups.CPU), 0o755))
	return h
}

const testContainer = "container_e17_1700000000000_0042_01_000002"

// TestEBPFReaderErrorRestartsSource: a ring buffer that fails after the
// source ran a while is closed and eBPF opened again, with one log line and
// a resync; events flow from the new one and /yarn/containers' source is
// still eBPF.
func TestEBPFReaderErrorRestartsSource(t *testing.T) {
	log := captureLog(t)
	h := fakeRoot(t)
	st := store.New()
	var rs resyncs
	var fakes fakeEBPFs
	w := New(Options{Store: st, ResyncInterval: time.Hour, Resync: rs.request,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true },
		openEBPF:  fakes.open, restartAfter: time.Nanosecond})
	startWatcher(t, w)
	require.Equal(t, SourceEBPF, w.Active())
	first := fakes.last()
	require.Eventually(t, func() bool { return rs.get() == 1 }, time.Second, 5*time.Millisecond)

	first.send(t, fakeRead{err: errors.New("epoll wait: bad file descriptor")})
	require.Eventually(t, func() bool { return fakes.count() == 2 }, 2*time.Second, 5*time.Millisecond)
	second := fakes.last()
	assert.True(t, first.isClosed())
	assert.Equal(t, SourceEBPF, w.Active())
	require.Eventually(t, func() bool { return rs.get() >= 2 }, time.Second, 5*time.Millisecond)

	second.send(t, fakeRead{ev: Event{Type: Mkdir, Parent: second.parent(t), Name: testContainer}})
	require.Eventually(t, func() bool { _, ok := st.Get(testContainer); return ok }, time.Second, 5*time.Millisecond)
	klog.Flush()
	assert.Equal(t, 1, log.count("container discovery by ebpf failed"), "one log line")
	assert.Equal(t, 1, log.count("restarted it"))
}

// TestEBPFReaderErrorFallsBack: eBPF failing soon after it started is not
// restarted: the watcher falls back to inotify, says so in one line, asks
// for a resync, and reports inotify as its source.
func TestEBPFReaderErrorFallsBack(t *testing.T) {
	log := captureLog(t)
	h := fakeRoot(t)
	st := store.New()
	var rs resyncs
	var fakes fakeEBPFs
	w := New(Options{Store: st, ResyncInterval: time.Hour, Resync: rs.request,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true },
		openEBPF:  fakes.open, restartAfter: time.Hour, tick: 10 * time.Millisecond})
	startWatcher(t, w)
	require.Equal(t, SourceEBPF, w.Active())
	require.Eventually(t, func() bool { return rs.get() == 1 }, time.Second, 5*time.Millisecond)

	fakes.last().send(t, fakeRead{err: errors.New("epoll wait: bad file descriptor")})
	require.Eventually(t, func() bool { return w.Active() == SourceInotify }, 2*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, fakes.count(), "not restarted")
	assert.True(t, fakes.last().isClosed())
	require.Eventually(t, func() bool { return rs.get() >= 2 }, time.Second, 5*time.Millisecond)

	require.NoError(t, os.Mkdir(filepath.Join(h.RootDir(cgroups.CPU), testContainer), 0o755))
	require.Eventually(t, func() bool { _, ok := st.Get(testContainer); return ok }, 2*time.Second, 5*time.Millisecond)
	klog.Flush()
	assert.Equal(t, 1, log.count("container discovery by ebpf failed"), "one log line")
	assert.Equal(t, 1, log.count("fell back to inotify"))
}

// failingInotify is the real inotify whose first Read fails.
type failingInotify struct {
	inotifySource
	failed atomic.Bool
}

func (f *failingInotify) Read(buf []byte) (int, error) {
	if f.failed.CompareAndSwap(false, true) {
		return 0, errors.New("read inotify: input/output error")
	}
	return f.inotifySource.Read(buf)
}

// TestInotifyReaderErrorRestartsOrFallsBack: an inotify reader error
// restarts inotify when it had run a while, else (nothing below it) leaves
// discovery to polling; either way one log line, a resync, and the source
// reported is the one running.
func TestInotifyReaderErrorRestartsOrFallsBack(t *testing.T) {
	for _, tc := range []struct {
		restartAfter time.Duration
		want         Source
		line         string
	}{
		{time.Nanosecond, SourceInotify, "restarted it"},
		{time.Hour, SourcePolling, "falling back to polling"},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			log := captureLog(t)
			h := fakeRoot(t)
			st := store.New()
			var rs resyncs
			var opens atomic.Int64
			w := New(Options{Store: st, Force: SourceInotify, ResyncInterval: time.Hour, Resync: rs.request,
				Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }, restartAfter: tc.restartAfter,
				openInotify: func() (inotifySource, error) {
					in, err := openInotify()
					if err != nil {
						return nil, err
					}
					if opens.Add(1) == 1 {
						return &failingInotify{inotifySource: in}, nil
					}
					return in, nil
				}})
			startWatcher(t, w)
			require.Eventually(t, func() bool { return log.count("container discovery by inotify failed") == 1 }, 2*time.Second, 5*time.Millisecond)
			require.Eventually(t, func() bool { return w.Active() == tc.want }, 2*time.Second, 5*time.Millisecond)
			require.Eventually(t, func() bool { return rs.get() >= 2 }, time.Second, 5*time.Millisecond)
			assert.Equal(t, 1, log.count(tc.line))
			if tc.want == SourceInotify {
				require.NoError(t, os.Mkdir(filepath.Join(h.RootDir(cgroups.CPU), testContainer), 0o755))
				require.Eventually(t, func() bool { _, ok := st.Get(testContainer); return ok }, 2*time.Second, 5*time.Millisecond)
			}
		})
	}
}

// TestEBPFDecodeErrors: a record that does not decode is counted as lost
// and answered with a resync, and the reader goes on; maxDecodeErrors in a
// row make the source count as failed (here: fall back to inotify).
func TestEBPFDecodeErrors(t *testing.T) {
	h := fakeRoot(t)
	st := store.New()
	reg := prometheus.NewRegistry()
	var rs resyncs
	var fakes fakeEBPFs
	w := New(Options{Store: st, ResyncInterval: time.Hour, Resync: rs.request, Registerer: reg,
		Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true },
		openEBPF:  fakes.open, restartAfter: time.Hour})
	startWatcher(t, w)
	require.Equal(t, SourceEBPF, w.Active())
	f := fakes.last()
	require.Eventually(t, func() bool { return rs.get() == 1 }, time.Second, 5*time.Millisecond)

	_, derr := decodeEvent([]byte{1, 2, 3})
	var de *DecodeError
	require.ErrorAs(t, derr, &de)
	f.send(t, fakeRead{err: derr})
	f.send(t, fakeRead{ev: Event{Type: Mkdir, Parent: f.parent(t), Name: testContainer}})
	require.Eventually(t, func() bool { _, ok := st.Get(testContainer); return ok }, time.Second, 5*time.Millisecond)
	assert.Equal(t, float64(1), lostMetric(t, reg, SourceEBPF))
	assert.Equal(t, int64(2), rs.get())
	assert.Equal(t, SourceEBPF, w.Active())

	for i := 0; i < maxDecodeErrors; i++ {
		f.send(t, fakeRead{err: derr})
	}
	require.Eventually(t, func() bool { return w.Active() == SourceInotify }, 2*time.Second, 5*time.Millisecond)
	assert.True(t, f.isClosed())
	// koordlet_yarn_discovery_source follows the source.
	require.Eventually(t, func() bool { return sourceMetric(t, reg, SourceInotify) == 1 }, time.Second, 5*time.Millisecond)
	assert.Equal(t, float64(0), sourceMetric(t, reg, SourceEBPF))
	assert.Equal(t, float64(0), sourceMetric(t, reg, SourcePolling))
}

// sourceMetric reads koordlet_yarn_discovery_source{source} from reg.
func sourceMetric(t *testing.T, reg *prometheus.Registry, src Source) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "koordlet_yarn_discovery_source" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == string(src) {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// TestDecodeEvent: records of the wrong size or type are decode errors.
func TestDecodeEvent(t *testing.T) {
	for _, b := range [][]byte{nil, {1, 2, 3}, make([]byte, 95)} {
		_, err := decodeEvent(b)
		var de *DecodeError
		assert.ErrorAs(t, err, &de, "%d bytes", len(b))
	}
	rec := make([]byte, 96)
	rec[0] = 9 // no such type
	_, err := decodeEvent(rec)
	var de *DecodeError
	assert.ErrorAs(t, err, &de)

	rec[0] = byte(Rmdir)
	rec[8] = 3              // hierarchy id
	rec[16], rec[24] = 7, 5 // cgroup id, parent id
	copy(rec[32:], "container_1700000000000_0001_01_000001\x00")
	ev, err := decodeEvent(rec)
	require.NoError(t, err)
	assert.Equal(t, Event{Type: Rmdir, Parent: ParentKey{HierarchyID: 3, ID: 5}, CgroupID: 7, Name: "container_1700000000000_0001_01_000001"}, ev)
}
