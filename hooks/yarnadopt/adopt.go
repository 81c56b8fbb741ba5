// Package yarnadopt makes YARN containers that YARN gives no cgroup
// first-class: the DefaultContainerExecutor, an LCE without resource
// handlers, and every Hadoop before 3.5 on a cgroup v2 node leave each
// container's processes in the NodeManager pod's own cgroup. A process
// there whose environment holds the CONTAINER_ID of a container the
// NodeManager lists (or whose nearest such ancestor does) is that
// container's; koordlet makes the container the cgroup the LCE would have
// made (v1: cpu, cpuacct, memory; v2: one unified directory with cpu,
// cpuset, io, memory, pids) below the YARN hierarchy, marked as its own,
// and moves the process in, verified through a pidfd, at its exec (an
// eBPF program on sched_process_exec filtered in the kernel to the NM
// pod's cgroups) or at the next scan of those cgroups. From there every
// other feature finds the container as it finds the LCE's. Gate
// YARNContainerCgroups.
//
// Safety: only processes in the NM pod's cgroups are looked at, only those
// proven to be a listed container's are moved, the NM itself and anything
// else stays where the runtime put it. Nothing is frozen or stopped; with
// the gate off, or koordlet gone, the containers run on where they are.
// The only processes koordlet ends are those left in a cgroup it made
// when no NodeManager has listed their container for 10 minutes (its NM
// crashed or was deleted; lifecycle.go). A directory is removed only when
// it carries the marker, holds no process and its container is gone.
package yarnadopt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// DefaultScanInterval is how often the NodeManager pod's cgroups are
// scanned for container processes the exec watch did not report (or
// without it), and finished containers' cgroups removed.
const DefaultScanInterval = time.Second

// The NodeManager lists asked for on demand (a process names a container
// the store does not know yet) are bounded: one at a time and at most one
// every nmListMinInterval however many ids are unknown, outside the
// adopter's loop and lock (nmLister); an id the NM did not list is asked
// for again only after nmMissRetry.
const (
	nmListMinInterval = 20 * time.Millisecond
	nmMissRetry       = time.Second
)

// Options wire the adopter.
type Options struct {
	Store *store.Store
	// Hierarchy returns the YARN hierarchy once known.
	Hierarchy func() (cgroups.Hierarchy, bool)
	// NMPodCgroup returns the NodeManager pod's cgroup relative to the
	// mount root (as koordlet names pod cgroups) and the pod's name; ok is
	// false when no NodeManager pod is known.
	NMPodCgroup func() (dir, pod string, ok bool)
	// ListNM lists the NodeManager's containers now (nil: the store only).
	ListNM func(ctx context.Context) ([]yarn.NMContainer, error)
	// ScanInterval, see DefaultScanInterval.
	ScanInterval time.Duration
	// Kill ends the processes of container name in its own cgroup, each
	// verified (the eviction killer); nil: orphans are left running.
	Kill func(name string) error
	// Registerer receives the adopter's metrics (nil: none).
	Registerer prometheus.Registerer
	// Now is time.Now; tests may pin it.
	Now func() time.Time
	// openExec opens the exec watch (tests inject one; nil: eBPF).
	openExec func() (execSource, error)
}

// execSource is the exec watch (ExecWatch, or a test's).
type execSource interface {
	Watch(CgroupKey) error
	Unwatch(CgroupKey) error
	Read() (ExecEvent, error)
	Lost() (uint64, error)
	Close()
}

// Adoption is what koordlet did for one container (GET /yarn/containers).
type Adoption struct {
	// CgroupMadeAt is when koordlet made the container's cgroup.
	CgroupMadeAt time.Time `json:"cgroupMadeAt"`
	// Cgroup is its directory relative to the mount root.
	Cgroup string `json:"cgroup"`
	// ProcessesMoved counts the processes koordlet moved in.
	ProcessesMoved int `json:"processesMoved"`
	// MemoryChargedToNodeManagerBytes is the memory its processes held
	// (RssAnon + RssShmem) when they were moved: charged to the
	// NodeManager pod's cgroup, where it stays on cgroup v2 and on kernels
	// that no longer move charges.
	MemoryChargedToNodeManagerBytes int64 `json:"memoryChargedToNodeManagerBytes"`
	// LaunchToCgroupNanos is from the exec of its first process to that
	// process in the container's cgroup (exec watch only).
	LaunchToCgroupNanos int64 `json:"launchToCgroupNanos,omitempty"`
}

