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
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

	opts Options

	mu         sync.Mutex
	thresholds []source
	psi        *PSI
	kinds      []string
	// pending are the MemoryDirs that did not exist yet (a node booted
	// before its NodeManager made the YARN root): each Arm tries them again.
	pending []string
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
	t := &Trigger{wake: make(chan struct{}, 1), opts: opts}
	var why, dirs []string
	for _, d := range opts.MemoryDirs {
		src, missing, err := t.open(d)
		if missing {
			t.pending = append(t.pending, d)
			why = append(why, fmt.Sprintf("%s does not exist yet (tried again at each check)", d))
			continue
		}
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		t.thresholds = append(t.thresholds, src)
		dirs = append(dirs, d)
	}
	if len(t.thresholds) > 0 {
		t.kinds = append(t.kinds, fmt.Sprintf("%s on %s", t.kind(), strings.Join(dirs, ", ")))
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

// kind names the usage source of this node's cgroup version.
func (t *Trigger) kind() string {
	if t.opts.V2 {
		return KindWatch
	}
	return KindThreshold
}

// open makes the usage source of the memory cgroup d (relative to the
// memory controller's mount); missing is true when the cgroup does not
// exist (yet), as opposed to a kernel that takes no threshold there. A
// cgroup removed between the stat and the opening of its files (the
// NodeManager making the YARN root again) is missing too, not unusable:
// it is tried again at each Arm, so the one made again is watched.
func (t *Trigger) open(d string) (src source, missing bool, err error) {
	dir := filepath.Join(t.opts.CgroupRoot, "memory", d)
	if t.opts.V2 {
		dir = filepath.Join(t.opts.CgroupRoot, d)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if t.opts.V2 {
		src, err = NewWatch(dir, DefaultWatchInterval, t.fire)
	} else {
		src, err = NewThreshold(dir, t.fire)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	return src, false, err
}

// openPending opens the memory cgroups that did not exist before and do
// now (the YARN root made after koordlet started), saying so once each; a
// cgroup that exists but takes no usage source is dropped with its reason.
func (t *Trigger) openPending() {
	if len(t.pending) == 0 {
		return
	}
	var still []string
	for _, d := range t.pending {
		src, missing, err := t.open(d)
		switch {
		case missing:
			still = append(still, d)
		case err != nil:
			klog.Infof("yarn: memory evict trigger: %s exists now but cannot be used: %v", d, err)
		default:
			t.thresholds = append(t.thresholds, src)
			t.kinds = append(t.kinds, fmt.Sprintf("%s on %s", t.kind(), d))
			klog.Infof("yarn: memory evict also wakes on %s on %s (the cgroup was made after koordlet started)", t.kind(), d)
		}
	}
	t.pending = still
}

// source is a usage trigger on one memory cgroup: a v1 Threshold or a v2
// Watch.
type source interface {
	Arm(usedNow, level int64) error
	Disarm()
	Close() error
	Dir() string
}

// Kinds lists the sources in use (a copy: a cgroup made later adds one).
func (t *Trigger) Kinds() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.kinds)
}

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
// already above it and acts). A memory cgroup that did not exist when the
// trigger was made (the YARN root of an NM started after koordlet) is
// opened here once it does.
func (t *Trigger) Arm(usedNow, level int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.openPending()
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
