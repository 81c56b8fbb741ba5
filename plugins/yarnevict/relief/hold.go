package relief

import "time"

// The bound on the throttle's hold (YARNMemoryRelief, cgroup v2). At its
// floor the throttle holds the memory.high it wrote while the root's anon
// memory grows past it (ThrottleDecision.Held): the growth is slowed, not
// stopped, as long as node memory keeps growing toward the threshold,
// where the kill takes over. But when node memory stays in the band under
// the threshold (LS holds it there), nothing else moves: node memory does
// not grow (no RM ask by growth), the threshold is never crossed (no
// kill), and the YARN containers allocating past memory.high stall until
// their applications' timeouts fail them, a failure nobody attributes.
// FloorHold bounds that hold and then takes the next rung: the
// ResourceManager when its rung is on (and, if it has not released by the
// time it needs, the kill), else the kill of the ranked YARN container.
// The decision is pure (FloorHold.Next); Relief and the memory strategy
// do the I/O.

// DefaultFloorHoldLimit is how long the throttle may hold the YARN root at
// its floor with the root pressing against it before the next rung acts.
// Spark's driver loses an executor whose heartbeats stop for
// spark.network.timeout (120 s by default): the bound and the RM's time
// to release (the sync's interval and request timeout, the over-commit
// timeout and its grace: under a minute by default) stay below it, and it
// is long enough for a short burst to pass under the throttle alone.
const DefaultFloorHoldLimit = 30 * time.Second

// FloorHold is the throttle's hold at its floor: from the first check
// that found the root pressing against the value held (Held), as long as
// the throttle stays at its floor.
type FloorHold struct {
	// Since is the hold's first check (zero: no hold); Checks counts the
	// checks at the floor since.
	Since  time.Time
	Checks int
	// AskedAt is when the hold was asked of the ResourceManager (zero:
	// not asked).
	AskedAt time.Time
}

// HoldStep is what a check of the hold asks for.
type HoldStep int

const (
	// HoldWait: nothing (no hold, or not for long enough yet, or the RM
	// still has time to release).
	HoldWait HoldStep = iota
	// HoldAskRM: ask the ResourceManager for a release.
	HoldAskRM
	// HoldKill: kill YARN containers (the RM rung is off, or the RM did
	// not release in the time it needs).
	HoldKill
)

// HoldInput is what one check of the hold reads.
type HoldInput struct {
	// AtFloor: the throttle is at its floor (and not released); Held:
	// the root presses against the value held there.
	AtFloor, Held bool
	Now           time.Time
	// Limit bounds the hold (0: DefaultFloorHoldLimit).
	Limit time.Duration
	// RM: the ResourceManager rung can ask (YARNRMPreemption, the RM sync,
	// a YARN allocation on the node); RMDelay is how long it takes to
	// release once asked.
	RM      bool
	RMDelay time.Duration
}

// Next is the hold after a check, and what the check asks for. A hold
// begins at a check that finds the root pressing against the value held,
// and lasts while the throttle stays at its floor (a check where the root
// is under the value for a moment does not end it); it escalates only at
// a check where the root presses, once it has lasted the limit. The RM is
// asked once per hold; the kill comes when the RM rung is off, or when the
// RM has had its time to release and the root still presses.
func (h FloorHold) Next(in HoldInput) (FloorHold, HoldStep) {
	if !in.AtFloor {
		return FloorHold{}, HoldWait
	}
	if h.Since.IsZero() {
		if !in.Held {
			return h, HoldWait // at the floor, nothing pressing: no stall
		}
		h.Since = in.Now
	}
	h.Checks++
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultFloorHoldLimit
	}
	if !in.Held || in.Now.Sub(h.Since) < limit {
		return h, HoldWait
	}
	if in.RM {
		if h.AskedAt.IsZero() {
			h.AskedAt = in.Now
			return h, HoldAskRM
		}
		if in.Now.Sub(h.AskedAt) < in.RMDelay {
			return h, HoldWait
		}
	}
	return h, HoldKill
}

// Killed is the hold after the strategy killed for it at now: measured
// anew, so that a next kill comes no sooner than a limit later (the RM,
// if asked, is not asked again in the same hold).
func (h FloorHold) Killed(now time.Time) FloorHold {
	return FloorHold{Since: now, AskedAt: h.AskedAt}
}