// Status is the adopter's state (GET /yarn/containers).
type Status struct {
	// Layout is what YARN does with container cgroups on this node.
	Layout Layout `json:"layout"`
	// Detection is how container processes are found: "ebpf" (at exec,
	// with the scan behind it) or "scan"; "" until the loop runs.
	Detection    string              `json:"detection"`
	NodeManager  string              `json:"nodeManagerCgroup,omitempty"`
	Error        string              `json:"error,omitempty"`
	Containers   map[string]Adoption `json:"containers"`
	ScanInterval time.Duration       `json:"scanIntervalNanos"`
}

// Adopter is the YARN container cgroup loop.
type Adopter struct {
	opts    Options
	env     *cgroups.EnvironReader
	writer  *procsWriter
	metrics *metrics

	mu sync.Mutex
	// envs caches each process's CONTAINER_ID, read once per process.
	envs map[procKey]string
	// adoptions by container id.
	adoptions map[string]*Adoption
	// podDir is the NM pod's cgroup (relative).
	podDir    string
	watched   map[CgroupKey]bool
	exec      execSource
	lost      uint64 // exec events dropped, as last read
	detection string
	layout    Layout
	lastErr   string
	logged    map[string]bool
	// nm asks the NodeManager for ids the store does not know (nil: the
	// store only); pending are the exec'd processes (→ exec time) waiting
	// for its list.
	nm      *nmLister
	pending map[int]uint64
	fs      procfs.FS
	fsRoot  string
	users   passwdCache
	life    lifecycle
	// quit ends the gate-off sweep (tests; koordlet ends with the process).
	quit chan struct{}
}

// procKey names one exec of one process: its pid, start time and
// environment address (new at every exec).
type procKey struct {
	pid   int
	start int64
	env   uint64
}

// New returns the adopter; it registers its metrics on opts.Registerer.
func New(opts Options) *Adopter {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ScanInterval <= 0 {
		opts.ScanInterval = DefaultScanInterval
	}
	a := &Adopter{opts: opts, env: cgroups.NewEnvironReader(), metrics: newMetrics(opts.Registerer),
		envs: map[procKey]string{}, adoptions: map[string]*Adoption{}, watched: map[CgroupKey]bool{},
		logged: map[string]bool{}, pending: map[int]uint64{}, layout: LayoutUnknown, quit: make(chan struct{})}
	if opts.ListNM != nil {
		a.nm = newNMLister(opts.ListNM, opts.Now)
	}
	return a
}

// Name names the loop.
func (a *Adopter) Name() string { return "YARN container cgroups" }

// Enabled is the gate YARNContainerCgroups.
func (a *Adopter) Enabled() bool { return features.Enabled(features.YARNContainerCgroups) }

// SetScanInterval sets the scan; call it before Run.
func (a *Adopter) SetScanInterval(d time.Duration) {
	if d > 0 {
		a.opts.ScanInterval = d
	}
}

// Run opens the exec watch (the scan alone when it cannot), then adopts at
// every exec and scan until stopCh closes. It returns at once.
func (a *Adopter) Run(stopCh <-chan struct{}) {
	go a.run(stopCh)
}

