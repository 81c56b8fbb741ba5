package relief

import "github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"

// The memory relief ladder's first rung (YARNMemoryRelief, cgroup v2):
// as node memory nears the BE memory evict threshold, the YARN hierarchy
// root's memory.high is lowered so that batch's growth is slowed by
// reclaim and throttling instead of being killed at the threshold, and
// given back as headroom returns. The decision is pure (ThrottlePlan);
// Relief does the I/O.

// ThrottleInput is what one throttle decision reads.
type ThrottleInput struct {
	// Used is the node's memory used (koordlet's: MemTotal −
	// MemAvailable, see nodeMemoryUsed); Threshold the level of
	// memoryEvictThresholdPercent, in bytes; Band how far below it the
	// throttle starts, in bytes.
	Used, Threshold, Band int64
	// Current is the YARN root's memory.current; Reclaimable its file
	// pages (active_file + inactive_file: page cache, reclaimable without
	// harm; shmem is on the anon LRU and is not in them).
	Current, Reclaimable int64
	// Throttled: a memory.high of koordlet's is on the root now;
	// Written is its value (0: not known, e.g. left by an earlier
	// koordlet).
	Throttled bool
	Written   int64
	// Own is the root's own memory.high (cgroups.MemoryUnlimited: none):
	// the throttle never raises the root above it.
	Own int64
}

// ThrottleDecision is the memory.high to hold on the YARN root.
type ThrottleDecision struct {
	// High is the memory.high to write; Release: none of koordlet's
	// (the own value back).
	High    int64
	Release bool
	// Floor: the throttle is at its floor (what the root holds that
	// reclaim cannot take, plus a margin): it cannot keep the node below
	// the threshold if the pressure grows on; the next rungs act.
	Floor bool
	// Held: at the floor, the value written is held below the floor the
	// root needs now: the root's anon memory grew into the margin under
	// the throttle, its allocators are slowed (memory.high kills nothing,
	// and with no swap anon memory is never reclaimed). Left alone that is
	// a stall without bound (see FloorHold).
	Held bool
	// Start is the node usage at which the throttle starts.
	Start int64
}

// throttleMarginMin and throttleMarginShift size the margin above what
// the root holds that reclaim cannot take: at least 64 MiB, or 1/32 of it
// (kernel memory, page tables and the working set of files the
// containers read keep moving; below that the throttle's reclaim
// thrashes and memory.high stalls the containers instead of slowing them).
const (
	throttleMarginMin   = 64 << 20
	throttleMarginShift = 5
)

// ThrottleFloor is the lowest memory.high the throttle writes on a root
// charged current bytes of which reclaimable are page cache: what reclaim
// cannot take (anon, shmem, kernel memory) plus a margin. Lower would not
// be a throttle but a stall (there is no swap on a Kubernetes node: anon
// memory above memory.high is never reclaimed, its allocator only slowed).
func ThrottleFloor(current, reclaimable int64) int64 {
	hard := max(current-max(reclaimable, 0), 0)
	return hard + max(int64(throttleMarginMin), hard>>throttleMarginShift)
}

// ThrottlePlan decides the YARN root's memory.high. The throttle starts at
// Threshold − Band and holds node usage near the band's middle: the root
// may grow by what the node has left to the middle, on top of what
// reclaim cannot take (its page cache is taken first: the memory.high
// write reclaims it at once), never written below ThrottleFloor. At the
// floor the throttle holds the value it wrote rather than chasing a
// container that grows past it: that growth is the throttle at work (the
// kernel slows the allocator the more the root is above memory.high, it
// kills nothing), and raising memory.high with it would let the grower
// through a margin at every check. It is released when usage falls a
// quarter band below the start (hysteresis: a throttle released and set
// again every check would thrash the cache).
func ThrottlePlan(in ThrottleInput) ThrottleDecision {
	band := max(in.Band, 0)
	start := in.Threshold - band
	d := ThrottleDecision{Start: start}
	if in.Threshold <= 0 || band == 0 {
		d.Release = true
		return d
	}
	if in.Used < start-band/4 || (!in.Throttled && in.Used < start) {
		d.Release = true
		return d
	}
	floor := ThrottleFloor(in.Current, in.Reclaimable)
	middle := start + band/2
	allowance := middle - in.Used
	high := floor + max(allowance, 0)
	if allowance <= 0 {
		high = floor
	}
	d.Floor = high <= floor
	own := in.Own
	if own <= 0 {
		own = cgroups.MemoryUnlimited
	}
	if d.Floor && in.Throttled && in.Written > 0 && in.Written < high {
		high = in.Written // hold: the root grew past it under the throttle
		d.Held = in.Written < own
	}
	d.High = min(high, own)
	return d
}
