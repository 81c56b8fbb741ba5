package cgroupwatch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	// Force, when set, skips the better sources (tests and measurements);
	// a forced source that fails falls back to polling.
	Force Source
	// ResyncInterval is the informer's resync, the polling fallback.
	ResyncInterval time.Duration
	// Resync, when set, asks the store's owner for a full resync soon; it
	// must not block. The watcher calls it whenever events may have been
	// missed: the kernel dropped events, the inotify queue overflowed, a
	// YARN root is watched (again), the source was restarted or replaced.
	// Without it the periodic resync catches up.
	Resync func()
	// Registerer, when set, receives the watcher's metrics
	// (koordlet_yarn_discovery_events_lost_total).
	Registerer prometheus.Registerer
	// Now is time.Now; tests may pin it.
	Now func() time.Time

	// Knobs for tests; zero means the default.
	ringSize     int           // eBPF ring buffer bytes
	tick         time.Duration // how often roots and the drop counter are checked
	restartAfter time.Duration // a source that failed after running this long is restarted, else replaced
	openEBPF     func(ringSize int) (ebpfSource, error)
	openInotify  func() (inotifySource, error)
	beforeRead   func(Source) // called by the readers before each read
}

// ebpfSource is the loaded eBPF watch (*EBPF).
type ebpfSource interface {
	Read() (Event, error)
	AddParent(ParentKey) error
	RemoveParent(ParentKey) error
	Lost() (uint64, error)
	Pending() int
	Close()
}

// Defaults of the test knobs.
const (
	defaultTick         = time.Second
	defaultRestartAfter = time.Minute
	// maxDecodeErrors in a row make the eBPF source count as failed.
	maxDecodeErrors = 16
	// lossLogInterval bounds the log lines about lost events.
	lossLogInterval = time.Minute
)

// root is a watched YARN root directory. One directory may serve several
// controllers: distributions co-mount cpu,cpuacct (cpu and cpuacct are
// symlinks to it), and on cgroup v2 one directory serves them all.
type root struct {
	// key is the eBPF parent (hierarchy id, kernfs id) or, with inotify,
	// the watch descriptor in ID.
	key ParentKey
	// ino is the directory's inode when it was watched: a YARN root removed
	// and made again is a new directory, to be watched anew.
	ino uint64
	dir string
	// ctrls are the controllers mounted there, in Controller order.
	ctrls []cgroups.Controller
}

type failure struct {
	gen int
	src Source
	err error
}

// Watcher feeds container cgroup events to the store from the best source
// this node has: eBPF, then inotify, then none (the informer's resync).
type Watcher struct {
	opts    Options
	h       cgroups.Hierarchy
	metrics *metrics

	mu     sync.Mutex
	active Source
	// gen numbers the running source; a reader whose gen is stale was
	// closed by the watcher and ends quietly.
	gen       int
	ebpf      ebpfSource
	inotify   inotifySource
	startedAt time.Time
	roots     map[ParentKey]*root
	byCtrl    map[cgroups.Controller]*root
	lostSeen  uint64
	hidWarned map[cgroups.Controller]bool

	// drainResync asks the eBPF reader to request a resync once it has read
	// what was in the ring buffer when drops were seen (so that the resync
	// comes after every event older than the drops).
	drainResync atomic.Bool
	lossLog     lossLog

	failed chan failure
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
	if opts.tick == 0 {
		opts.tick = defaultTick
	}
	if opts.restartAfter == 0 {
		opts.restartAfter = defaultRestartAfter
	}
	if opts.openEBPF == nil {
		hierarchy := opts.Hierarchy
		opts.openEBPF = func(ringSize int) (ebpfSource, error) {
			if hierarchy != nil {
				if h, ok := hierarchy(); ok {
					if err := onCgroupFS(h); err != nil {
						return nil, err
					}
				}
			}
			e, err := OpenEBPF(ringSize)
			if err != nil {
				return nil, err
			}
			return e, nil
		}
	}
	if opts.openInotify == nil {
		opts.openInotify = openInotify
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		klog.Warningf("yarn: register the discovery metrics: %v", err)
	}
	return &Watcher{opts: opts, metrics: m, roots: map[ParentKey]*root{}, byCtrl: map[cgroups.Controller]*root{},
		hidWarned: map[cgroups.Controller]bool{}, failed: make(chan failure, 1)}
}

