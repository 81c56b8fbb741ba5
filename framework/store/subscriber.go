package store

import (
	"sync"

	"k8s.io/klog/v2"
)

// SubscriberQueueCap bounds the events queued for one subscriber. A
// subscriber that falls further behind loses its queued events and gets one
// ResyncNeeded event instead (see Store.Subscribe).
const SubscriberQueueCap = 4096

// subscriber delivers events to one handler through a bounded queue.
type subscriber struct {
	name    string
	handler func(Event)
	limit   int

	mu      sync.Mutex
	queue   []Event
	stopped bool
	// overflowed is true from an overflow until the handler is given the
	// ResyncNeeded event: the queue holds only that event, and what is
	// pushed meanwhile is covered by it.
	overflowed bool
	// overflows counts overflow episodes.
	overflows int
	wake      chan struct{}
	done      chan struct{}
	stopOnce  sync.Once
}

func newSubscriber(name string, handler func(Event)) *subscriber {
	return &subscriber{name: name, handler: handler, limit: SubscriberQueueCap, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// push queues evs. Past the limit the queue is replaced by one ResyncNeeded
// event: the handler reads the store's snapshot when it gets there, which
// holds every change pushed until then, so nothing is lost but history.
func (s *subscriber) push(evs ...Event) {
	if len(evs) == 0 {
		return
	}
	s.mu.Lock()
	switch {
	case s.stopped, s.overflowed:
	case len(s.queue)+len(evs) > s.limit:
		dropped := len(s.queue) + len(evs)
		s.queue = []Event{{Type: ResyncNeeded}}
		s.overflowed = true
		s.overflows++
		klog.Warningf("yarn: store subscriber %q fell more than %d events behind: dropped %d queued events, it will re-read the whole store (further events are dropped until it does)", s.name, s.limit, dropped)
	default:
		s.queue = append(s.queue, evs...)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// stop ends delivery; queued events are dropped. Calling it again does
// nothing.
func (s *subscriber) stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		s.queue = nil
		s.mu.Unlock()
		close(s.done)
	})
}

func (s *subscriber) run() {
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		for {
			s.mu.Lock()
			if s.stopped || len(s.queue) == 0 {
				s.queue = s.queue[:0:0]
				s.mu.Unlock()
				break
			}
			batch := s.queue
			s.queue = nil
			s.overflowed = false // the handler is about to get the ResyncNeeded
			s.mu.Unlock()
			for _, ev := range batch {
				s.deliver(ev)
			}
		}
	}
}

// deliver calls the handler, containing a panic so one bad subscriber
// cannot take koordlet down.
func (s *subscriber) deliver(ev Event) {
	defer func() {
		if r := recover(); r != nil {
			name := "the store"
			if ev.Container != nil {
				name = ev.Container.Name
			}
			klog.Errorf("yarn: store subscriber %q panicked on %s event of %s: %v", s.name, ev.Type, name, r)
		}
	}()
	s.handler(ev)
}
