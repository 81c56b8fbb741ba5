package yarninterference

import "github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"

// The signals that propose the next state (Katalyst rama's shape: one
// controller per indicator, the most conservative winning, the winner
// exported).
const (
	// SignalSLO is the declared LS latency SLO (SLORule, YARNLSSLOControl).
	SignalSLO = "slo"
	// SignalCPUWait is the LS CPU wait (Rule, YARNInterferenceControl).
	SignalCPUWait = "cpu-wait"
	// SignalStatic is static suppress: the NodeSLO's threshold, or below
	// it a cut in force kept (a declared SLO unknown, or no signal at all).
	SignalStatic = "static"
)

// signals are every signal, in the order that breaks a tie of offset and
// action: the most cautious reason first.
var signals = []string{SignalStatic, SignalSLO, SignalCPUWait}

// Proposal is one signal's next state from the common state.
type Proposal struct {
	Signal string `json:"signal"`
	State  State  `json:"state"`
	Action Action `json:"action"`
}

// actionRank orders actions on a tie of offset: a cut beats a hold beats a
// grow.
func actionRank(a Action) int {
	switch a {
	case Off:
		return 0
	case Cut:
		return 1
	case Hold:
		return 2
	default:
		return 3
	}
}

func signalRank(s string) int {
	for i, v := range signals {
		if v == s {
			return i
		}
	}
	return len(signals)
}

// decide returns the winner: the lowest proposed offset; on a tie, a cut
// before a hold before a grow, then the order of signals. Its Quiet is the
// least of the proposals tied with it on offset, so that a growth waits
// for every signal's quiet intervals (ok false: no proposal).
func decide(ps []Proposal) (Proposal, bool) {
	if len(ps) == 0 {
		return Proposal{}, false
	}
	best := ps[0]
	for _, p := range ps[1:] {
		switch {
		case p.State.Offset < best.State.Offset:
			best = p
		case p.State.Offset > best.State.Offset:
		case actionRank(p.Action) < actionRank(best.Action),
			actionRank(p.Action) == actionRank(best.Action) && signalRank(p.Signal) < signalRank(best.Signal):
			best = p
		}
	}
	for _, p := range ps {
		if p.State.Offset == best.State.Offset {
			best.State.Quiet = min(best.State.Quiet, p.State.Quiet)
		}
	}
	return best, true
}

// static is static suppress's proposal: the threshold never above the
// NodeSLO's; a cut in force is kept (the conservative choice: the SLO
// that cut may still be violated behind an endpoint that stopped
// answering, and giving batch the NodeSLO's budget back at once would hit
// it with all of it).
func static(s State) Proposal {
	if s.Offset > 0 {
		return Proposal{Signal: SignalStatic, State: State{}, Action: Cut}
	}
	return Proposal{Signal: SignalStatic, State: State{Offset: s.Offset}, Action: Hold}
}

// sloMode is how the declared SLOs take part in a step.
type sloMode int

const (
	// sloNone: no pod declares an SLO (or the signal is not installed or
	// its gate off): the controller is exactly as without it.
	sloNone sloMode = iota
	// sloStatic: a declared SLO is unknown, or the signal stale after pods
	// declared: static suppress.
	sloStatic
	// sloQuiet: every declared pod is quiet or known and none known: hold.
	sloQuiet
	// sloKnown: the worst known pod's slack steers.
	sloKnown
)

// modeOf reads the SLO signal (ok false: none now, stale or never
// computed) given how many pods declared at the last good signal: a
// signal lost after pods declared is static suppress; one never seen with
// a declaration is none (a koordlet starting on a node where nothing
// declares stays exactly today's controller).
func modeOf(s lsslo.Signal, ok bool, lastDeclared int) sloMode {
	switch {
	case !ok && lastDeclared > 0:
		return sloStatic
	case !ok, s.Declared == 0:
		return sloNone
	case s.Unknown > 0:
		return sloStatic
	case s.Worst.Pod == "":
		return sloQuiet
	}
	return sloKnown
}
