// Package logonce keeps the keys a component has already said something
// about, so a condition that holds for many ticks (an unsupported kernel
// feature, a pod without a cgroup) makes one log line, not one a tick.
package logonce

import "sync"

// Set is the set of keys already said. The zero value is ready to use and
// safe for concurrent use.
type Set struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// First reports whether key is new, and records it: true once per key
// until Forget.
func (s *Set) First(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[key]; ok {
		return false
	}
	if s.seen == nil {
		s.seen = map[string]struct{}{}
	}
	s.seen[key] = struct{}{}
	return true
}

// Do runs f the first time key is seen.
func (s *Set) Do(key string, f func()) {
	if s.First(key) {
		f()
	}
}

// Forget lets key be said again (the condition ended; its return is news).
// It reports whether key was held (the condition had been said).
func (s *Set) Forget(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.seen[key]
	delete(s.seen, key)
	return ok
}

// Len is how many keys are held.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}
