package memtrigger

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// DefaultWatchInterval is how often a Watch reads memory.current while
// armed: a crossing wakes the strategy within it. One read costs a few
// microseconds (BenchmarkWatchRead): 40 a second are well under 0.1% of a
// CPU, and the wake-up stays within the v1 thresholds' latency plus 25 ms.
const DefaultWatchInterval = 25 * time.Millisecond

// Watch stands in on cgroup v2, which has no memory usage thresholds, for
// the v1 Threshold: while armed it reads the cgroup's memory.current every
// interval and fires once when the usage reaches the armed threshold (then
// it is spent until armed again, as a v1 threshold is). memory.current is
// the cgroup's page counter, read without flushing statistics: a read costs
// microseconds, and nothing is read while disarmed. The path is read anew
// each time, so a cgroup removed and made again is watched as it is now.
type Watch struct {
	dir      string
	interval time.Duration
	fire     func()

	mu    sync.Mutex
	armed int64 // 0: disarmed
	stop  chan struct{}
	done  chan struct{}
}

// NewWatch checks that dir has a readable memory.current and starts the
// watch, unarmed.
func NewWatch(dir string, interval time.Duration, fire func()) (*Watch, error) {
	w := &Watch{dir: dir, interval: interval, fire: fire, stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := w.Usage(); err != nil {
		return nil, fmt.Errorf("memory usage watch on %s: %w", dir, err)
	}
	go w.loop()
	return w, nil
}

// Dir is the memory cgroup's directory.
func (w *Watch) Dir() string { return w.dir }

// Usage reads the cgroup's memory.current.
func (w *Watch) Usage() (int64, error) {
	return readBytes(filepath.Join(w.dir, "memory.current"))
}

// Arm wakes when node memory used reaches level: the watch fires when
// memory.current reaches ThresholdFor(usage now, usedNow, level). A level
// already reached disarms.
func (w *Watch) Arm(usedNow, level int64) error {
	usage, err := w.Usage()
	if err != nil {
		return err
	}
	th, ok := ThresholdFor(usage, usedNow, level)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = 0
	if ok {
		w.armed = th
	}
	return nil
}

// Armed returns the armed threshold (0: none).
func (w *Watch) Armed() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.armed
}

// Disarm stops the reads until the next Arm.
func (w *Watch) Disarm() {
	w.mu.Lock()
	w.armed = 0
	w.mu.Unlock()
}

// Close ends the watch.
func (w *Watch) Close() error {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	return nil
}

func (w *Watch) loop() {
	defer close(w.done)
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		w.check()
	}
}

// check fires, once, when the usage has reached the armed threshold.
func (w *Watch) check() {
	w.mu.Lock()
	armed := w.armed
	w.mu.Unlock()
	if armed == 0 {
		return
	}
	usage, err := w.Usage()
	if err != nil || usage < armed {
		return
	}
	w.mu.Lock()
	spent := w.armed == armed
	if spent {
		w.armed = 0
	}
	w.mu.Unlock()
	if spent {
		w.fire()
	}
}
