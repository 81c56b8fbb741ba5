package yarnadopt

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// nmListTimeout bounds one list of the NodeManager's containers.
const nmListTimeout = 2 * time.Second

// nmLister asks the NodeManager for its containers when a process names
// one the store does not know yet. The ask runs in its own goroutine,
// never under the adopter's lock and never in its loop: at most one at a
// time and one per interval however many unknown ids arrive; an id the NM
// did not list is asked for again only after missRetry. When a list
// arrives, ready gets a signal: the loop adopts the processes that waited
// for it.
type nmLister struct {
	list      func(ctx context.Context) ([]yarn.NMContainer, error)
	now       func() time.Time
	interval  time.Duration
	missRetry time.Duration
	timeout   time.Duration
	// ready is signalled (never blocking) when a list arrives.
	ready chan struct{}

	mu       sync.Mutex
	seen     map[string]string // live container → user, of the last list
	at       time.Time         // when the last ask began
	inflight bool
	wanted   map[string]bool      // ids named since the last ask began (asked for by the next)
	miss     map[string]time.Time // when each id the NM did not list was asked for
}

func newNMLister(list func(ctx context.Context) ([]yarn.NMContainer, error), now func() time.Time) *nmLister {
	return &nmLister{list: list, now: now, interval: nmListMinInterval, missRetry: nmMissRetry, timeout: nmListTimeout,
		ready: make(chan struct{}, 1), wanted: map[string]bool{}, miss: map[string]time.Time{}}
}

// lookup reports whether the last list holds id as not finished, and its
// user. When it does not, and id is due, a list is asked for in the
// background (see nmLister); asked reports that id waits for it.
func (l *nmLister) lookup(id string) (user string, ok, asked bool) {
	if l == nil {
		return "", false, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if user, ok := l.seen[id]; ok {
		return user, true, false
	}
	now := l.now()
	if now.Sub(l.miss[id]) < l.missRetry {
		return "", false, false
	}
	l.wanted[id] = true
	if l.inflight {
		return "", false, true
	}
	// At most one list per interval: within it the ask is deferred to the
	// interval's end (not left to the next scan, seconds away: an exec
	// right after another's would miss its adoption at exec).
	wait := max(l.interval-now.Sub(l.at), 0)
	l.inflight, l.at = true, now.Add(wait)
	go func() {
		if wait > 0 {
			time.Sleep(wait)
		}
		l.mu.Lock()
		asking := l.wanted
		l.wanted = map[string]bool{}
		l.mu.Unlock()
		l.ask(asking)
	}()
	return "", false, true
}

// ask lists the NodeManager's containers (outside every lock of the
// adopter) and records the list.
func (l *nmLister) ask(asking map[string]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	list, err := l.list(ctx)
	cancel()
	l.mu.Lock()
	l.inflight = false
	if err != nil {
		klog.V(3).Infof("yarn: list the NodeManager's containers (%d unknown ids named): %v", len(asking), err)
	} else {
		l.seen = make(map[string]string, len(list))
		for _, c := range list {
			if !yarn.IsTerminalState(c.State) {
				l.seen[c.ID.String()] = c.User
			}
		}
		if len(l.miss) > 1024 {
			l.miss = map[string]time.Time{}
		}
		for id := range asking {
			if _, ok := l.seen[id]; !ok {
				l.miss[id] = l.at
			}
		}
	}
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// The NodeManager lists asked for on demand (a process names a container
// the store does not know yet) are bounded: one at a time and at most one
// every nmListMinInterval however many ids are unknown, outside the
// adopter's loop and lock (nmLister); an id the NM did not list is asked
// for again only after nmMissRetry.
const (
	nmListMinInterval = 20 * time.Millisecond
	nmMissRetry       = time.Second
)

// nmReady is signalled when a NodeManager list asked for arrives (nil
// without a NodeManager to ask: never).
func (a *Adopter) nmReady() <-chan struct{} {
	if a.nm == nil {
		return nil
	}
	return a.nm.ready
}
