// Package yarninterference is the YARN interference controller (gate
// YARNInterferenceControl): feedback on top of BE suppress's feed-forward.
// Upstream's static formula stays the budget of batch, computed and written
// by upstream's own suppress every period,
//
//	budget = capacity × cpuSuppressThresholdPercent − LS usage − system,
//
// and the controller moves the threshold that formula uses from how long
// the LS pods' tasks wait behind batch (package collectors/lswait) against
// a target: up a step while the worst LS pod waits well below the target,
// down by half the budget when it waits above it, within [0, 100] and never
// cutting the budget below a floor. The feed-forward follows LS's usage
// every period; the feedback finds the threshold at which LS's tail is
// held. With the signal lost, or the gate off, the threshold is the
// NodeSLO's: exactly static suppress.
package yarninterference

import "time"

// Rule is the controller's rule on the threshold's offset from the
// NodeSLO's, in percent of the node's CPU.
//
// Why additive increase and a multiplicative decrease of the budget: the
// plant — the LS tail wait as a function of batch's budget — is noisy, heavy
// tailed and changes with LS's load and batch's mix, so gains tuned for one
// load over- or under-react at another. Halving the budget on a violation
// reaches a harmless level in a few intervals from any height; a step up per
// quiet interval probes back; the band between HoldBelow × Target and
// Target holds a steady load on one threshold instead of a sawtooth. The
// decrease is of the budget, not of the threshold: at 60% LS load a
// threshold of 70% is a budget of a tenth of the node, and halving it is
// five points of threshold, where halving the threshold would stop batch.
type Rule struct {
	// Target is the signal's bound.
	Target time.Duration
	// HoldBelow is the share of Target under which the threshold grows
	// (0.7: it holds between 70% and 100% of the target).
	HoldBelow float64
	// Step is the growth of the threshold per interval (percent points).
	Step float64
	// Floor is the smallest budget a cut leaves, in percent of the node.
	Floor float64
	// GrowAfter is how many quiet intervals in a row (the signal under
	// HoldBelow × Target) each step up waits for; 0 or 1: every quiet
	// interval steps up. A cut comes at the first interval above the
	// target either way: cut at once, grow after a hold, so that fewer
	// probes go past the point where LS's tail turns (each such interval
	// is paid in the tail).
	GrowAfter int
}

// State is what the rule carries from one interval to the next.
type State struct {
	// Offset is the threshold's offset from the NodeSLO's, in percent
	// points.
	Offset float64 `json:"offset"`
	// Quiet counts the quiet intervals in a row since the last step up,
	// cut or interval in the hold band.
	Quiet int `json:"quiet"`
}

// Action is what one step did.
type Action string

// The actions.
const (
	Grow    Action = "grow"
	Hold    Action = "hold"
	Cut     Action = "cut"
	Release Action = "release" // no signal: the NodeSLO's threshold
)

// Next returns the state after s, for the NodeSLO's threshold base
// (percent), the BE budget in force (percent of the node; negative:
// unlimited or unknown), batch's CPU use in the last interval (percent of
// the node; negative: unknown) and the signal (ok false: none, the state
// kept). The threshold base + offset stays within [0, 100]. The threshold
// does not grow while batch uses less than half its budget less a step, so
// that an idle batch does not wind the threshold up and hit LS with all of
// it when it starts; nor before GrowAfter quiet intervals in a row.
func (r Rule) Next(s State, base, budget, usage float64, signal time.Duration, ok bool) (State, Action) {
	if !ok {
		return s, Release
	}
	clamp := func(v float64) float64 { return min(max(v, -base), 100-base) }
	offset := s.Offset
	switch {
	case signal > r.Target:
		return halve(clamp, offset, budget, r.Step, r.Floor)
	case float64(signal) < r.HoldBelow*float64(r.Target):
		return grow(clamp, s, budget, usage, r.Step, r.GrowAfter)
	default:
		return State{Offset: clamp(offset)}, Hold
	}
}

// halve cuts the budget by half, at least a step, never leaving less than
// floor (at the floor: a hold).
func halve(clamp func(float64) float64, offset, budget, step, floor float64) (State, Action) {
	cut := step
	if budget > 0 {
		cut = max(cut, budget/2)
		cut = min(cut, budget-floor)
	}
	if cut <= 0 {
		return State{Offset: clamp(offset)}, Hold
	}
	return State{Offset: clamp(offset - cut)}, Cut
}

// grow steps the offset up after growAfter quiet intervals in a row,
// unless batch uses less than half its budget less a step.
func grow(clamp func(float64) float64, s State, budget, usage, step float64, growAfter int) (State, Action) {
	offset := clamp(s.Offset)
	quiet := s.Quiet + 1
	if usage >= 0 && budget >= 0 && budget > 2*usage+step {
		return State{Offset: offset, Quiet: quiet}, Hold
	}
	if quiet < growAfter {
		return State{Offset: offset, Quiet: quiet}, Hold
	}
	next := clamp(offset + step)
	if next == offset {
		return State{Offset: next}, Hold
	}
	return State{Offset: next}, Grow
}

// threshold is base + offset rounded to a whole percent (the NodeSLO's
// unit) within [0, 100].
func threshold(base int64, offset float64) int64 {
	t := base + int64(roundHalfUp(offset))
	return min(max(t, 0), 100)
}

func roundHalfUp(v float64) float64 {
	if v < 0 {
		return -roundHalfUp(-v)
	}
	return float64(int64(v + 0.5))
}

// percent converts a cfs quota (µs per period; ≤ 0: unlimited) on a node of
// capacity milli-CPU to percent of the node (-1: unlimited).
func percent(quota, period, capacity int64) float64 {
	if quota <= 0 || period <= 0 || capacity <= 0 {
		return -1
	}
	return float64(quota) * 1000 / float64(period) * 100 / float64(capacity)
}
