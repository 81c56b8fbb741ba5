package store

import (
	"sort"
	"sync"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// EventType says what happened to a container.
type EventType int

// Event types.
const (
	Added EventType = iota
	Updated
	Removed
	// ResyncNeeded replaces the events a subscriber fell too far behind to
	// receive (more than SubscriberQueueCap queued). It carries no
	// container: the handler must re-read Store.Snapshot() and take it as
	// the whole truth (a container it knew that is not in the snapshot was
	// removed; any in it may have been added or updated).
	ResyncNeeded
)

// String returns "added", "updated", "removed" or "resync-needed".
func (t EventType) String() string {
	switch t {
	case Added:
		return "added"
	case Updated:
		return "updated"
	case Removed:
		return "removed"
	case ResyncNeeded:
		return "resync-needed"
	}
	return "unknown"
}

// Event is a change of one container. Container is the new value (the last
// value for Removed); Previous is the old value for Updated. Both are nil
// for ResyncNeeded.
type Event struct {
	Type      EventType
	Container *Container
	Previous  *Container
}

type entry struct {
	c   *Container
	gen uint64
	// touched is when an event source last changed the entry.
	touched time.Time
}

// Store is the thread-safe set of the node's YARN containers.
type Store struct {
	mu      sync.RWMutex
	items   map[yarn.ContainerID]*entry
	gen     uint64
	subs    []*subscriber
	nextSub int

	// resync scratch, guarded by mu
	cands   []Container
	candIdx map[yarn.ContainerID]int
	// tombstones remember removals seen by event sources.
	tombstones map[yarn.ContainerID]time.Time
	// nm is what the resyncs had of the NodeManager (nmword.go).
	nm nmAnswers
}

// New returns an empty store.
func New() *Store {
	return &Store{items: map[yarn.ContainerID]*entry{}, candIdx: map[yarn.ContainerID]int{}, tombstones: map[yarn.ContainerID]time.Time{}}
}

// Len returns the number of containers.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}

// Get returns the container with the given id (its canonical string).
func (s *Store) Get(name string) (*Container, bool) {
	id, err := yarn.ParseContainerID(name)
	if err != nil {
		return nil, false
	}
	return s.GetByID(id)
}

// GetByID returns the container with the given id.
func (s *Store) GetByID(id yarn.ContainerID) (*Container, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.items[id]
	if !ok {
		return nil, false
	}
	return e.c, true
}

// Snapshot returns every container, sorted by id. The containers are shared
// and read-only; the slice is the caller's.
func (s *Store) Snapshot() []*Container {
	s.mu.RLock()
	out := make([]*Container, 0, len(s.items))
	for _, e := range s.items {
		out = append(out, e.c)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Subscribe registers handler for every later change and first replays the
// current containers to it as Added events, so a subscriber never misses a
// container. Events reach each handler in order, on a goroutine of its own,
// and a slow handler never blocks the store or other subscribers.
//
// A subscriber's queue is bounded: when more than SubscriberQueueCap events
// would be waiting, they are dropped and the handler gets one ResyncNeeded
// event instead (also for a replay larger than the cap), after which events
// flow again; one line is logged per such episode. Every handler must handle
// ResyncNeeded by re-reading Snapshot().
//
// The returned function unsubscribes; events still queued are dropped.
// Calling it more than once is harmless.
func (s *Store) Subscribe(name string, handler func(Event)) (unsubscribe func()) {
	sub := newSubscriber(name, handler)
	s.mu.Lock()
	initial := make([]Event, 0, len(s.items))
	for _, e := range s.items {
		initial = append(initial, Event{Type: Added, Container: e.c})
	}
	sort.Slice(initial, func(i, j int) bool { return initial[i].Container.Name < initial[j].Container.Name })
	sub.push(initial...)
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	go sub.run()
	return func() {
		s.mu.Lock()
		for i, x := range s.subs {
			if x == sub {
				s.subs = append(s.subs[:i], s.subs[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
		sub.stop()
	}
}

// publish queues ev for every subscriber; called with mu held.
func (s *Store) publish(ev Event) {
	for _, sub := range s.subs {
		sub.push(ev)
	}
}