func (a *Adopter) run(stopCh <-chan struct{}) {
	h, ok := a.waitHierarchy(stopCh)
	if !ok {
		return
	}
	a.mu.Lock()
	ok = a.ensureWriter(h)
	a.mu.Unlock()
	if !ok {
		return
	}
	open := a.opts.openExec
	if open == nil {
		open = func() (execSource, error) { return OpenExecWatch() }
	}
	events := make(chan ExecEvent, 256)
	a.mu.Lock()
	a.detection = "scan"
	a.mu.Unlock()
	if src, err := open(); err != nil {
		klog.Infof("yarn: YARNContainerCgroups: no eBPF exec watch on this node (%v); container processes are found by a scan of the NodeManager pod's cgroups every %v", err, a.opts.ScanInterval)
	} else {
		a.mu.Lock()
		a.exec, a.detection = src, "ebpf"
		a.mu.Unlock()
		go func() {
			for {
				ev, err := src.Read()
				if err != nil {
					if errors.Is(err, os.ErrClosed) {
						close(events)
						return
					}
					klog.V(2).Infof("yarn: exec watch: %v", err)
					continue
				}
				select {
				case events <- ev:
				case <-stopCh:
					return
				}
			}
		}()
		defer src.Close()
		klog.Infof("yarn: YARNContainerCgroups: container processes are found at their exec (eBPF), with a scan of the NodeManager pod's cgroups every %v behind it", a.opts.ScanInterval)
	}
	unsubscribe := a.opts.Store.Subscribe("yarn-adopt", func(ev store.Event) {
		if ev.Type == store.Removed && ev.Container != nil {
			a.removeIfDone(h, ev.Container.Name)
		}
	})
	defer unsubscribe()
	a.Scan()
	ticker := time.NewTicker(a.opts.ScanInterval)
	defer ticker.Stop()
	for {
		select {
		case <-stopCh:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			a.OnExec(ev)
		case <-ticker.C:
			a.Scan()
		case <-a.nmReady():
			a.retryPending()
		}
	}
}

// nmReady is signalled when a NodeManager list asked for arrives (nil
// without a NodeManager to ask: never).
func (a *Adopter) nmReady() <-chan struct{} {
	if a.nm == nil {
		return nil
	}
	return a.nm.ready
}

// waitHierarchy waits for the YARN hierarchy to be known.
func (a *Adopter) waitHierarchy(stopCh <-chan struct{}) (cgroups.Hierarchy, bool) {
	for {
		if a.opts.Hierarchy != nil {
			if h, ok := a.opts.Hierarchy(); ok {
				return h, true
			}
		}
		select {
		case <-stopCh:
			return cgroups.Hierarchy{}, false
		case <-time.After(a.opts.ScanInterval):
		}
	}
}

// logOnce logs a line once per key.
func (a *Adopter) logOnce(key string, f func()) {
	if !a.logged[key] {
		a.logged[key] = true
		f()
	}
}

// OnExec handles one exec in the NodeManager pod's cgroups: the process
// (and its ancestors in the pod) are classified and, when a listed
// container's, moved at once.
func (a *Adopter) OnExec(ev ExecEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.opts.Hierarchy()
	if !ok || a.podDir == "" {
		return
	}
	a.adopt(h, []int{ev.Pid}, true, ev.KtimeNs)
}

// Scan refreshes the NodeManager pod's cgroups (and the exec watch's
// filter), adopts every container process found there, removes the
// cgroups of finished containers and tells the layout.
func (a *Adopter) Scan() {
	h, ok := a.opts.Hierarchy()
	if !ok {
		return
	}
	if !a.scan(h) {
		return
	}
	a.sweep(h, true)
	a.mu.Lock()
	a.detectLayout(h)
	a.mu.Unlock()
}

// scan adopts what the NM pod's cgroups hold; false when koordlet cannot
// move processes here.
func (a *Adopter) scan(h cgroups.Hierarchy) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.ensureWriter(h) {
		return false
	}
	dirs := a.refreshPod(h)
	var pids []int
	for _, d := range dirs {
		ps, err := cgroups.ReadPids(h.AbsDir(scanCtrl, d))
		if err == nil {
			pids = append(pids, ps...)
		}
	}
	if a.exec != nil {
		if n, err := a.exec.Lost(); err == nil && n > a.lost {
			klog.V(2).Infof("yarn: the exec watch dropped %d exec events (ring buffer full); this scan covers them", n-a.lost)
			a.lost = n
		}
	}
	if len(pids) > 0 {
		a.adopt(h, pids, false, 0)
	}
	a.forgetExited(pids)
	return true
}

