package yarninterference

import (
	"math"

	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
)

// SLORule is Heracles' rule (Lo et al., ISCA 2015) on the slack of the
// declared LS pod with the least of it, slack = (target − latency) ÷
// target, as a move of the threshold's offset from the NodeSLO's:
//
//   - slack < 0 (the SLO violated): batch to the floor at once — the
//     budget cut to Floor (--yarn-interference-min-cpu-percent of the
//     node), not to 0: YARN's ApplicationMasters and the NodeManager's
//     container bookkeeping run inside the same budget, and an AM starved
//     of CPU misses its RM heartbeats and is killed with its whole job
//     attempt; the floor keeps them breathing while the executors are
//     throttled to nothing that matters to LS;
//   - slack < ShrinkBelow (5%): shrink, the same cut as Rule's: half the
//     budget, at least a step, never below the floor;
//   - ShrinkBelow–GrowAbove (5–10%): hold;
//   - slack > GrowAbove (10%) and LS load < MaxLoad (85%): grow a step,
//     with Rule's guards (no growth while batch uses less than half its
//     budget, and only after GrowAfter such intervals in a row); at or
//     above MaxLoad, or with the load unknown, hold: LS near its own
//     ceiling has no headroom to lend, whatever its latency says now.
//
// Quiet (every declared pod had too few requests to tell) cuts nothing and
// never grows batch above the NodeSLO's threshold; a cut in force comes back
// toward it a step per GrowAfter quiet intervals (batch's use not asked: the
// NodeSLO's threshold is static suppress, the operator's bound, with no
// wind-up to fear below it). A service too quiet to measure has no tail
// that batch's CPU makes; holding the cut would keep batch at the floor for
// as long as the service sleeps (a night, a drain, a canary without
// traffic). A positive offset is held: it was earned by known slack.
type SLORule struct {
	// ShrinkBelow and GrowAbove bound the hold band of the slack (0.05,
	// 0.10).
	ShrinkBelow, GrowAbove float64
	// MaxLoad is the LS load (a share, see SLOInput.Load) at or above
	// which the threshold does not grow (0.85).
	MaxLoad float64
	// Step, Floor and GrowAfter are Rule's.
	Step, Floor float64
	GrowAfter   int
}

// Heracles' bands (the flags' defaults).
const (
	DefaultSLOShrinkBelow = config.DefaultInterferenceSLOShrinkBelowPercent / 100.0
	DefaultSLOGrowAbove   = config.DefaultInterferenceSLOGrowAbovePercent / 100.0
	DefaultSLOMaxLoad     = config.DefaultInterferenceSLOMaxLoadPercent / 100.0
)

// NewSLORule is the rule with Heracles' bands and the controller's step,
// floor and GrowAfter.
func NewSLORule(step, floor float64, growAfter int) SLORule {
	return SLORule{ShrinkBelow: DefaultSLOShrinkBelow, GrowAbove: DefaultSLOGrowAbove, MaxLoad: DefaultSLOMaxLoad,
		Step: step, Floor: floor, GrowAfter: growAfter}
}

// sloRule is the rule of the flags (a band of 0: Heracles', the default).
func sloRule(cfg *config.Interference) SLORule {
	r := NewSLORule(float64(cfg.StepPercent), float64(cfg.MinPercent), int(cfg.GrowAfter))
	shrinkBelow, growAbove, maxLoad := cfg.SLOBands()
	r.ShrinkBelow, r.GrowAbove, r.MaxLoad = float64(shrinkBelow)/100, float64(growAbove)/100, float64(maxLoad)/100
	return r
}

// SLOInput is what the rule reads of the declared SLOs at one step.
type SLOInput struct {
	// Known: a declared pod's latency is known; Slack is the least slack
	// among them. Not Known: every declared pod is quiet.
	Known bool
	Slack float64
	// Load is the LS pods' CPU usage ÷ (node capacity × the NodeSLO's
	// threshold): the share of the CPU static suppress leaves LS and
	// batch together that LS fills (negative: unknown).
	Load float64
}

// Off is SLORule's action on a violation: the budget to the floor.
const Off Action = "off"

// Next returns the state after s, for the NodeSLO's threshold base
// (percent), the BE budget in force and batch's use (percent of the node,
// negative: unknown, as Rule.Next has them) and the input. The threshold
// base + offset stays within [0, 100].
func (r SLORule) Next(s State, base, budget, usage float64, in SLOInput) (State, Action) {
	clamp := func(v float64) float64 { return min(max(v, -base), 100-base) }
	offset := clamp(s.Offset)
	switch {
	case !in.Known && offset < 0:
		return grow(func(v float64) float64 { return min(clamp(v), 0) }, State{Offset: offset, Quiet: s.Quiet}, budget, -1, r.Step, r.GrowAfter)
	case !in.Known, math.IsNaN(in.Slack):
		return State{Offset: offset, Quiet: s.Quiet}, Hold
	case in.Slack < 0:
		if budget < 0 { // unlimited or unknown: how far the floor is cannot be told
			return State{Offset: clamp(offset - max(r.Step, 0))}, Cut
		}
		cut := budget - r.Floor
		if cut <= 0 {
			return State{Offset: offset}, Hold // at the floor
		}
		return State{Offset: clamp(offset - cut)}, Off
	case in.Slack < r.ShrinkBelow:
		return halve(clamp, offset, budget, r.Step, r.Floor)
	case in.Slack <= r.GrowAbove, in.Load < 0, in.Load >= r.MaxLoad:
		return State{Offset: offset}, Hold
	}
	return grow(clamp, s, budget, usage, r.Step, r.GrowAfter)
}

// UnmetAtFloor reports a violated SLO that the rule can do nothing more
// for: the budget in force is already at the floor. Batch's CPU is then
// not what the service waits for (memory, I/O, its own load), or the SLO is
// tighter than the service holds alone; the controller says so rather than
// cutting on (it cannot) or giving the budget back (the SLO is still
// violated).
func (r SLORule) UnmetAtFloor(budget float64, in SLOInput) bool {
	return in.Known && !math.IsNaN(in.Slack) && in.Slack < 0 && budget >= 0 && budget-r.Floor <= 0
}
