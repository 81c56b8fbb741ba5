package yarnevict

import "time"

// ReleaseHorizon is how far ahead a memory plan looks: the time until the
// victims' memory is released (the SIGTERM grace, then their exit, at most
// a second for a JVM's address space) plus the time until the next check
// would see the node again (the strategy's interval).
func ReleaseHorizon(grace, interval time.Duration) time.Duration {
	return grace + time.Second + interval
}

// ProjectedGrowth is how much v's memory usage grows over horizon at the
// rate measured over GrowthWindow (MemoryGrowth); never negative.
func ProjectedGrowth(v *Victim, horizon time.Duration) int64 {
	if v.MemoryGrowth <= 0 || horizon <= 0 {
		return 0
	}
	return int64(float64(v.MemoryGrowth) * float64(horizon) / float64(GrowthWindow))
}

// ProjectNeed plans for the growth over horizon of whatever is not evicted:
// a plan must release need plus the growth of the victims that stay, so
// that the node does not cross again as soon as the release is done.
// Choosing a grower also removes its growth, so covering
//
//	need + Σ growth(stay) ≤ Σ usage(chosen)
//
// is covering need + Σ growth(all) with each victim counting its usage plus
// its own growth; ProjectNeed returns that need and that measure, for Plan
// unchanged. A victim with no usage (usage 0) counts for nothing, as in
// Plan.
func ProjectNeed(victims []Victim, need int64, horizon time.Duration, usage func(*Victim) int64) (int64, func(*Victim) int64) {
	if need <= 0 {
		return need, usage
	}
	total := need
	for i := range victims {
		if usage(&victims[i]) > 0 {
			total += ProjectedGrowth(&victims[i], horizon)
		}
	}
	return total, func(v *Victim) int64 {
		u := usage(v)
		if u <= 0 {
			return u
		}
		return u + ProjectedGrowth(v, horizon)
	}
}
