package cgroupwatch

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Source is a way of learning of container cgroups.
type Source string

// Sources, best first.
const (
	SourceEBPF    Source = "ebpf"
	SourceInotify Source = "inotify"
	SourcePolling Source = "polling"
)

// Options configure the watcher.
type Options struct {
	Store *store.Store
	// Hierarchy returns the YARN hierarchy once known.
	Hierarchy func() (cgroups.Hierarchy, bool)
	// Force, when set, skips the better sources (tests and measurements).
	Force Source
	// ResyncInterval is the informer's resync, the polling fallback.
	ResyncInterval time.Duration
	// Now is time.Now; tests may pin it.
	Now func() time.Time
}

// Watcher feeds container cgroup events to the store from the best source
// this node has: eBPF, then inotify, then none (the informer's resync).
type Watcher struct {
	opts   Options
	h      cgroups.Hierarchy
	mu     sync.Mutex
	active Source
	// parents maps a watched YARN root (kernfs id or inotify wd) to its controller.
	parents map[uint64]cgroups.Controller
	watched map[cgroups.Controller]bool
	ebpf    *EBPF
	inotify int      // fd, -1 when unused
	inoFile *os.File // the fd in Go's poller, so that Close ends a blocked Read
	// wakeups counts the events user space received.
	wakeups atomic.Int64
}

// Wakeups returns how many events user space has received.
func (w *Watcher) Wakeups() int64 { return w.wakeups.Load() }

// New returns a watcher.
func New(opts Options) *Watcher {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Watcher{opts: opts, parents: map[uint64]cgroups.Controller{}, watched: map[cgroups.Controller]bool{}, inotify: -1}
}

// Name names the loop.
func (w *Watcher) Name() string { return "YARN container watch" }

// Enabled is always true: without eBPF or inotify it says so and leaves
// discovery to the resync.
func (w *Watcher) Enabled() bool { return true }

// Active returns the source in use ("" before Run decided).
func (w *Watcher) Active() Source {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active
}

// Run picks the source, logs one line saying which and why, and feeds the
// store until stopCh closes. It returns at once.
func (w *Watcher) Run(stopCh <-chan struct{}) {
	go w.run(stopCh)
}

func (w *Watcher) controllers() []cgroups.Controller {
	if w.h.V2 {
		return []cgroups.Controller{cgroups.CPU}
	}
	return []cgroups.Controller{cgroups.CPU, cgroups.CPUAcct, cgroups.CPUSet, cgroups.Memory, cgroups.Blkio}
}

func (w *Watcher) run(stopCh <-chan struct{}) {
	for {
		h, ok := w.opts.Hierarchy()
		if ok {
			w.h = h
			break
		}
		select {
		case <-stopCh:
			return
		case <-time.After(time.Second):
		}
	}
	source, why := w.open()
	w.mu.Lock()
	w.active = source
	w.mu.Unlock()
	switch source {
	case SourceEBPF:
		klog.Infof("yarn: container discovery by eBPF (BTF tracepoints cgroup_mkdir/attach_task/rmdir) on %s", w.h)
		go w.readEBPF()
	case SourceInotify:
		klog.Infof("yarn: container discovery by inotify on %s (%s)", w.h, why)
		go w.readInotify(stopCh)
	default:
		klog.Infof("yarn: container discovery by polling every %v (%s)", w.opts.ResyncInterval, why)
		return
	}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-stopCh:
			w.close()
			return
		case <-ticker.C:
			w.watchRoots() // YARN roots created after start
		}
	}
}

// open tries the sources in order.
func (w *Watcher) open() (Source, string) {
	var why []string
	if w.opts.Force == "" || w.opts.Force == SourceEBPF {
		if !features.Enabled(features.YARNEBPFDiscovery) {
			why = append(why, "eBPF off by feature gate "+string(features.YARNEBPFDiscovery))
		} else if e, err := OpenEBPF(); err != nil {
			why = append(why, "eBPF unavailable: "+err.Error())
		} else {
			w.ebpf = e
			w.watchRoots()
			return SourceEBPF, ""
		}
	}
	if w.opts.Force == "" || w.opts.Force == SourceInotify {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			why = append(why, "inotify unavailable: "+err.Error())
		} else {
			w.inotify = fd
			w.inoFile = os.NewFile(uintptr(fd), "inotify")
			w.watchRoots()
			return SourceInotify, strings.Join(why, "; ")
		}
	}
	if w.opts.Force == SourcePolling {
		why = append(why, "forced")
	}
	return SourcePolling, strings.Join(why, "; ")
}