// Name names the loop.
func (w *Watcher) Name() string { return "YARN container watch" }

// Enabled is always true: without eBPF or inotify it says so and leaves
// discovery to the resync.
func (w *Watcher) Enabled() bool { return true }

// Active returns the source running now ("" before Run decided): after a
// failure it is the source that replaced the failed one, polling when
// none could.
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

// candidates lists the sources to try, best first.
func (w *Watcher) candidates() []Source {
	switch w.opts.Force {
	case "":
		return []Source{SourceEBPF, SourceInotify}
	case SourceEBPF, SourceInotify:
		return []Source{w.opts.Force}
	}
	return nil
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
	source, why := w.startFirst(w.candidates(), stopCh)
	switch source {
	case SourceEBPF:
		klog.Infof("yarn: container discovery by eBPF (BTF tracepoints cgroup_mkdir/attach_task/rmdir) on %s", w.h)
	case SourceInotify:
		klog.Infof("yarn: container discovery by inotify on %s%s", w.h, parenthesized(why))
	default:
		klog.Infof("yarn: container discovery by polling every %v%s", w.opts.ResyncInterval, parenthesized(why))
		return
	}
	ticker := time.NewTicker(w.opts.tick)
	defer ticker.Stop()
	for {
		select {
		case <-stopCh:
			w.closeSource()
			return
		case f := <-w.failed:
			if !w.replace(f, stopCh) {
				return
			}
		case <-ticker.C:
			if err := w.poll(); err != nil {
				if !w.replace(failure{gen: w.currentGen(), src: w.Active(), err: err}, stopCh) {
					return
				}
			}
		}
	}
}

// parenthesized returns " (a; b)", or "" for no reasons.
func parenthesized(why []string) string {
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
}

func (w *Watcher) currentGen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// startFirst starts the first of srcs that opens; polling when none does.
// why says why the better ones did not.
func (w *Watcher) startFirst(srcs []Source, stopCh <-chan struct{}) (Source, []string) {
	var why []string
	for _, s := range srcs {
		err := w.start(s, stopCh)
		if err == nil {
			return s, why
		}
		why = append(why, err.Error())
	}
	if w.opts.Force == SourcePolling {
		why = append(why, "forced")
	}
	w.mu.Lock()
	w.active = SourcePolling
	w.metrics.setSource(SourcePolling)
	w.mu.Unlock()
	return SourcePolling, why
}

// start opens source s, watches the YARN roots that exist and starts its
// reader.
func (w *Watcher) start(s Source, stopCh <-chan struct{}) error {
	switch s {
	case SourceEBPF:
		if !features.Enabled(features.YARNEBPFDiscovery) {
			return fmt.Errorf("eBPF off by feature gate %s", features.YARNEBPFDiscovery)
		}
		e, err := w.opts.openEBPF(w.opts.ringSize)
		if err != nil {
			return fmt.Errorf("eBPF unavailable: %w", err)
		}
		gen := w.install(s, e, nil)
		if err := w.watchRoots(); err != nil {
			w.closeSource()
			return fmt.Errorf("eBPF unavailable: %w", err)
		}
		go w.readEBPF(e, gen, stopCh)
	case SourceInotify:
		in, err := w.opts.openInotify()
		if err != nil {
			return fmt.Errorf("inotify unavailable: %w", err)
		}
		gen := w.install(s, nil, in)
		if err := w.watchRoots(); err != nil {
			w.closeSource()
			return fmt.Errorf("inotify unavailable: %w", err)
		}
		go w.readInotify(in, gen, stopCh)
	default:
		return fmt.Errorf("no source %q", s)
	}
	return nil
}

func (w *Watcher) install(s Source, e ebpfSource, in inotifySource) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	w.active, w.ebpf, w.inotify = s, e, in
	w.metrics.setSource(s)
	w.startedAt = w.opts.Now()
	w.lostSeen = 0
	w.drainResync.Store(false)
	return w.gen
}