// sayV2 says once per key what the YARN hierarchy's v2 controllers lack
// (a.mu held).
func (a *Adopter) sayV2(key, msg string) {
	a.logOnce("v2:"+key, func() { klog.Warning(msg) })
}

// ensureWriter starts the process writer once (a.mu held); false, said
// once, when this node does not let koordlet move processes.
func (a *Adopter) ensureWriter(h cgroups.Hierarchy) bool {
	if a.writer != nil {
		return true
	}
	w, err := newProcsWriter(h.ProcRoot, h.V2)
	if err != nil {
		a.logOnce("writer", func() {
			klog.Errorf("yarn: YARNContainerCgroups cannot move processes on this cgroup v2 node: %v; no container gets a cgroup", err)
		})
		a.lastErr = err.Error()
		return false
	}
	a.writer = w
	return true
}

// scanCtrl is the hierarchy the pod's processes are listed in.
const scanCtrl = cgroups.CPU

// refreshPod finds the NM pod's cgroup and its subtree (relative dirs) and
// points the exec watch at them.
func (a *Adopter) refreshPod(h cgroups.Hierarchy) []string {
	var (
		dir, pod string
		ok       bool
	)
	if a.opts.NMPodCgroup != nil {
		dir, pod, ok = a.opts.NMPodCgroup()
	}
	if !ok {
		a.logOnce("no-pod", func() {
			klog.Infof("yarn: YARNContainerCgroups: no NodeManager pod known (--yarn-nm-pod-selector); container processes are looked for once it runs")
		})
		a.podDir = ""
		a.setWatched(nil)
		return nil
	}
	if dir != a.podDir {
		klog.Infof("yarn: YARNContainerCgroups: looking for YARN container processes in the NodeManager pod %s's cgroup %s", pod, dir)
		a.podDir = dir
	}
	root := h.AbsDir(scanCtrl, dir)
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if rel, err := filepath.Rel(h.AbsDir(scanCtrl, ""), p); err == nil {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if a.exec != nil {
		hid, err := cgroups.HierarchyID(h, scanCtrl)
		if err != nil {
			a.logOnce("hid", func() {
				klog.Warningf("yarn: YARNContainerCgroups: exec watch: %v; the scan alone finds container processes", err)
			})
			a.setWatched(nil)
		} else {
			keys := map[CgroupKey]bool{}
			for _, d := range dirs {
				var st unix.Stat_t
				if unix.Stat(h.AbsDir(scanCtrl, d), &st) == nil {
					keys[CgroupKey{HierarchyID: hid, ID: st.Ino}] = true
				}
			}
			a.setWatched(keys)
		}
	}
	return dirs
}

// setWatched makes the exec watch's filter keys.
func (a *Adopter) setWatched(keys map[CgroupKey]bool) {
	if a.exec == nil {
		return
	}
	for k := range a.watched {
		if !keys[k] {
			if err := a.exec.Unwatch(k); err == nil {
				delete(a.watched, k)
			}
		}
	}
	for k := range keys {
		if !a.watched[k] {
			if err := a.exec.Watch(k); err != nil {
				klog.V(2).Infof("yarn: %v", err)
				continue
			}
			a.watched[k] = true
		}
	}
}

// inPod reports whether the relative cgroup dir is the NM pod's or below.
func (a *Adopter) inPod(dir string) bool {
	return a.podDir != "" && (dir == a.podDir || strings.HasPrefix(dir, a.podDir+"/"))
}

// procfs returns the proc file system of the hierarchy's proc root.
func (a *Adopter) procFS(h cgroups.Hierarchy) (procfs.FS, error) {
	if a.fsRoot != h.ProcRoot || a.fs == (procfs.FS{}) {
		fs, err := procfs.NewFS(h.ProcRoot)
		if err != nil {
			return procfs.FS{}, err
		}
		a.fs, a.fsRoot = fs, h.ProcRoot
	}
	return a.fs, nil
}

// observed is a process pinned and read.
type observed struct {
	p    *pinned
	proc Proc
	from []string // its cgroup per leaf controller (in the pod)
	rss  int64
}

// maxAncestors bounds the parents followed from an exec'd process.
const maxAncestors = 32

// adopt classifies pids (and, from an exec, their ancestors in the pod)
// and moves the processes of listed containers into their cgroups.
func (a *Adopter) adopt(h cgroups.Hierarchy, pids []int, fromExec bool, ktime uint64) {
	if a.layout == LayoutLCE || a.layout == LayoutLCECPUOnly {
		// YARN makes its containers' cgroups here: a cgroup koordlet made
		// first would make the LCE's own mkdir fail.
		return
	}
	pfs, err := a.procFS(h)
	if err != nil {
		return
	}
	ctrls := leafCtrls(h)
	seen := map[int]*observed{}
	defer func() {
		for _, o := range seen {
			if o != nil {
				o.p.release()
			}
		}
	}()
	procs := map[int]Proc{}
	var observe func(pid, depth int)
	observe = func(pid, depth int) {
		if _, ok := seen[pid]; ok || pid <= 1 {
			return
		}
		seen[pid] = nil
		o := a.observe(h, pfs, pid, ctrls)
		if o == nil {
			return
		}
		procs[pid] = o.proc
		if o.p != nil {
			seen[pid] = o
		}
		// From an exec, the ancestors in the pod up to the NodeManager: the
		// claim is checked against the launch it descends from.
		if fromExec && depth < maxAncestors {
			observe(o.proc.PPid, depth+1)
		}
	}
	for _, pid := range pids {
		observe(pid, 0)
	}
	a.parentsIn(h, procs)
	claims := a.claims(h, procs)
	assigned := Assign(procs, claims.Claims)
	if fromExec && claims.asked && len(a.pending) < maxPending {
		for _, pid := range pids {
			if _, ok := assigned[pid]; !ok {
				a.pending[pid] = ktime // adopted again when the NM's list arrives
			}
		}
	}
	if len(assigned) == 0 {
		return
	}
	// Ordered: a parent before its children (lower pids first is a fair
	// approximation; a child forked after its parent moved is born there).
	order := make([]int, 0, len(assigned))
	for pid := range assigned {
		order = append(order, pid)
	}
	sort.Ints(order)
	for _, pid := range order {
		name := assigned[pid]
		o := seen[pid]
		if o == nil {
			continue
		}
		// The cgroup is made (and checked) once per container; later
		// processes go into what the first one made.
		dirs, _ := leafDirs(h, name)
		var err error
		if a.adoptions[name] == nil {
			dirs, err = ensureLeaf(h, name, a.sayV2)
		}
		if err != nil {
			a.logOnce("leaf:"+name, func() { klog.Warningf("yarn: no cgroup for YARN container %s: %v", name, err) })
			a.lastErr = err.Error()
			continue
		}
		r := a.move(h, o.p, name, dirs, ctrls, o.from)
		klog.V(3).Infof("yarn: move process %d of YARN container %s from %v (found at its exec: %t): %s", pid, name, o.from, fromExec, r)
		a.metrics.moves.WithLabelValues(r).Inc()
		if r != ResultMoved {
			continue
		}
		ad := a.adoptions[name]
		if ad == nil {
			ad = &Adoption{CgroupMadeAt: a.opts.Now(), Cgroup: h.ContainerRelDir(name)}
			a.adoptions[name] = ad
			if fromExec && ktime > 0 {
				var ts unix.Timespec
				if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
					d := time.Duration(ts.Nano() - int64(ktime))
					if d >= 0 {
						ad.LaunchToCgroupNanos = int64(d)
						a.metrics.launch.Observe(d.Seconds())
					}
				}
			}
			if a.layout == LayoutUnknown {
				a.detectLayout(h)
			}
			klog.V(2).Infof("yarn: YARN container %s runs without a cgroup of YARN's: koordlet made %s and moved its process %d in", name, ad.Cgroup, pid)
		}
		ad.ProcessesMoved++
		ad.MemoryChargedToNodeManagerBytes += o.rss
		a.metrics.charged.Add(float64(o.rss))
	}
}

