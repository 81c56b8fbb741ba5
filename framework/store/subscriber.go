package store

import (
	"sync"

	"k8s.io/klog/v2"
)

// subscriber delivers events to one handler through an unbounded queue.
type subscriber struct {
	name    string
	handler func(Event)

	mu      sync.Mutex
	queue   []Event
	stopped bool
	wake    chan struct{}
	done    chan struct{}
}

func newSubscriber(name string, handler func(Event)) *subscriber {
	return &subscriber{name: name, handler: handler, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (s *subscriber) push(evs ...Event) {
	if len(evs) == 0 {
		return
	}
	s.mu.Lock()
	if !s.stopped {
		s.queue = append(s.queue, evs...)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) stop() {
	s.mu.Lock()
	s.stopped = true
	s.queue = nil
	s.mu.Unlock()
	close(s.done)
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
			klog.Errorf("yarn: store subscriber %q panicked on %s event of %s: %v", s.name, ev.Type, ev.Container.Name, r)
		}
	}()
	s.handler(ev)
}
