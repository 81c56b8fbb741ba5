package cgroupwatch

import (
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// inotifySource is an inotify instance (*inotifyFD).
type inotifySource interface {
	// Read blocks for events; it fails once Close was called.
	Read(buf []byte) (int, error)
	// AddWatch watches dir for created and removed subdirectories and
	// returns the watch descriptor (the same one for the same directory).
	AddWatch(dir string) (int, error)
	RemoveWatch(wd int) error
	Close() error
}

// inotifyMask: children made and removed. The kernel adds IN_IGNORED when
// a watch ends (its directory removed) and IN_Q_OVERFLOW when the queue
// overflowed.
const inotifyMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_ONLYDIR

type inotifyFD struct {
	f *os.File // the fd in Go's poller, so that Close ends a blocked Read
}

func openInotify() (inotifySource, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return &inotifyFD{f: os.NewFile(uintptr(fd), "inotify")}, nil
}

func (i *inotifyFD) Read(buf []byte) (int, error) { return i.f.Read(buf) }

func (i *inotifyFD) AddWatch(dir string) (wd int, err error) {
	rc, err := i.f.SyscallConn()
	if err != nil {
		return -1, err
	}
	if cerr := rc.Control(func(fd uintptr) { wd, err = unix.InotifyAddWatch(int(fd), dir, inotifyMask) }); cerr != nil {
		return -1, cerr
	}
	return wd, err
}

func (i *inotifyFD) RemoveWatch(wd int) (err error) {
	rc, err := i.f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := rc.Control(func(fd uintptr) { _, err = unix.InotifyRmWatch(int(fd), uint32(wd)) }); cerr != nil {
		return cerr
	}
	return err
}

func (i *inotifyFD) Close() error { return i.f.Close() }

func (w *Watcher) readInotify(in inotifySource, gen int, stopCh <-chan struct{}) {
	buf := make([]byte, 64<<10)
	for {
		if w.opts.beforeRead != nil {
			w.opts.beforeRead(SourceInotify)
		}
		n, err := in.Read(buf)
		if err != nil {
			w.fail(gen, SourceInotify, err, stopCh)
			return
		}
		w.wakeups.Add(1)
		w.handleInotify(buf[:n], stopCh)
	}
}

// handleInotify applies the events in b, whole inotify records as read.
func (w *Watcher) handleInotify(b []byte, stopCh <-chan struct{}) {
	for off := 0; off+unix.SizeofInotifyEvent <= len(b); {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&b[off]))
		end := off + unix.SizeofInotifyEvent + int(raw.Len)
		if end > len(b) {
			return // never: the kernel returns whole records
		}
		name := strings.TrimRight(string(b[off+unix.SizeofInotifyEvent:end]), "\x00")
		off = end
		key := ParentKey{ID: uint64(uint32(raw.Wd))}
		switch {
		case raw.Mask&unix.IN_Q_OVERFLOW != 0:
			// The queue is read in order: every event before the overflow
			// was applied, so a resync now covers the lost ones.
			w.metrics.addLost(SourceInotify, 1)
			w.lossLog.logf(w.opts.Now(), "yarn: the inotify queue overflowed, container cgroup events were lost; resync requested")
			w.requestResync()
		case raw.Mask&unix.IN_IGNORED != 0:
			w.rootGone(key)
		case raw.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
			// A directory renamed into the root (cgroup v1 allows a rename
			// within a parent) is a new container cgroup as much as a mkdir.
			w.observe(store.CgroupCreated, key, name, 0)
			go w.firstPids(key, name, stopCh)
		case raw.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
			w.observe(store.CgroupRemoved, key, name, 0)
		}
	}
}

// rootGone forgets a root whose inotify watch the kernel ended (its
// directory was removed): the poll watches it again once it exists, and a
// resync catches up.
func (w *Watcher) rootGone(key ParentKey) {
	w.mu.Lock()
	r := w.roots[key]
	if r != nil {
		w.forgetLocked(r)
	}
	w.mu.Unlock()
	if r != nil {
		klog.Infof("yarn: YARN root %s was removed; watching it again once it exists", r.dir)
		w.requestResync()
	}
}