// closeSource stops the running source; its reader ends quietly.
func (w *Watcher) closeSource() {
	w.mu.Lock()
	w.gen++
	e, in := w.ebpf, w.inotify
	w.ebpf, w.inotify = nil, nil
	clear(w.roots)
	clear(w.byCtrl)
	w.mu.Unlock()
	if e != nil {
		e.Close()
	}
	if in != nil {
		_ = in.Close()
	}
}

// replace answers a failed source: it restarts it when it had run for a
// while, else falls back to the next one (polling at the end), logs one
// line saying so and asks for a resync. It returns false when no event
// source runs any more.
func (w *Watcher) replace(f failure, stopCh <-chan struct{}) bool {
	w.mu.Lock()
	if f.gen != w.gen {
		w.mu.Unlock()
		return true // an earlier source's failure
	}
	up := w.opts.Now().Sub(w.startedAt)
	w.mu.Unlock()
	w.closeSource()

	cands := w.candidates()
	restart := up >= w.opts.restartAfter
	next := cands
	if i := slices.Index(cands, f.src); i >= 0 && restart {
		next = cands[i:]
	} else if i >= 0 {
		next = cands[i+1:]
	}
	s, why := w.startFirst(next, stopCh)
	if !restart {
		why = append([]string{fmt.Sprintf("not restarted: it had run %v, less than %v", up.Round(time.Millisecond), w.opts.restartAfter)}, why...)
	}
	whyText := parenthesized(why)
	switch s {
	case f.src:
		klog.Warningf("yarn: container discovery by %s failed after %v: %v; restarted it, resync requested", f.src, up.Round(time.Millisecond), f.err)
	case SourcePolling:
		klog.Warningf("yarn: container discovery by %s failed after %v: %v; falling back to polling every %v%s, resync requested",
			f.src, up.Round(time.Millisecond), f.err, w.opts.ResyncInterval, whyText)
	default:
		klog.Warningf("yarn: container discovery by %s failed after %v: %v; fell back to %s%s, resync requested",
			f.src, up.Round(time.Millisecond), f.err, s, whyText)
	}
	w.requestResync()
	return s != SourcePolling
}

// fail reports a reader's error to the run loop, unless the watcher closed
// that source itself.
func (w *Watcher) fail(gen int, src Source, err error, stopCh <-chan struct{}) {
	w.mu.Lock()
	current := gen == w.gen
	w.mu.Unlock()
	if !current {
		return
	}
	select {
	case w.failed <- failure{gen: gen, src: src, err: err}:
	case <-stopCh:
	}
}

func (w *Watcher) requestResync() {
	if w.opts.Resync != nil {
		w.opts.Resync()
	}
}

// poll forgets YARN roots that were removed or replaced, watches those that
// exist and are not watched, and reads the kernel's drop counter. An error
// means the source cannot watch.
func (w *Watcher) poll() error {
	w.checkRoots()
	if err := w.watchRoots(); err != nil {
		return err
	}
	w.checkLost()
	return nil
}

// checkRoots forgets every watched root whose directory is gone or is
// another directory now (removed and made again), so that watchRoots
// watches it anew.
func (w *Watcher) checkRoots() {
	w.mu.Lock()
	var gone []string
	for _, r := range w.roots {
		var st syscall.Stat_t
		err := syscall.Stat(w.h.RootDir(r.ctrls[0]), &st)
		if err == nil && st.Ino == r.ino {
			continue
		}
		w.unwatchLocked(r)
		gone = append(gone, r.dir)
	}
	w.mu.Unlock()
	for _, dir := range gone {
		klog.Infof("yarn: YARN root %s was removed or made again; watching it again once it exists", dir)
	}
	if len(gone) > 0 {
		w.requestResync()
	}
}

func (w *Watcher) unwatchLocked(r *root) {
	delete(w.roots, r.key)
	for _, c := range r.ctrls {
		if w.byCtrl[c] == r {
			delete(w.byCtrl, c)
		}
	}
	if w.ebpf != nil {
		if err := w.ebpf.RemoveParent(r.key); err != nil {
			klog.V(2).Infof("yarn: %v", err)
		}
	}
	if w.inotify != nil {
		_ = w.inotify.RemoveWatch(int(r.key.ID)) // the kernel removed it already when the directory went away
	}
}

