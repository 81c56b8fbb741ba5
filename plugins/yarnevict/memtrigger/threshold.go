package memtrigger

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// RearmSlack is how far a new threshold may drift from the armed one before
// it is registered again: the usage file counts page cache, which moves all
// the time, and each registration costs an eventfd.
const RearmSlack = 8 << 20

// ThresholdFor maps a level of node memory used (koordlet's definition,
// MemTotal − MemAvailable, which leaves page cache out) to a threshold on
// the memory cgroup's usage file (which counts page cache): the usage now
// plus what is left below the level. ok is false when the level is already
// reached. A change of page cache after arming shifts the crossing by as
// much; the caller re-arms at every periodic check.
func ThresholdFor(usageNow, usedNow, level int64) (threshold int64, ok bool) {
	if level <= usedNow {
		return 0, false
	}
	return usageNow + (level - usedNow), true
}

// Threshold is a cgroup v1 memory usage threshold: the kernel signals an
// eventfd when the cgroup's memory.usage_in_bytes crosses it, either way.
type Threshold struct {
	dir  string
	fire func()

	mu sync.Mutex
	// armed is the registered threshold; ev its eventfd (nil: disarmed);
	// ino the cgroup directory's inode when it was registered: a cgroup
	// removed and made again (the NodeManager recreating the YARN root) is
	// a new cgroup whose usage the old registration never watches.
	armed int64
	ev    *os.File
	ino   uint64
}

// NewThreshold checks that the memory cgroup dir takes usage thresholds
// (a registration far above any usage, removed at once) and returns an
// unarmed Threshold that calls fire when an armed threshold is crossed.
func NewThreshold(dir string, fire func()) (*Threshold, error) {
	t := &Threshold{dir: dir, fire: fire}
	ev, err := t.register(1 << 62)
	if err != nil {
		return nil, fmt.Errorf("memory usage threshold on %s: %w", dir, err)
	}
	_ = ev.Close()
	return t, nil
}

// Dir is the memory cgroup's directory.
func (t *Threshold) Dir() string { return t.dir }

// Usage reads the cgroup's memory.usage_in_bytes.
func (t *Threshold) Usage() (int64, error) {
	return readBytes(filepath.Join(t.dir, "memory.usage_in_bytes"))
}

// readBytes reads a cgroup file holding one byte count.
func readBytes(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return v, nil
}

// Arm wakes when node memory used reaches level: the threshold is set on
// the usage file at ThresholdFor(usage now, usedNow, level), replacing an
// armed one that differs by more than RearmSlack or that the usage has
// already reached. The kernel signals a threshold as the usage crosses it,
// so one reached is spent: it fired early (the usage file moved ahead of
// node memory, e.g. by page cache) and the check found the node still
// below the level, and kept, it would not fire again at the real crossing.
// A level already reached disarms.
func (t *Threshold) Arm(usedNow, level int64) error {
	usage, err := t.Usage()
	if err != nil {
		return err
	}
	th, ok := ThresholdFor(usage, usedNow, level)
	ino, err := dirIno(t.dir)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !ok {
		t.disarmLocked()
		return nil
	}
	if t.ev != nil && ino == t.ino && keepArmed(t.armed, th, usage) {
		return nil
	}
	if t.ev != nil && ino != t.ino {
		klog.Infof("yarn: memory cgroup %s was removed and made again: its usage threshold is registered on the new one", t.dir)
	}
	ev, err := t.register(th)
	if err != nil {
		return err
	}
	go t.wait(ev)
	// The new registration is in place before the old one goes: no gap.
	t.disarmLocked()
	t.ev, t.armed, t.ino = ev, th, ino
	return nil
}

// dirIno returns the inode of dir (a cgroup made again has a new one).
func dirIno(dir string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", dir, err)
	}
	return st.Ino, nil
}

// Armed returns the registered threshold (0 when disarmed).
func (t *Threshold) Armed() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ev == nil {
		return 0
	}
	return t.armed
}

// Disarm removes the registered threshold.
func (t *Threshold) Disarm() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.disarmLocked()
}

// Close disarms.
func (t *Threshold) Close() error {
	t.Disarm()
	return nil
}

func (t *Threshold) disarmLocked() {
	if t.ev != nil {
		// Closing the eventfd ends its waiter and makes the kernel drop
		// the registration.
		_ = t.ev.Close()
		t.ev, t.armed = nil, 0
	}
}

// register writes "<eventfd> <usage fd> <threshold>" to the cgroup's
// cgroup.event_control and returns the eventfd (non-blocking, in Go's
// poller, so that closing it ends a pending read).
func (t *Threshold) register(threshold int64) (*os.File, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := os.NewFile(uintptr(efd), "memory-threshold-eventfd")
	usage, err := os.Open(filepath.Join(t.dir, "memory.usage_in_bytes"))
	if err != nil {
		_ = ev.Close()
		return nil, err
	}
	defer usage.Close()
	ctl, err := os.OpenFile(filepath.Join(t.dir, "cgroup.event_control"), os.O_WRONLY, 0)
	if err != nil {
		_ = ev.Close()
		return nil, err
	}
	defer ctl.Close()
	if _, err := fmt.Fprintf(ctl, "%d %d %d", efd, usage.Fd(), threshold); err != nil {
		_ = ev.Close()
		return nil, fmt.Errorf("write %s/cgroup.event_control: %w", t.dir, err)
	}
	return ev, nil
}

// wait calls fire at each signal of ev until ev is closed.
func (t *Threshold) wait(ev *os.File) {
	buf := make([]byte, 8)
	for {
		if _, err := ev.Read(buf); err != nil {
			return
		}
		t.fire()
	}
}

// keepArmed tells whether the armed threshold can stay for a new one at
// th, the usage being usage now: close enough (RearmSlack) and not yet
// reached (a reached threshold has fired, or will only fire on the way
// down).
func keepArmed(armed, th, usage int64) bool {
	return abs(th-armed) <= RearmSlack && usage < armed
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
