package yarnledger

import "time"

// PatchPolicy says when a changed YARN allocation goes to the Node. Every
// patch of a Node reaches every watcher of Nodes (the schedulers, the
// controllers): a fleet whose YARN containers come and go every few seconds
// would otherwise patch every Node every interval.
type PatchPolicy struct {
	// MinInterval is the least time between two patches of the Node.
	MinInterval time.Duration
	// Hysteresis (percent of the node's origin batch allocatable, per
	// resource) is the growth of the YARN allocation over the value on the
	// Node that is written as soon as MinInterval allows: the schedulers
	// must not place batch pods on what YARN has taken.
	Hysteresis int64
	// MaxAge is how long a smaller change (or any decrease: capacity
	// coming back to Kubernetes can wait) stays off the Node at most.
	MaxAge time.Duration
}

// Grew reports whether want exceeds onNode by at least pct percent of
// origin in either resource (pct 0: any growth).
func Grew(onNode, want, origin Batch, pct int64) bool {
	cpu, mem := want.MilliCPU-onNode.MilliCPU, want.MemoryBytes-onNode.MemoryBytes
	if pct <= 0 {
		return cpu > 0 || mem > 0
	}
	return (cpu > 0 && cpu*100 >= origin.MilliCPU*pct) || (mem > 0 && mem*100 >= origin.MemoryBytes*pct)
}

// Due returns how long to wait before want, differing from onNode (what the
// Node holds, written at lastPatch), is to be patched: 0 for now. A growth
// of at least Hysteresis waits only for MinInterval; any other change
// waits until onNode is MaxAge old. force (a correction: the Node holds a
// value nobody wanted) waits only for MinInterval.
func (p PatchPolicy) Due(onNode, want, origin Batch, lastPatch, now time.Time, force bool) time.Duration {
	at := lastPatch.Add(p.MinInterval)
	if !force && !Grew(onNode, want, origin, p.Hysteresis) {
		if aged := lastPatch.Add(p.MaxAge); aged.After(at) {
			at = aged
		}
	}
	if !now.Before(at) {
		return 0
	}
	return at.Sub(now)
}
