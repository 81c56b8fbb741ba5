package yarninterference

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
)

func TestSLORuleNext(t *testing.T) {
	r := NewSLORule(2, 5, 1)
	known := func(slack, load float64) SLOInput { return SLOInput{Known: true, Slack: slack, Load: load} }
	for _, tt := range []struct {
		name                        string
		offset, base, budget, usage float64
		quiet                       int
		in                          SLOInput
		want                        float64
		action                      Action
	}{
		{"violated: the budget to the floor at once", 20, 80, 50, 50, 0, known(-0.2, 0.5), -25, Off},
		{"violated at the floor: held", -25, 80, 5, 5, 0, known(-0.2, 0.5), -25, Hold},
		{"violated, budget unknown: a step", 0, 80, -1, -1, 0, known(-0.2, 0.5), -2, Cut},
		{"violated: never below 0%", -70, 80, 30, 30, 0, known(-0.5, 0.5), -80, Off},
		{"under 5%: the budget halved", 0, 80, 20, 20, 0, known(0.02, 0.5), -10, Cut},
		{"slack exactly 0 shrinks, not off", 0, 80, 20, 20, 0, known(0, 0.5), -10, Cut},
		{"under 5%, a small budget: at least a step", 0, 80, 6, 6, 0, known(0.04, 0.5), -1, Cut},
		{"under 5% at the floor: held", -10, 80, 5, 5, 0, known(0.04, 0.5), -10, Hold},
		{"5–10%: held", -4, 80, 10, 10, 3, known(0.07, 0.5), -4, Hold},
		{"at 5% exactly: held", -4, 80, 10, 10, 0, known(0.05, 0.5), -4, Hold},
		{"at 10% exactly: held", -4, 80, 10, 10, 0, known(0.10, 0.5), -4, Hold},
		{"over 10%, load under 85%: a step up", -4, 80, 10, 10, 0, known(0.3, 0.5), -2, Grow},
		{"over 10%, load at 85%: held", -4, 80, 10, 10, 0, known(0.3, 0.85), -4, Hold},
		{"over 10%, load unknown: held", -4, 80, 10, 10, 0, known(0.3, -1), -4, Hold},
		{"over 10%, an idle batch does not wind it up", 0, 80, 30, 10, 0, known(0.3, 0.5), 0, Hold},
		{"over 10%: growth stops at 100%", 19, 80, 30, 30, 0, known(0.5, 0.5), 20, Grow},
		{"over 10% at 100%: held", 20, 80, 30, 30, 0, known(0.5, 0.5), 20, Hold},
		{"quiet, no cut in force: held, the state kept", 6, 80, 10, 10, 2, SLOInput{Slack: -1}, 6, Hold},
		{"quiet at the NodeSLO's: held", 0, 80, 10, 10, 2, SLOInput{}, 0, Hold},
		{"quiet: a cut comes back a step", -6, 80, 10, 10, 2, SLOInput{Slack: -1}, -4, Grow},
		{"quiet: batch's use not asked", -6, 80, 30, 1, 0, SLOInput{}, -4, Grow},
		{"quiet: never above the NodeSLO's", -1, 80, 10, 10, 0, SLOInput{}, 0, Grow},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, act := r.Next(State{Offset: tt.offset, Quiet: tt.quiet}, tt.base, tt.budget, tt.usage, tt.in)
			assert.InDelta(t, tt.want, got.Offset, 1e-9)
			assert.Equal(t, tt.action, act)
		})
	}
}

// TestSLORuleGrowAfter: with GrowAfter 3, a step up every third quiet
// interval; the hold band and a cut start the count again; a quiet
// (too few requests) interval neither counts nor resets.
func TestSLORuleGrowAfter(t *testing.T) {
	r := NewSLORule(2, 5, 3)
	in := SLOInput{Known: true, Slack: 0.5, Load: 0.5}
	var st State
	var acts []Action
	for i := 0; i < 6; i++ {
		var a Action
		st, a = r.Next(st, 80, 10, 10, in)
		acts = append(acts, a)
	}
	assert.Equal(t, []Action{Hold, Hold, Grow, Hold, Hold, Grow}, acts)
	assert.InDelta(t, 4, st.Offset, 1e-9)
	st, _ = r.Next(State{Offset: 4, Quiet: 2}, 80, 10, 10, SLOInput{})
	assert.Equal(t, 2, st.Quiet, "quiet above the NodeSLO's: the count kept")
	var quiet []Action
	for q := (State{Offset: -4}); len(quiet) < 4; {
		var a Action
		q, a = r.Next(q, 80, 10, 10, SLOInput{})
		quiet = append(quiet, a)
	}
	assert.Equal(t, []Action{Hold, Hold, Grow, Hold}, quiet, "quiet with a cut: back a step every third interval")
	st, _ = r.Next(st, 80, 10, 10, SLOInput{Known: true, Slack: 0.07, Load: 0.5})
	assert.Zero(t, st.Quiet, "the band starts it again")
}