// watchRoots starts watching the YARN root of every controller where it
// exists and is not watched yet; controllers mounted at one directory
// share its watch. A new watch asks for a resync: containers made before
// it was in place were not seen.
func (w *Watcher) watchRoots() error {
	w.mu.Lock()
	var added []string
	var fatal error
	for _, ctrl := range w.controllers() {
		if w.byCtrl[ctrl] != nil {
			continue
		}
		dir := w.h.RootDir(ctrl)
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			continue
		}
		var key ParentKey
		switch {
		case w.ebpf != nil:
			hid, err := hierarchyID(w.h, ctrl)
			if err != nil {
				if !w.hidWarned[ctrl] {
					w.hidWarned[ctrl] = true
					klog.Warningf("yarn: cannot watch %s by eBPF: %v", dir, err)
				}
				fatal = errors.Join(fatal, err)
				continue
			}
			key = ParentKey{HierarchyID: hid, ID: st.Ino}
			if w.roots[key] == nil {
				if err := w.ebpf.AddParent(key); err != nil {
					fatal = errors.Join(fatal, err)
					continue
				}
			}
		case w.inotify != nil:
			wd, err := w.inotify.AddWatch(dir)
			if err != nil {
				if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
					continue // removed meanwhile
				}
				fatal = errors.Join(fatal, fmt.Errorf("inotify watch %s: %w", dir, err))
				continue
			}
			key = ParentKey{ID: uint64(wd)}
		default:
			continue
		}
		r := w.roots[key]
		if r == nil {
			r = &root{key: key, ino: st.Ino, dir: dir}
			w.roots[key] = r
			added = append(added, dir)
		}
		r.ctrls = append(r.ctrls, ctrl)
		w.byCtrl[ctrl] = r
		klog.V(2).Infof("yarn: watching %s for %s container cgroups", dir, ctrl)
	}
	w.mu.Unlock()
	if len(added) > 0 {
		w.requestResync()
	}
	return fatal
}

// checkLost reads the kernel's count of events the ring buffer had no room
// for; when it grew, it counts them and asks for a resync once the reader
// has read what the ring buffer held.
func (w *Watcher) checkLost() {
	w.mu.Lock()
	e, gen := w.ebpf, w.gen
	w.mu.Unlock()
	if e == nil {
		return
	}
	n, err := e.Lost()
	if err != nil {
		klog.V(2).Infof("yarn: %v", err)
		return
	}
	w.mu.Lock()
	if gen != w.gen || n <= w.lostSeen {
		w.mu.Unlock()
		return
	}
	delta := n - w.lostSeen
	w.lostSeen = n
	w.mu.Unlock()
	w.metrics.addLost(SourceEBPF, delta)
	w.lossLog.logf(w.opts.Now(), "yarn: the eBPF ring buffer was full: %d container cgroup events lost (%d since the source started); a resync follows once the events before them are read", delta, n)
	w.drainResync.Store(true)
	w.resyncIfDrained(e)
}

// resyncIfDrained requests the resync drops asked for once the ring buffer
// is empty (exactly once, from whichever of the poll and the reader sees it
// first).
func (w *Watcher) resyncIfDrained(e ebpfSource) {
	if w.drainResync.Load() && e.Pending() == 0 && w.drainResync.CompareAndSwap(true, false) {
		w.requestResync()
	}
}

// rootOf returns the controllers served by the watched root key.
func (w *Watcher) rootOf(key ParentKey) ([]cgroups.Controller, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.roots[key]
	if !ok {
		return nil, false
	}
	return r.ctrls, true
}

// observe turns a cgroup event into store events for canonical container
// names: one per controller mounted at the root (all at once on cgroup v2,
// with the controllers the YARN root enables for its containers).
func (w *Watcher) observe(t store.CgroupEventType, key ParentKey, name string, pid int) {
	if !yarn.IsCanonical(name) {
		return
	}
	ctrls, ok := w.rootOf(key)
	if !ok {
		return
	}
	id, _ := yarn.ParseContainerID(name)
	ev := store.CgroupEvent{Type: t, Name: name, ID: id, Dir: w.h.ContainerRelDir(name), Pid: pid}
	now := w.opts.Now()
	if w.h.V2 {
		ev.Controller = store.AllControllers
		if t != store.CgroupRemoved {
			// Which controllers YARN enabled for its containers: one small
			// read of the YARN root's cgroup.subtree_control per event.
			v2, _ := w.h.ReadV2Controllers()
			ev.V2 = &v2
		}
		w.opts.Store.Observe(ev, now)
		return
	}
	for _, c := range ctrls {
		ev.Controller = c
		w.opts.Store.Observe(ev, now)
	}
}