// observe pins pid, checks it is in the NM pod's cgroups, and reads its
// parent, start time, memory and CONTAINER_ID (the environment once per
// process, bounded); nil when it is gone, elsewhere or unreadable now.
func (a *Adopter) observe(h cgroups.Hierarchy, pfs procfs.FS, pid int, ctrls []cgroups.Controller) *observed {
	p, err := pin(h.ProcRoot, pid)
	if err != nil {
		return nil
	}
	from := make([]string, len(ctrls))
	for i, c := range ctrls {
		d, ok := h.PathOf(pid, c)
		if !ok || !a.inPod(d) {
			p.release()
			return nil
		}
		from[i] = d
	}
	st, err := readStat(h.ProcRoot, pid)
	if err != nil || st.Start != p.start {
		p.release()
		return nil
	}
	key := procKey{pid: pid, start: p.start, env: st.EnvStart}
	id, ok := a.envs[key]
	if !ok {
		id, err = a.env.ContainerID(h.ProcRoot, pid)
		if err != nil {
			if !errors.Is(err, unix.ESRCH) && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, cgroups.ErrEnvironEmpty) {
				klog.V(4).Infof("yarn: environment of %d: %v", pid, err)
			}
			p.release()
			// Read again at the next scan or exec; what it claims is not
			// known, so nothing below it is decided now.
			return &observed{proc: Proc{Pid: pid, PPid: st.PPid, UID: -1, Unread: true}}
		}
		if id != "" && !yarn.IsCanonical(id) {
			if cid, perr := yarn.ParseContainerID(id); perr != nil {
				klog.V(4).Infof("yarn: process %d names CONTAINER_ID %q, not a YARN container id: left alone", pid, id)
				id = ""
			} else {
				id = cid.String()
			}
		}
		if !p.alive() {
			p.release()
			return nil // the environment may have been another process's
		}
		a.envs[key] = id
	}
	var rss int64
	uid := -1
	if proc, err := pfs.Proc(pid); err == nil {
		if s, err := proc.NewStatus(); err == nil {
			rss = int64(s.RssAnon + s.RssShmem)
			uid = int(s.UIDs[0])
		}
	}
	if !p.alive() {
		p.release()
		return nil // the status may have been another process's
	}
	return &observed{p: p, proc: Proc{Pid: pid, PPid: st.PPid, EnvID: id, UID: uid}, from: from, rss: rss}
}

