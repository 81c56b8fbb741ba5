package relief

import (
	"time"
)

// The memory relief ladder's ResourceManager rung (YARNMemoryRelief with
// YARNRMPreemption): a pressure that grows slowly enough to leave the
// ResourceManager time to preempt is first asked of it, as a capacity
// below YARN's allocation on the node (the RM sync's over-commit path), so
// that the ApplicationMasters see PREEMPTED, which MapReduce and Spark do
// not count as failures; a fast one meets the kill at the threshold as
// before. The decision is pure (RMAskPlan); the growth comes from the
// strategy's checks (growth.Tracker).

// RMAskInput is what one decision reads.
type RMAskInput struct {
	// Used is node memory used now; Start the throttle band's start,
	// Threshold and Lower the levels of memoryEvictThresholdPercent and
	// memoryEvictLowerPercent, all in bytes.
	Used, Start, Threshold, Lower int64
	// Rate is node memory's growth, bytes a second (growth.Tracker).
	Rate float64
	// RMDelay is how long the RM takes to release once asked: the RM
	// sync's interval and request timeout, the over-commit timeout and the
	// grace for the preemption to show.
	RMDelay time.Duration
	// AllocatedMB is YARN's memory allocation on the node (MiB).
	AllocatedMB int64
}

// RMAskDecision says whether to ask the RM and for how much.
type RMAskDecision struct {
	Ask bool
	// ReleaseMB is the YARN allocation to release (MiB).
	ReleaseMB int64
	// TimeToThreshold is when usage reaches the threshold at the rate
	// (0: not growing, or there already).
	TimeToThreshold time.Duration
}

// RMAskPlan asks the RM for a release when node memory is in the band,
// growing, and would reach the threshold later than the RM can release:
// enough to bring usage, as projected to when the RM has released, down
// to the lower percent, at most YARN's allocation.
func RMAskPlan(in RMAskInput) RMAskDecision {
	var d RMAskDecision
	if in.Used < in.Start || in.Used >= in.Threshold || in.Rate <= 0 || in.AllocatedMB <= 0 {
		return d
	}
	d.TimeToThreshold = time.Duration(float64(in.Threshold-in.Used) / in.Rate * float64(time.Second))
	if d.TimeToThreshold <= in.RMDelay {
		return d // too fast for the RM: the kill at the threshold
	}
	projected := in.Used + int64(in.Rate*in.RMDelay.Seconds())
	need := projected - in.Lower
	if need <= 0 {
		return d
	}
	d.Ask = true
	d.ReleaseMB = min((need+1<<20-1)>>20, in.AllocatedMB)
	return d
}
