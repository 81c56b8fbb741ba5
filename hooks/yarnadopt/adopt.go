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
// when for 10 minutes no NodeManager has run their container (its NM
// crashed or was deleted), on evidence alone: an NM that cannot be asked
// is none (lifecycle.go). A directory is removed only when
// it carries the marker, holds no process and its container is gone.
package yarnadopt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// DefaultScanInterval is how often the NodeManager pod's cgroups are
// scanned for container processes the exec watch did not report (or
// without it), and finished containers' cgroups removed.
const DefaultScanInterval = time.Second

// maxRemovals bounds the store's removals waiting for the loop; past it,
// the next scan's sweep removes the cgroups.
const maxRemovals = 256

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
	// Charges receives what each moved process held (nil: not recorded):
	// its memory's readers measure the container by its processes until
	// that is no longer charged to the NM pod.
	Charges *cgroups.LeftCharges
	// openExec opens the exec watch (tests inject one; nil: eBPF).
	openExec func() (execSource, error)
}

// Adopter is the YARN container cgroup loop.
type Adopter struct {
	opts    Options
	env     *cgroups.EnvironReader
	writer  *procsWriter
	metrics *metrics

	// mu serializes the adopter's work: the loop's, and that of a caller
	// of Scan or OnExec while no loop runs (tests). Nothing else takes it:
	// Status reads the snapshot the work publishes (records.go), the
	// store's removals reach the loop on a channel, and the NodeManager
	// is asked outside it (nmlist.go).
	mu sync.Mutex
	// envs caches each process's CONTAINER_ID, read once per process.
	envs map[procKey]string
	// empties holds when each process's environment first read back empty
	// (emptyenv.go).
	empties map[procKey]time.Time
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
	// said holds the lines said once, by key.
	said logonce.Set
	// nm asks the NodeManager for ids the store does not know (nil: the
	// store only); pending are the exec'd processes waiting for its list
	// (see pendingExec).
	nm      *nmLister
	pending map[int]pendingExec
	// blind are the processes a scan moved before their exec events
	// were handled (lateexec.go).
	blind  map[int]blindMove
	fs     procfs.FS
	fsRoot string
	users  passwdCache
	life   lifecycle
	// quit ends the gate-off sweep (tests; koordlet ends with the process).
	quit chan struct{}
	// removals carries the store's removed containers to the loop.
	removals chan string
	// status is the last published Status (records.go).
	status atomic.Pointer[Status]
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
		envs: map[procKey]string{}, empties: map[procKey]time.Time{}, adoptions: map[string]*Adoption{}, watched: map[CgroupKey]bool{},
		pending: map[int]pendingExec{}, blind: map[int]blindMove{}, layout: LayoutUnknown, quit: make(chan struct{}),
		removals: make(chan string, maxRemovals)}
	if opts.ListNM != nil {
		a.nm = newNMLister(opts.ListNM, opts.Now)
	}
	a.publish()
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
	a.publish()
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
	a.publish()
	a.mu.Unlock()
	if src, err := open(); err != nil {
		klog.Infof("yarn: YARNContainerCgroups: no eBPF exec watch on this node (%v); container processes are found by a scan of the NodeManager pod's cgroups every %v", err, a.opts.ScanInterval)
	} else {
		a.mu.Lock()
		a.exec, a.detection = src, "ebpf"
		a.publish()
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
			select {
			case a.removals <- ev.Container.Name:
			default: // full: the next scan's sweep removes it
			}
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
			// Exec events already queued go first: they carry the exec
			// time, which a scan's move of the same process loses (the
			// select picks at random among ready cases).
			events = a.drainExec(events)
			a.Scan()
		case <-a.nmReady():
			a.retryPending()
		case name := <-a.removals:
			a.said.Forget(leafKey(name)) // the said set stays bounded by the containers present
			a.mu.Lock()
			a.removeIfDone(h, name)
			a.publish()
			a.mu.Unlock()
		}
	}
}

