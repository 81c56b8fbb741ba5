package cgroupwatch

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
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

// Watcher feeds container cgroup events to the store from the best source
// this node has: eBPF, then inotify, then none (the informer's resync).
//
// Its jobs live in their own files: the source lifecycle (source.go, with
// the pure nextSources), the watched YARN roots (roots.go), loss accounting
// (loss.go) and the translation of events into store events (events.go).
// The run loop alone opens and closes sources and adds roots; the readers
// look roots up and forget those the kernel ended. mu guards what both
// sides touch and is not held across file reads; it is held across a
// watch's installation so that no event of a new root is looked up before
// the root is recorded.
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
	// hidSaid holds the controllers whose hierarchy id could not be read,
	// said once each.
	hidSaid logonce.Set

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
		failed: make(chan failure, 1)}
}

// Name names the loop.
func (w *Watcher) Name() string { return "YARN container watch" }

// Enabled is always true: without eBPF or inotify it says so and leaves
// discovery to the resync.
func (w *Watcher) Enabled() bool { return true }

// Active returns the source running now ("" before Run decided): after a
// failure it is the source that replaced the failed one, polling when
// none could. A source is active once its roots are watched, not when it
// is opened: an event it reports is then for a root it knows.
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

func (w *Watcher) requestResync() {
	if w.opts.Resync != nil {
		w.opts.Resync()
	}
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