func (w *Watcher) readEBPF(e ebpfSource, gen int, stopCh <-chan struct{}) {
	decodeErrors := 0
	for {
		if w.opts.beforeRead != nil {
			w.opts.beforeRead(SourceEBPF)
		}
		ev, err := e.Read()
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				w.fail(gen, SourceEBPF, err, stopCh)
				return
			}
			w.wakeups.Add(1)
			decodeErrors++
			if decodeErrors == maxDecodeErrors {
				w.fail(gen, SourceEBPF, fmt.Errorf("%d records in a row did not decode, the last: %w", decodeErrors, err), stopCh)
				return
			}
			w.metrics.addLost(SourceEBPF, 1)
			w.lossLog.logf(w.opts.Now(), "yarn: eBPF discovery dropped a record: %v; resync requested", err)
			w.requestResync()
			continue
		}
		decodeErrors = 0
		w.wakeups.Add(1)
		switch ev.Type {
		case Mkdir:
			w.observe(store.CgroupCreated, ev.Parent, ev.Name, 0)
		case Attach:
			w.observe(store.CgroupAttached, ev.Parent, ev.Name, ev.Pid)
		case Rmdir:
			w.observe(store.CgroupRemoved, ev.Parent, ev.Name, 0)
		}
		w.resyncIfDrained(e)
	}
}

// firstPids polls a new container's cgroup.procs briefly (inotify reports
// the mkdir only) so that its first processes reach the store quickly.
func (w *Watcher) firstPids(key ParentKey, name string, stopCh <-chan struct{}) {
	ctrls, ok := w.rootOf(key)
	if !ok || !yarn.IsCanonical(name) {
		return
	}
	procs := filepath.Join(w.h.AbsDir(ctrls[0], w.h.ContainerRelDir(name)), "cgroup.procs")
	for i := 0; i < 200; i++ {
		b, err := os.ReadFile(procs)
		if err != nil {
			return // gone
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			for _, s := range f {
				if pid, err := strconv.Atoi(s); err == nil {
					w.observe(store.CgroupAttached, key, name, pid)
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

// lossLog bounds the log lines about lost events to one a minute; a line
// says how many were left out since the last.
type lossLog struct {
	mu      sync.Mutex
	last    time.Time
	skipped int
}

func (l *lossLog) logf(now time.Time, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < lossLogInterval {
		l.skipped++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if l.skipped > 0 {
		msg += fmt.Sprintf(" (%d more such lines left out)", l.skipped)
	}
	klog.Warning(msg)
	l.last, l.skipped = now, 0
}

// onCgroupFS checks that the hierarchy's mounts are cgroup filesystems: the
// kernel's cgroup tracepoints never fire for directories of another
// filesystem (a fake root), where inotify sees them.
func onCgroupFS(h cgroups.Hierarchy) error {
	mounts := []string{h.CgroupRoot}
	if !h.V2 {
		mounts = []string{filepath.Join(h.CgroupRoot, cgroups.CPU.String())}
	}
	for _, m := range mounts {
		var st unix.Statfs_t
		if err := unix.Statfs(m, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", m, err)
		}
		if st.Type != unix.CGROUP_SUPER_MAGIC && st.Type != unix.CGROUP2_SUPER_MAGIC {
			return fmt.Errorf("%s is not a cgroup filesystem: no cgroup tracepoint fires for it", m)
		}
	}
	return nil
}

// SetResyncInterval sets the informer's resync period (the polling
// fallback); call it before Run (koordlet's flags are parsed after the
// watcher is built).
func (w *Watcher) SetResyncInterval(d time.Duration) {
	if d > 0 {
		w.opts.ResyncInterval = d
	}
}

// ResyncInterval returns the informer's resync period the watcher assumes.
func (w *Watcher) ResyncInterval() time.Duration { return w.opts.ResyncInterval }