func TestDecide(t *testing.T) {
	p := func(sig string, off float64, a Action, quiet int) Proposal {
		return Proposal{Signal: sig, State: State{Offset: off, Quiet: quiet}, Action: a}
	}
	for _, tt := range []struct {
		name  string
		ps    []Proposal
		want  string
		off   float64
		act   Action
		quiet int
	}{
		{"the lowest offset wins", []Proposal{p(SignalCPUWait, 2, Grow, 0), p(SignalSLO, -10, Cut, 0)}, SignalSLO, -10, Cut, 0},
		{"a cut-wait below a slo hold", []Proposal{p(SignalSLO, 0, Hold, 0), p(SignalCPUWait, -5, Cut, 0)}, SignalCPUWait, -5, Cut, 0},
		{"a tie: a cut beats a hold", []Proposal{p(SignalSLO, -5, Hold, 0), p(SignalCPUWait, -5, Cut, 0)}, SignalCPUWait, -5, Cut, 0},
		{"a tie: off beats a cut", []Proposal{p(SignalCPUWait, -5, Cut, 0), p(SignalSLO, -5, Off, 0)}, SignalSLO, -5, Off, 0},
		{"a tie: a hold beats a grow", []Proposal{p(SignalCPUWait, 0, Grow, 0), p(SignalSLO, 0, Hold, 0)}, SignalSLO, 0, Hold, 0},
		{"a tie of action: static, slo, cpu-wait", []Proposal{p(SignalCPUWait, -3, Hold, 2), p(SignalSLO, -3, Hold, 1), p(SignalStatic, -3, Hold, 0)}, SignalStatic, -3, Hold, 0},
		{"a tie: the least quiet count", []Proposal{p(SignalSLO, -3, Hold, 2), p(SignalCPUWait, -3, Hold, 1)}, SignalSLO, -3, Hold, 1},
		{"one alone", []Proposal{p(SignalCPUWait, 4, Grow, 0)}, SignalCPUWait, 4, Grow, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := decide(tt.ps)
			assert.True(t, ok)
			assert.Equal(t, tt.want, w.Signal)
			assert.Equal(t, tt.off, w.State.Offset)
			assert.Equal(t, tt.act, w.Action)
			assert.Equal(t, tt.quiet, w.State.Quiet)
		})
	}
	_, ok := decide(nil)
	assert.False(t, ok)
}

func TestStatic(t *testing.T) {
	assert.Equal(t, Proposal{Signal: SignalStatic, State: State{}, Action: Cut}, static(State{Offset: 12, Quiet: 3}), "never above the NodeSLO's")
	assert.Equal(t, Proposal{Signal: SignalStatic, State: State{Offset: -12}, Action: Hold}, static(State{Offset: -12, Quiet: 3}), "a cut kept")
}

func TestModeOf(t *testing.T) {
	known := lsslo.Signal{Declared: 2, Worst: lsslo.PodSLO{Pod: "ns/a", Known: true, Slack: 0.2}}
	for _, tt := range []struct {
		name         string
		s            lsslo.Signal
		ok           bool
		lastDeclared int
		want         sloMode
	}{
		{"never a signal", lsslo.Signal{}, false, 0, sloNone},
		{"stale after a declaration", lsslo.Signal{}, false, 1, sloStatic},
		{"none declared", lsslo.Signal{Declared: 0}, true, 3, sloNone},
		{"one unknown", lsslo.Signal{Declared: 2, Unknown: 1, Worst: known.Worst}, true, 2, sloStatic},
		{"all quiet", lsslo.Signal{Declared: 2, Quiet: 2}, true, 2, sloQuiet},
		{"known", known, true, 0, sloKnown},
	} {
		assert.Equal(t, tt.want, modeOf(tt.s, tt.ok, tt.lastDeclared), tt.name)
	}
}

func TestSLORuleOfFlags(t *testing.T) {
	r := sloRule(&config.Interference{StepPercent: 2, MinPercent: 5, GrowAfter: 3})
	assert.Equal(t, NewSLORule(2, 5, 3), r, "0: Heracles' bands")
	assert.InDelta(t, 0.05, r.ShrinkBelow, 1e-12)
	r = sloRule(&config.Interference{StepPercent: 2, MinPercent: 5, GrowAfter: 1, SLOShrinkBelowPercent: 3, SLOGrowAbovePercent: 20, SLOMaxLoadPercent: 70})
	assert.InDelta(t, 0.03, r.ShrinkBelow, 1e-12)
	assert.InDelta(t, 0.20, r.GrowAbove, 1e-12)
	assert.InDelta(t, 0.70, r.MaxLoad, 1e-12)
}
