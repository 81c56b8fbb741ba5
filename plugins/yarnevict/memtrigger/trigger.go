// Package memtrigger wakes koordlet's memory evict strategy when node
// memory crosses its threshold, instead of leaving the crossing to the next
// periodic check: on cgroup v1 memory usage thresholds (cgroup.event_control
// with an eventfd) on the memory cgroups that hold the node's BE work (the
// kubepods cgroup, and the YARN hierarchy when it lies elsewhere), on cgroup
// v2, which has no thresholds, a watch of the same cgroups' memory.current
// every 25 ms while armed, and,
// where the kernel accepts PSI triggers, a memory stall trigger on
// /proc/pressure/memory. Where neither works the strategy keeps its
// periodic check alone.
//
// Not the root memory cgroup: the kernel compares a root threshold with the
// root's statistics, which are flushed lazily (every 2 s), so a root
// threshold fires up to seconds after the crossing (measured here); a
// child's usage is its page counter, exact at every charge.
package memtrigger

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// Kinds of wake sources, for the log and the tests.
const (
	KindThreshold = "memory usage thresholds (cgroup v1 cgroup.event_control)"
	KindWatch     = "memory usage watch (cgroup v2 memory.current, every 25ms while armed)"
	KindPSI       = "PSI memory stall trigger"
)

// Trigger combines the wake sources the node has. Its channel receives a
// value (coalesced: at most one pending) whenever a source fires.
type Trigger struct {
	wake chan struct{}

	mu         sync.Mutex
	thresholds []source
	psi        *PSI
	kinds      []string
}

// Options say where the kernel's files are.
type Options struct {
	// CgroupRoot is koordlet's cgroup root (e.g. /sys/fs/cgroup/).
	CgroupRoot string
	// ProcRoot is koordlet's proc root (e.g. /proc/).
	ProcRoot string
	// V2 is true on a cgroup v2 host (no usage thresholds there: a watch
	// of memory.current instead).
	V2 bool
	// MemoryDirs are the memory cgroups (relative to the memory
	// controller's mount) whose usage growth should wake the strategy;
	// those that do not exist or take no thresholds are left out.
	MemoryDirs []string
}

// New opens every source the kernel supports and says in one log line
// which are in use (or that none is and the periodic check stays alone).
func New(opts Options) *Trigger {
	t := &Trigger{wake: make(chan struct{}, 1)}
	var why, dirs []string
	kind := KindThreshold
	if opts.V2 {
		kind = KindWatch
	}
	for _, d := range opts.MemoryDirs {
		var src source
		var err error
		if opts.V2 {
			src, err = NewWatch(filepath.Join(opts.CgroupRoot, d), DefaultWatchInterval, t.fire)
		} else {
			src, err = NewThreshold(filepath.Join(opts.CgroupRoot, "memory", d), t.fire)
		}
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		t.thresholds = append(t.thresholds, src)
		dirs = append(dirs, d)
	}
	if len(t.thresholds) > 0 {
		t.kinds = append(t.kinds, fmt.Sprintf("%s on %s", kind, strings.Join(dirs, ", ")))
	}
	if p, err := NewPSI(filepath.Join(opts.ProcRoot, "pressure", "memory"), DefaultPSIStall, DefaultPSIWindow, t.fire); err != nil {
		why = append(why, err.Error())
	} else {
		t.psi = p
		t.kinds = append(t.kinds, KindPSI)
	}
	if len(t.kinds) == 0 {
		klog.Infof("yarn: memory evict wakes only every interval (no event trigger: %s)", strings.Join(why, "; "))
	} else {
		klog.Infof("yarn: memory evict also wakes on %s", strings.Join(t.kinds, " and "))
		if len(why) > 0 {
			klog.V(2).Infof("yarn: memory evict trigger sources not in use: %s", strings.Join(why, "; "))
		}
	}
	return t
}

// source is a usage trigger on one memory cgroup: a v1 Threshold or a v2
// Watch.
type source interface {
	Arm(usedNow, level int64) error
	Disarm()
	Close() error
	Dir() string
}

// Kinds lists the sources in use.
func (t *Trigger) Kinds() []string { return t.kinds }

// C receives a value when a source fired since the last receive.
func (t *Trigger) C() <-chan struct{} { return t.wake }

func (t *Trigger) fire() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Arm sets the node memory level (bytes used, koordlet's definition:
// MemTotal − MemAvailable) at which to wake, given the usage now, on every
// threshold. A level at or below the usage now disarms them (the caller is
// already above it and acts).
func (t *Trigger) Arm(usedNow, level int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, th := range t.thresholds {
		if err := th.Arm(usedNow, level); err != nil {
			errs = append(errs, fmt.Errorf("arm the memory usage trigger on %s: %w", th.Dir(), err))
		}
	}
	return errors.Join(errs...)
}

// Disarm removes the thresholds (the strategy is off).
func (t *Trigger) Disarm() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, th := range t.thresholds {
		th.Disarm()
	}
}

// Close stops every source.
func (t *Trigger) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, th := range t.thresholds {
		errs = append(errs, th.Close())
	}
	if t.psi != nil {
		errs = append(errs, t.psi.Close())
	}
	return errors.Join(errs...)
}
