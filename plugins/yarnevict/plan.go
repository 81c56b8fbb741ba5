package yarnevict

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/growth"
)

// Plan chooses, from victims in ranked order (see Rank), the ones to evict
// so that their usage covers need, and explains each choice in Victim.Why.
// Victims using nothing are never chosen (evicting them releases nothing).
// The rule, in order:
//
//  1. Reach: the plan goes no further down the ranked order's levels
//     (ApplicationMasters last; lower priority first; a tier that goes
//     before pods first) than the first level at which the victims so far
//     cover the need. When all of them do not, it takes all of them.
//  2. Fewest: within reach it takes the fewest victims that cover the need
//     (k: the k largest cover it, k−1 do not).
//  3. Preferred: each of the k places goes to the first victim, in the
//     order lower level, cause of the pressure (see MarkMemoryCause), least
//     lost work (CPU-seconds spent, compared by powers of two of
//     LostWorkUnit so that small differences do not override the rank),
//     then rank, whose choice still lets the places left cover the rest of
//     the need.
//
// So a victim of a lower priority goes first when it can help cover the
// need within the fewest evictions, and is spared when the need has to
// reach a higher priority anyway and the fewest victims lie there.
func Plan(ranked []Victim, need int64, usage func(*Victim) int64) (chosen []Victim, covered int64) {
	if need <= 0 {
		return nil, 0
	}
	var pool []Victim
	var total int64
	for i := range ranked {
		if usage(&ranked[i]) > 0 {
			pool = append(pool, ranked[i])
		}
	}
	if len(pool) == 0 {
		return nil, 0
	}
	// 1. Reach: the smallest prefix of whole levels that covers the need.
	reach := len(pool)
	for i := range pool {
		total += usage(&pool[i])
		last := i == len(pool)-1 || compareLevel(&pool[i], &pool[i+1]) != 0
		if last && total >= need {
			reach = i + 1
			break
		}
	}
	pool = pool[:reach]
	var reachTotal int64
	for i := range pool {
		reachTotal += usage(&pool[i])
	}
	if reachTotal < need {
		for i := range pool {
			pool[i].Why = explain(&pool[i], fmt.Sprintf("all %d candidates together do not cover the need", len(pool)))
		}
		return pool, reachTotal
	}

	// 2. Fewest: k, from the usages in descending order.
	bySize := make([]int64, len(pool))
	for i := range pool {
		bySize[i] = usage(&pool[i])
	}
	sort.Slice(bySize, func(i, j int) bool { return bySize[i] > bySize[j] })
	k := 0
	for sum := int64(0); sum < need; k++ {
		sum += bySize[k]
	}

	// 3. Preferred: each place to the first victim, in preference order,
	// that keeps the rest coverable with the places left.
	order := make([]int, len(pool))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := &pool[order[i]], &pool[order[j]]
		if c := compareLevel(a, b); c != 0 {
			return c < 0
		}
		if a.Cause != b.Cause {
			return a.Cause
		}
		return lostWorkClass(a) < lostWorkClass(b)
	})
	taken := make([]bool, len(pool))
	left := need
	for places := k; places > 0 && left > 0; places-- {
		best := bestCoverable(pool, order, taken, usage, left, places-1)
		if best < 0 { // cannot happen: k places cover the need
			break
		}
		taken[best] = true
		left -= usage(&pool[best])
	}
	fewest := fmt.Sprintf("the fewest victims covering the need: %d of %d candidates", k, len(pool))
	for i := range pool { // in ranked order
		if taken[i] {
			v := pool[i]
			v.Why = explain(&v, fewest)
			chosen = append(chosen, v)
			covered += usage(&v)
		}
	}
	return chosen, covered
}

// LostWorkUnit is the CPU time below which a victim's lost work counts as
// none: a replacement container's start-up costs about as much.
const LostWorkUnit = 10.0

// lostWorkClass is floor(log2(1 + CPU-seconds spent ÷ LostWorkUnit)): work
// lost compared by order of magnitude (under 10 CPU-s: 0; 10–30: 1; 30–70:
// 2; …).
func lostWorkClass(v *Victim) int {
	return bits.Len64(uint64(max(v.CPUSeconds, 0)/LostWorkUnit+1)) - 1
}

// bestCoverable returns the first victim in order, not yet taken, after
// whose choice the largest `places` other victims not taken cover what is
// left of the need; -1 if none.
func bestCoverable(pool []Victim, order []int, taken []bool, usage func(*Victim) int64, left int64, places int) int {
	var free []int
	for i := range pool {
		if !taken[i] {
			free = append(free, i)
		}
	}
	sort.SliceStable(free, func(i, j int) bool { return usage(&pool[free[i]]) > usage(&pool[free[j]]) })
	// top[n] is the sum of the n largest free usages.
	top := make([]int64, len(free)+1)
	for n, i := range free {
		top[n+1] = top[n] + usage(&pool[i])
	}
	rank := make(map[int]int, len(free)) // pool index → position by size
	for n, i := range free {
		rank[i] = n
	}
	for _, i := range order {
		if taken[i] {
			continue
		}
		u := usage(&pool[i])
		// The places largest other than i.
		others := top[min(places, len(free))]
		if rank[i] < places {
			others = top[min(places+1, len(free))] - u
		}
		if u+others >= left {
			return i
		}
	}
	return -1
}

// explain joins what makes v a victim: its level, its cause, the work it
// loses and the plan's reason.
func explain(v *Victim, plan string) string {
	var parts []string
	if v.Trigger != "" {
		parts = append(parts, v.Trigger)
	}
	level := fmt.Sprintf("priority %d", v.Priority)
	if v.Label != "" {
		level += " (" + v.Label + ")"
	}
	if v.EvictBeforePods {
		level += ", its tier goes before pods"
	}
	if v.IsAM {
		level += ", an ApplicationMaster: no other victim is left"
	}
	parts = append(parts, level)
	if v.Cause {
		parts = append(parts, v.CauseText)
	}
	parts = append(parts, fmt.Sprintf("%.1f CPU-s of work lost", v.CPUSeconds), plan)
	return strings.Join(parts, "; ")
}

// PlanProtectingAMs plans like Plan over the ranked victims, but takes
// ApplicationMasters only when no other victim is left: while any non-AM
// victim exists, the plan holds non-AM victims only, even if they do not
// cover the need (the next cycle re-evaluates once they are gone). Killing
// an AM kills its job attempt, so it is the last resort.
func PlanProtectingAMs(ranked []Victim, need int64, usage func(*Victim) int64) (chosen []Victim, covered int64) {
	var others []Victim
	for _, v := range ranked {
		if !v.IsAM && usage(&v) > 0 {
			others = append(others, v)
		}
	}
	if len(others) > 0 {
		return Plan(others, need, usage)
	}
	return Plan(ranked, need, usage)
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
			total += growth.Projected(victims[i].MemoryGrowth, horizon)
		}
	}
	return total, func(v *Victim) int64 {
		u := usage(v)
		if u <= 0 {
			return u
		}
		return u + growth.Projected(v.MemoryGrowth, horizon)
	}
}
