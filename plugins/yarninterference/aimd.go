// Package yarninterference is the YARN interference controller (gate
// YARNInterferenceControl): each interval it sets the CPU budget of the
// YARN hierarchy (its cfs quota) from how long the LS pods' tasks wait for
// a CPU (package collectors/lswait) against a target: additive increase
// while LS waits well below the target, multiplicative decrease when it
// waits above it (AIMD), within a floor and the budget BE suppress allows.
package yarninterference

import "time"

// AIMD is the controller's rule, in milli-CPUs.
//
// Why AIMD and not PID: the plant — the LS tail wait as a function of the
// batch budget — is noisy (a 1-second p99 of a few hundred waits),
// heavy-tailed and changes with the LS load and the batch's mix (a page
// fault-heavy executor harms more per CPU-second than a spinning one), so
// a PID's gains tuned for one load over- or under-react at another, and
// its integral winds up while the budget sits at a bound. AIMD needs no
// model: it cuts by half within one interval of a violation (the budget
// falls geometrically, so it reaches a harmless level in a few intervals
// from any height), probes back up linearly, and holds in a band below the
// target, so that a steady load settles on one budget instead of the
// sawtooth a pure AIMD draws.
type AIMD struct {
	// Target is the signal's bound.
	Target time.Duration
	// HoldBelow is the share of Target under which the budget grows
	// (0.7: it holds between 70% and 100% of the target).
	HoldBelow float64
	// Step is the growth per interval; Decrease the factor of a cut.
	Step     int64
	Decrease float64
	// Floor is the smallest budget.
	Floor int64
}

// Action is what one step did.
type Action string

// The actions.
const (
	Grow    Action = "grow"
	Hold    Action = "hold"
	Cut     Action = "cut"
	Release Action = "release" // no signal: the budget is the ceiling
)

// Next returns the budget after budget, given the signal (ok false: none)
// and the ceiling (what BE suppress allows; never exceeded, even below the
// floor). usage is YARN's CPU use in the last interval (negative: unknown):
// the budget does not grow beyond twice the usage plus a step, so that an
// idle batch does not wind the budget up to the ceiling and hit LS with
// all of it when it starts.
func (a AIMD) Next(budget, ceiling, usage int64, signal time.Duration, ok bool) (int64, Action) {
	clamp := func(v int64) int64 {
		if v < a.Floor {
			v = a.Floor
		}
		if v > ceiling {
			v = ceiling
		}
		return v
	}
	if !ok {
		return ceiling, Release
	}
	switch {
	case signal > a.Target:
		return clamp(int64(float64(budget) * a.Decrease)), Cut
	case float64(signal) < a.HoldBelow*float64(a.Target):
		next := budget + a.Step
		if usage >= 0 && next > 2*usage+a.Step {
			next = max(budget, 2*usage+a.Step)
		}
		n := clamp(next)
		if n == clamp(budget) {
			return n, Hold
		}
		return n, Grow
	default:
		return clamp(budget), Hold
	}
}

// ceiling is the largest budget (milli-CPU): the node's capacity, within
// BE suppress's budget on the besteffort cgroup (beBudget) and YARN's own
// limit on its root (own; both ≤ 0: none).
func ceiling(capacity, beBudget, own int64) int64 {
	c := capacity
	if beBudget > 0 {
		c = min(c, beBudget)
	}
	if own > 0 {
		c = min(c, own)
	}
	return c
}

// start is the budget a step starts from (milli-CPU): the budget in force;
// else, after a signal gap released YARN, the budget before the gap
// (resume); else, on a controller's first step, what YARN has now
// (current: a budget a koordlet before this one left, or YARN's own; ≤ 0:
// unlimited, the ceiling). So neither a koordlet restart nor a gap in the
// signal drops YARN to the floor; a harmed LS cuts from there within an
// interval. Within the floor and the ceiling (the ceiling wins).
func start(budget, resume, current, floor, ceil int64) int64 {
	from := budget
	switch {
	case from > 0:
	case resume > 0:
		from = resume
	case current > 0:
		from = current
	default:
		from = ceil
	}
	return min(max(from, floor), ceil)
}

// milli converts a cfs quota (µs per period; ≤ 0: unlimited) to milli-CPU
// (-1: unlimited).
func milli(quota, period int64) int64 {
	if quota <= 0 || period <= 0 {
		return -1
	}
	return quota * 1000 / period
}