// forgetExited drops the cached environments of processes no longer in
// the pod (they exited or were moved).
func (a *Adopter) forgetExited(pids []int) {
	live := make(map[int]bool, len(pids))
	for _, p := range pids {
		live[p] = true
	}
	for k := range a.envs {
		if !live[k.pid] {
			delete(a.envs, k)
		}
	}
}

// parentsIn marks the processes whose parent is outside procs and in a
// cgroup koordlet made for a container: they descend from its launch.
func (a *Adopter) parentsIn(h cgroups.Hierarchy, procs map[int]Proc) {
	for pid, p := range procs {
		if _, ok := procs[p.PPid]; ok || p.PPid <= 1 || p.Unread {
			continue
		}
		d, ok := h.PathOf(p.PPid, scanCtrl)
		if !ok {
			continue
		}
		name := filepath.Base(d)
		if yarn.IsCanonical(name) && d == h.ContainerRelDir(name) {
			p.ParentIn = name
			procs[pid] = p
		}
	}
}

// gathered is what claims gathered; asked: a NodeManager list that may
// name more was asked for.
type gathered struct {
	Claims
	asked bool
}

// maxPending bounds the exec'd processes waiting for a NodeManager list.
const maxPending = 1024

// claims gathers what Assign checks the claims of procs against: which of
// the containers they name the NodeManager lists, with their users, and
// the uids of those users in the NodeManager pod.
func (a *Adopter) claims(h cgroups.Hierarchy, procs map[int]Proc) gathered {
	c := gathered{Claims: Claims{Listed: map[string]string{}}}
	for _, p := range procs {
		for _, id := range []string{p.EnvID, p.ParentIn} {
			if _, done := c.Listed[id]; done || id == "" {
				continue
			}
			user, ok, asked := a.listed(id)
			if ok {
				c.Listed[id] = user
			}
			c.asked = c.asked || asked
		}
	}
	if len(c.Listed) > 0 {
		c.UIDs = a.podUsers(h, procs)
	}
	return c
}

