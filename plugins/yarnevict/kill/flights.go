package kill

import (
	"fmt"
	"sync"
	"time"
)

// Flights coordinates kills across koordlet's evict strategies, which run in
// goroutines of their own and may pick the same container: one kill in
// flight per container, and a container evicted a moment ago is not picked
// again (the store lists it until the next resync), so one eviction gives
// one Event and one count. The zero value is not usable: use NewFlights. A
// nil *Flights coordinates nothing.
type Flights struct {
	mu       sync.Mutex
	inFlight map[string]bool
	// idle is closed when the last kill in flight ends (Wait); a new one
	// is made when a kill begins with none in flight.
	idle    chan struct{}
	evicted map[string]time.Time
	// keep is how long an evicted container stays excluded.
	keep time.Duration
	now  func() time.Time
}

// NewFlights returns an empty record; evicted containers stay excluded for
// keep.
func NewFlights(keep time.Duration) *Flights {
	idle := make(chan struct{})
	close(idle)
	return &Flights{inFlight: map[string]bool{}, idle: idle, evicted: map[string]time.Time{}, keep: keep, now: time.Now}
}

// Busy reports whether the container is being killed or was evicted within
// the keep period.
func (f *Flights) Busy(name string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruneLocked()
	_, done := f.evicted[name]
	return f.inFlight[name] || done
}

func (f *Flights) begin(name string) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruneLocked()
	if f.inFlight[name] {
		return fmt.Errorf("container %s: %w", name, ErrInFlight)
	}
	if _, done := f.evicted[name]; done {
		return fmt.Errorf("container %s: %w", name, ErrAlreadyEvicted)
	}
	if len(f.inFlight) == 0 {
		f.idle = make(chan struct{})
	}
	f.inFlight[name] = true
	return nil
}

func (f *Flights) end(name string, evicted bool) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inFlight[name] {
		delete(f.inFlight, name)
		if len(f.inFlight) == 0 {
			close(f.idle)
		}
	}
	if evicted {
		f.evicted[name] = f.now()
	}
}

// Wait blocks until no kill is in flight or timeout passes; it reports
// whether none is. koordlet's shutdown calls it so that a kill ends before
// the process does.
func (f *Flights) Wait(timeout time.Duration) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	idle, none := f.idle, len(f.inFlight) == 0
	f.mu.Unlock()
	if none {
		return true // before the select, which picks at random when both are ready
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-idle:
		return true
	case <-timer.C:
		return false
	}
}

func (f *Flights) pruneLocked() {
	now := f.now()
	for name, at := range f.evicted {
		if now.Sub(at) > f.keep {
			delete(f.evicted, name)
		}
	}
}
