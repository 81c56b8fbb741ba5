// Package rmrelease records a release of YARN allocations that the
// ResourceManager was asked for (YARNRMPreemption): the ledger's RM sync
// pushed a capacity below YARN's allocation on the node with an over-commit
// timeout, so the RM preempts the containers above it once the timeout has
// passed. koordlet's allocatable evict reads it to hold its own kills of
// YARN containers until then. The RM sync writes it and the evictor reads
// it; neither knows the other.
package rmrelease

import (
	"sync"
	"time"
)

// DefaultGrace is how long after the RM's timeout the release is still
// taken as under way when the ask says nothing else (Ask.Grace 0): the RM
// preempts at the node's first heartbeat after the timeout (every second by
// default) and the NodeManager then stops the container and reports it,
// which the NodeManager informer sees at its next resync. The RM sync
// derives the grace from the RM's heartbeat interval instead where it can
// read it (see GraceFor).
const DefaultGrace = 5 * time.Second

// GraceFor is the grace after the timeout for an RM whose node heartbeat
// interval is heartbeat, the NodeManager informer resyncing every resync:
// one heartbeat for the RM to see the timeout passed and preempt, one more
// for the NodeManager to be told in a heartbeat's answer, stop the
// container (its SIGTERM, SIGKILL delay) and report it, the informer's
// resync to see it, and a second of slack; never below floor.
func GraceFor(heartbeat, resync, floor time.Duration) time.Duration {
	return max(2*heartbeat+resync+time.Second, floor)
}

// Ask is one release asked of the ResourceManager.
type Ask struct {
	// At is when the capacity was pushed.
	At time.Time `json:"at"`
	// Timeout is the over-commit timeout sent with it: the RM's deadline
	// is At+Timeout.
	Timeout time.Duration `json:"timeoutNanos"`
	// Grace is how long after the RM's deadline its preemption may take
	// to show (0: DefaultGrace).
	Grace time.Duration `json:"graceNanos,omitempty"`
	// MemoryMB and VCores are YARN's allocation above the pushed capacity:
	// what the RM is to release.
	MemoryMB int64 `json:"memoryMB"`
	VCores   int64 `json:"vCores"`
}

// Deadline is when the RM should have released: the timeout and the grace
// after the first push.
func (a Ask) Deadline() time.Time {
	g := a.Grace
	if g <= 0 {
		g = DefaultGrace
	}
	return a.At.Add(a.Timeout + g)
}

// RMDeadline is when the RM preempts: the timeout after the first push.
func (a Ask) RMDeadline() time.Time { return a.At.Add(a.Timeout) }

// Capacity is a node resource in the ResourceManager's units.
type Capacity struct {
	MemoryMB int64 `json:"memoryMB"`
	VCores   int64 `json:"vCores"`
}

// Window holds the release under way, if any, and the capacity the
// ResourceManager was last seen to hold for the node. The zero value is
// ready.
type Window struct {
	mu  sync.Mutex
	ask *Ask
	// rmHolds is what the RM holds for the node (an accepted push or a
	// read-back); nil: not known (never pushed, or an RM error since).
	rmHolds *Capacity
	// released and expired count the asks that ended each way.
	released, expired int
	// usageCapMB caps YARN's memory capacity for node memory usage
	// (memory relief's ask; -1: none): the RM sync pushes at most it.
	usageCapMB int64
	usageAsked bool
}

// AskUsage caps YARN's memory capacity on the node at capMB for node
// memory usage (memory relief's ResourceManager rung: YARN's allocation
// when asked less the release it needs). The cap is absolute, so that once
// the RM released that much it preempts nothing more; during an episode
// it only goes down: a higher ask keeps the lower cap.
func (w *Window) AskUsage(capMB int64) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	capMB = max(capMB, 0)
	if w.usageAsked {
		capMB = min(capMB, w.usageCapMB)
	}
	w.usageCapMB, w.usageAsked = capMB, true
}

// UsageAsk returns the cap asked for node memory usage, if any.
func (w *Window) UsageAsk() (capMB int64, ok bool) {
	if w == nil {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.usageCapMB, w.usageAsked
}

// EndUsage withdraws the release asked for node memory usage (the
// pressure is over): the RM sync pushes YARN's capacity again.
func (w *Window) EndUsage() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.usageCapMB, w.usageAsked = 0, false
}

// Start records a release asked of the RM. While one is under way (the
// over-commit did not end) a later ask updates what is to be released but
// keeps the first deadline: the RM sync sends the RM the time remaining to
// it (Remaining), so neither the RM's timer nor koordlet's restarts when
// the capacity moves during the over-commit. The grace is the longer of
// the two.
func (w *Window) Start(a Ask) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ask != nil {
		a.At, a.Timeout, a.Grace = w.ask.At, w.ask.Timeout, max(a.Grace, w.ask.Grace)
	}
	w.ask = &a
}

// Remaining is the over-commit timeout to send with a push at now: the
// time left to the deadline of the release under way (at least 0: the RM
// preempts at once), or timeout when none is under way.
func (w *Window) Remaining(now time.Time, timeout time.Duration) time.Duration {
	if w == nil {
		return timeout
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ask == nil {
		return timeout
	}
	return max(w.ask.RMDeadline().Sub(now), 0)
}

// End records that nothing is above the capacity any more: the RM
// released (or the capacity grew back). It reports whether an ask was
// under way and whether it ended before its deadline.
func (w *Window) End(now time.Time) (wasPending, inTime bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ask == nil {
		return false, false
	}
	inTime = !now.After(w.ask.Deadline())
	if inTime {
		w.released++
	} else {
		w.expired++
	}
	w.ask = nil
	return true, inTime
}

// Pending returns the ask under way at now: asked, and its deadline not
// passed. After the deadline the evictor acts on its own.
func (w *Window) Pending(now time.Time) (Ask, bool) {
	if w == nil {
		return Ask{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ask == nil || now.After(w.ask.Deadline()) {
		return Ask{}, false
	}
	return *w.ask, true
}

// RMHolds records what the ResourceManager holds for the node: the
// capacity it accepted or a read-back showed. ok false forgets it (an RM
// error: what the RM holds is not known).
func (w *Window) RMHolds(c Capacity, ok bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !ok {
		w.rmHolds = nil
		return
	}
	w.rmHolds = &c
}

// HeldByRM returns what the ResourceManager was last seen to hold for the
// node, if known. The evictor reads it before it kills a YARN container
// for an over-commit: the RM places a replacement on a node whose
// capacity it still holds larger.
func (w *Window) HeldByRM() (Capacity, bool) {
	if w == nil {
		return Capacity{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rmHolds == nil {
		return Capacity{}, false
	}
	return *w.rmHolds, true
}

// Status is the window's state for /yarn/ledger.
type Status struct {
	// Pending is the ask under way (also past its deadline until the
	// over-commit ends).
	Pending *Ask `json:"pending,omitempty"`
	// Released counts the asks whose over-commit ended by the deadline,
	// Expired those that ended later.
	Released int `json:"released"`
	Expired  int `json:"expired"`
	// UsageCapMB is the cap on YARN's memory capacity memory relief asks
	// for node memory usage (nil: none).
	UsageCapMB *int64 `json:"usageCapMB,omitempty"`
}

// Status returns a copy of the window's state.
func (w *Window) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Status{Released: w.released, Expired: w.expired}
	if w.usageAsked {
		c := w.usageCapMB
		s.UsageCapMB = &c
	}
	if w.ask != nil {
		a := *w.ask
		s.Pending = &a
	}
	return s
}