// listed reports whether the NodeManager lists container id as not
// finished, and its user: from the store, else from the NodeManager's last
// list; asked reports that a list was asked for (in the background) that
// may name it.
func (a *Adopter) listed(id string) (user string, ok, asked bool) {
	if !yarn.IsCanonical(id) {
		return "", false, false
	}
	if c, ok := a.opts.Store.Get(id); ok && c.State != "" {
		return c.User, !yarn.IsTerminalState(c.State), false
	}
	return a.nm.lookup(id)
}

// retryPending adopts again the exec'd processes that named containers the
// NodeManager's list, just arrived, may hold.
func (a *Adopter) retryPending() {
	a.mu.Lock()
	defer a.mu.Unlock()
	pending := a.pending
	a.pending = map[int]uint64{}
	h, ok := a.opts.Hierarchy()
	if !ok || a.podDir == "" {
		return
	}
	for pid, ktime := range pending {
		a.adopt(h, []int{pid}, true, ktime)
	}
}

// removeIfDone removes the cgroup koordlet made for container name once
// the container is gone (not listed, or finished) and the cgroup empty.
func (a *Adopter) removeIfDone(h cgroups.Hierarchy, name string) {
	if !yarn.IsCanonical(name) {
		return
	}
	if c, ok := a.opts.Store.Get(name); ok && c.Source&store.SourceNM != 0 && !yarn.IsTerminalState(c.State) {
		return // the NodeManager still lists it running (an empty cgroup is refilled at its next process)
	}
	a.removeLeaf(h, name)
}

// Status returns the adopter's state.
func (a *Adopter) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Status{Layout: a.layout, Detection: a.detection, NodeManager: a.podDir, Error: a.lastErr,
		Containers: make(map[string]Adoption, len(a.adoptions)), ScanInterval: a.opts.ScanInterval}
	for n, ad := range a.adoptions {
		s.Containers[n] = *ad
	}
	return s
}

// RestoreDisabled runs with the gate off: it removes the empty cgroups an
// earlier koordlet made, and the others as they empty (sweepDisabled).
// Containers still in theirs run on there: nothing is moved back or
// frozen; only orphans (see lifecycle.go) are ended.
func (a *Adopter) RestoreDisabled() int {
	if a.opts.Hierarchy == nil {
		return 0
	}
	h, ok := a.opts.Hierarchy()
	if !ok {
		return 0
	}
	n, kept := 0, 0
	for _, name := range ourLeaves(h) {
		if gone, err := removeLeaf(h, name); err == nil && gone {
			n++
		} else {
			kept++
		}
	}
	if kept > 0 {
		klog.Infof("yarn: YARNContainerCgroups is off: %d container(s) still run in the cgroups an earlier koordlet made for them; they stay there, and each cgroup goes once it is empty", kept)
		go a.sweepDisabled(h, a.quit)
	}
	return n
}

// String describes the adopter for logs.
func (a *Adopter) String() string {
	s := a.Status()
	return fmt.Sprintf("layout %s, detection %s, %d containers given a cgroup", s.Layout, s.Detection, len(s.Containers))
}
