package cgroupwatch

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

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
