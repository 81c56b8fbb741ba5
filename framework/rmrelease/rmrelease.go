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

// Grace is how long after the RM's timeout the release is still taken as
// under way: the RM preempts at the node's first heartbeat after the
// timeout (every second by default) and the NodeManager then stops the
// container and reports it, which the NodeManager informer sees at its
// next resync.
const Grace = 5 * time.Second

// Ask is one release asked of the ResourceManager.
type Ask struct {
	// At is when the capacity was pushed.
	At time.Time `json:"at"`
	// Timeout is the over-commit timeout sent with it.
	Timeout time.Duration `json:"timeoutNanos"`
	// MemoryMB and VCores are YARN's allocation above the pushed capacity:
	// what the RM is to release.
	MemoryMB int64 `json:"memoryMB"`
	VCores   int64 `json:"vCores"`
}

// Deadline is when the RM should have released: the timeout and Grace
// after the push.
func (a Ask) Deadline() time.Time { return a.At.Add(a.Timeout + Grace) }

// Window holds the release under way, if any. The zero value is ready.
type Window struct {
	mu  sync.Mutex
	ask *Ask
	// released and expired count the asks that ended each way.
	released, expired int
}

// Start records a release asked of the RM; a later ask replaces an
// earlier one (the RM keeps only the latest timeout).
func (w *Window) Start(a Ask) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ask = &a
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

// Status is the window's state for /yarn/ledger.
type Status struct {
	// Pending is the ask under way (also past its deadline until the
	// over-commit ends).
	Pending *Ask `json:"pending,omitempty"`
	// Released counts the asks whose over-commit ended by the deadline,
	// Expired those that ended later.
	Released int `json:"released"`
	Expired  int `json:"expired"`
}

// Status returns a copy of the window's state.
func (w *Window) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Status{Released: w.released, Expired: w.expired}
	if w.ask != nil {
		a := *w.ask
		s.Pending = &a
	}
	return s
}
