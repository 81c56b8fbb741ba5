package cgroups

import (
	"maps"
	"sync"
	"sync/atomic"
)

// OwnChargeSlack is how much more memory a container's processes may hold
// than its memory cgroup is charged for while the charge still counts as
// the container's own: the per-process counters and the cgroup's agree
// within 0.01% (TestRealKernelProcessVsCgroupMemory), and a process moved
// at its exec leaves well under this behind.
const OwnChargeSlack = 1 << 20

// ChargeTruth is a container's memory decided from what its memory cgroup
// is charged and what its processes hold.
type ChargeTruth struct {
	// Usage is the container's memory: its cgroup's charge plus Elsewhere.
	Usage int64
	// Elsewhere is memory its processes hold that is charged to another
	// memory cgroup: the one they were moved from (the NodeManager pod's),
	// since cgroup v2 and v1 kernels from 6.8 move no charges.
	Elsewhere int64
	// Own is true when Elsewhere is at most OwnChargeSlack: the charge is
	// the container's own and its processes need not be read any more.
	Own bool
}

// TrueMemory decides a container's memory. charge is its memory cgroup's
// usage (MemoryStat.Usage: anon + unevictable), procs its processes'
// (ProcessMemory.Usage: RssAnon + RssShmem), leftAtMove what its processes
// held when they were moved in from another memory cgroup (an upper bound
// of what stayed charged there; < 0: not known, unbounded).
//
// The processes' memory exceeds the charge by what is charged elsewhere
// (anonymous memory is private, mapped by the processes that hold it); the
// excess is capped by leftAtMove, so that pages the per-process counters
// count more than once (shared memory mapped by several processes) never
// add more than what could have stayed behind. The charge alone counts
// once that excess is gone: the pages left behind were freed, or swapped
// out and back in (charged where they fault).
func TrueMemory(charge, procs, leftAtMove int64) ChargeTruth {
	charge = max(charge, 0)
	elsewhere := max(procs-charge, 0)
	if leftAtMove >= 0 {
		elsewhere = min(elsewhere, leftAtMove)
	}
	return ChargeTruth{Usage: charge + elsewhere, Elsewhere: elsewhere, Own: elsewhere <= OwnChargeSlack}
}

// LeftCharges records, per container, how much memory its processes held
// when koordlet moved them into the container's memory cgroup from another
// one: the memory that stayed charged there. The mover adds, the readers of
// container memory (the usage collector, memory evict) measure such a
// container by TrueMemory until its charge is its own and then Settle it.
// Reads take no lock (a copy-on-write map: writes are rare, one per
// process moved while holding memory). A nil *LeftCharges records nothing.
type LeftCharges struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]int64]
}

// NewLeftCharges returns an empty record.
func NewLeftCharges() *LeftCharges { return &LeftCharges{} }

// Add records that container name's processes held bytes when moved in.
func (l *LeftCharges) Add(name string, bytes int64) {
	if l == nil || bytes <= 0 {
		return
	}
	l.update(func(m map[string]int64) { m[name] += bytes })
}

// Get returns what container name left charged elsewhere when moved in; ok
// is false when nothing is recorded (its charge is its own).
func (l *LeftCharges) Get(name string) (int64, bool) {
	if l == nil {
		return 0, false
	}
	p := l.m.Load()
	if p == nil {
		return 0, false
	}
	v, ok := (*p)[name]
	return v, ok
}

// Len returns how many containers are recorded.
func (l *LeftCharges) Len() int {
	if l == nil {
		return 0
	}
	if p := l.m.Load(); p != nil {
		return len(*p)
	}
	return 0
}

// Settle forgets container name's record if it still is seen (the value
// Get returned): its charge is its own now, or it is gone. A move recorded
// since keeps the record.
func (l *LeftCharges) Settle(name string, seen int64) {
	if l == nil {
		return
	}
	l.update(func(m map[string]int64) {
		if v, ok := m[name]; ok && v == seen {
			delete(m, name)
		}
	})
}

// Forget drops container name's record (the container is gone).
func (l *LeftCharges) Forget(name string) {
	if l == nil {
		return
	}
	if _, ok := l.Get(name); !ok {
		return
	}
	l.update(func(m map[string]int64) { delete(m, name) })
}

func (l *LeftCharges) update(f func(map[string]int64)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m map[string]int64
	if p := l.m.Load(); p != nil {
		m = maps.Clone(*p)
	} else {
		m = map[string]int64{}
	}
	f(m)
	l.m.Store(&m)
}