// watchRoots starts watching the YARN root of every controller where it
// exists and is not watched yet.
func (w *Watcher) watchRoots() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ctrl := range w.controllers() {
		if w.watched[ctrl] {
			continue
		}
		dir := w.h.RootDir(ctrl)
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			continue
		}
		switch {
		case w.ebpf != nil:
			if err := w.ebpf.AddParent(st.Ino); err != nil {
				klog.Warningf("yarn: watch %s: %v", dir, err)
				continue
			}
			w.parents[st.Ino] = ctrl
		case w.inotify >= 0:
			wd, err := unix.InotifyAddWatch(w.inotify, dir, unix.IN_CREATE|unix.IN_DELETE|unix.IN_ONLYDIR)
			if err != nil {
				klog.Warningf("yarn: inotify watch %s: %v", dir, err)
				continue
			}
			w.parents[uint64(wd)] = ctrl
		}
		w.watched[ctrl] = true
		klog.V(2).Infof("yarn: watching %s for container cgroups", dir)
	}
}

func (w *Watcher) controllerOf(parent uint64) (cgroups.Controller, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.parents[parent]
	if ok && w.h.V2 {
		return store.AllControllers, true
	}
	return c, ok
}

// observe turns a cgroup event into a store event for canonical container names.
func (w *Watcher) observe(t store.CgroupEventType, parent uint64, name string, pid int) {
	if !yarn.IsCanonical(name) {
		return
	}
	ctrl, ok := w.controllerOf(parent)
	if !ok {
		return
	}
	id, _ := yarn.ParseContainerID(name)
	w.opts.Store.Observe(store.CgroupEvent{Type: t, Name: name, ID: id, Controller: ctrl, Dir: w.h.ContainerRelDir(name), Pid: pid}, w.opts.Now())
}

func (w *Watcher) readEBPF() {
	for {
		ev, err := w.ebpf.Read()
		if err != nil {
			return // closed
		}
		w.wakeups.Add(1)
		switch ev.Type {
		case Mkdir:
			w.observe(store.CgroupCreated, ev.ParentID, ev.Name, 0)
		case Attach:
			w.observe(store.CgroupAttached, ev.ParentID, ev.Name, ev.Pid)
		case Rmdir:
			w.observe(store.CgroupRemoved, ev.ParentID, ev.Name, 0)
		}
	}
}

func (w *Watcher) readInotify(stopCh <-chan struct{}) {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.inoFile.Read(buf)
		if err != nil {
			return // closed
		}
		w.wakeups.Add(1)
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(raw.Len)]
			name := strings.TrimRight(string(nameBytes), "\x00")
			off += unix.SizeofInotifyEvent + int(raw.Len)
			switch {
			case raw.Mask&unix.IN_CREATE != 0:
				w.observe(store.CgroupCreated, uint64(raw.Wd), name, 0)
				go w.firstPids(uint64(raw.Wd), name, stopCh)
			case raw.Mask&unix.IN_DELETE != 0:
				w.observe(store.CgroupRemoved, uint64(raw.Wd), name, 0)
			}
		}
	}
}

// firstPids polls a new container's cgroup.procs briefly (inotify reports
// the mkdir only) so that its first processes reach the store quickly.
func (w *Watcher) firstPids(parent uint64, name string, stopCh <-chan struct{}) {
	ctrl, ok := w.controllerOf(parent)
	if !ok || !yarn.IsCanonical(name) {
		return
	}
	c := ctrl
	if c == store.AllControllers {
		c = cgroups.CPU
	}
	procs := filepath.Join(w.h.AbsDir(c, w.h.ContainerRelDir(name)), "cgroup.procs")
	for i := 0; i < 200; i++ {
		b, err := os.ReadFile(procs)
		if err != nil {
			return // gone
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			for _, s := range f {
				if pid, err := strconv.Atoi(s); err == nil {
					w.observe(store.CgroupAttached, parent, name, pid)
				}
			}
			return
		}
		select {
		case <-stopCh:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (w *Watcher) close() {
	if w.ebpf != nil {
		w.ebpf.Close()
	}
	if w.inoFile != nil {
		_ = w.inoFile.Close()
	}
}