// drainExec handles the exec events queued now, without waiting; it
// returns events, or nil once the watch has closed it.
func (a *Adopter) drainExec(events chan ExecEvent) chan ExecEvent {
	for events != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			a.OnExec(ev)
		default:
			return events
		}
	}
	return nil
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

// OnExec handles one exec in the NodeManager pod's cgroups: the process
// (and its ancestors in the pod) are classified and, when a listed
// container's, moved at once.
func (a *Adopter) OnExec(ev ExecEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.publish()
	h, ok := a.opts.Hierarchy()
	if !ok || a.podDir == "" || a.lateExec(ev) {
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
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.publish()
	a.prunePending()
	a.pruneBlind()
	if !a.scan(h) {
		return
	}
	a.sweep(h, true)
	a.detectLayout(h)
}

// sayV2 says once per key what the YARN hierarchy's v2 controllers lack
// (a.mu held).
func (a *Adopter) sayV2(key, msg string) {
	a.said.Do("v2:"+key, func() { klog.Warning(msg) })
}

// ensureWriter starts the process writer once (a.mu held); false, said
// once, when this node does not let koordlet move processes.
func (a *Adopter) ensureWriter(h cgroups.Hierarchy) bool {
	if a.writer != nil {
		return true
	}
	w, err := newProcsWriter(h.ProcRoot, h.V2)
	if err != nil {
		a.said.Do("writer", func() {
			klog.Errorf("yarn: YARNContainerCgroups cannot move processes on this cgroup v2 node: %v; no container gets a cgroup", err)
		})
		a.lastErr = err.Error()
		return false
	}
	a.writer = w
	return true
}

// retryPending adopts again the exec'd processes that named containers the
// NodeManager's list, just arrived, may hold. Each stays pending until it
// is moved (here or by a scan, which keeps its exec time) or too old.
func (a *Adopter) retryPending() {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.publish()
	a.prunePending()
	h, ok := a.opts.Hierarchy()
	if !ok || a.podDir == "" {
		return
	}
	for pid, e := range a.pending {
		a.adopt(h, []int{pid}, true, e.ktime)
	}
}

// pendingExec is an exec'd process that named a container the store did
// not know yet, waiting for the NodeManager's list: its exec time
// (CLOCK_MONOTONIC), its start time (the same process, not a reused pid),
// when it was put aside and the container it named.
type pendingExec struct {
	ktime     uint64
	start     int64
	at        time.Time
	container string
}

// firstExec is the earliest exec time known of container name's
// processes: execAt (the process being moved; 0: not known) or that of a
// process of it still waiting (pending). A launch script's child may exec
// in the pod first and wait for the NodeManager's list while a scan moves
// the script itself (whose own exec was before it entered the pod): the
// launch is the child's exec.
func (a *Adopter) firstExec(name string, execAt uint64) uint64 {
	for _, e := range a.pending {
		if e.container == name && e.ktime > 0 && (execAt == 0 || e.ktime < execAt) {
			execAt = e.ktime
		}
	}
	return execAt
}

// pendingMaxAge bounds how long an exec'd process waits for a
// NodeManager list that names its container; after it, only the scan
// adopts it (without an exec time).
const pendingMaxAge = 30 * time.Second

// prunePending drops the processes pending longer than pendingMaxAge.
// The caller holds a.mu.
func (a *Adopter) prunePending() {
	now := a.opts.Now()
	for pid, e := range a.pending {
		if now.Sub(e.at) > pendingMaxAge {
			delete(a.pending, pid)
		}
	}
}

// execTime is the exec time of the process o at pid: ktime when found at
// its exec, else the exec time it waits with (pending), if it is the same
// process; 0 when not known.
func (a *Adopter) execTime(pid int, o *observed, fromExec bool, ktime uint64) uint64 {
	if fromExec {
		return ktime
	}
	if e, ok := a.pending[pid]; ok && o != nil && o.p != nil && o.p.Start == e.start {
		return e.ktime
	}
	return 0
}

// String describes the adopter for logs.
func (a *Adopter) String() string {
	s := a.Status()
	return fmt.Sprintf("layout %s, detection %s, %d containers given a cgroup", s.Layout, s.Detection, len(s.Containers))
}
