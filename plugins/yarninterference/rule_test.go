package yarninterference

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRuleNext(t *testing.T) {
	r := Rule{Target: time.Millisecond, HoldBelow: 0.7, Step: 2, Floor: 5}
	ms := time.Millisecond
	for _, tt := range []struct {
		name                        string
		offset, base, budget, usage float64
		signal                      time.Duration
		ok                          bool
		want                        float64
		action                      Action
	}{
		{"no signal: the NodeSLO's threshold, the offset kept", -10, 80, 20, 20, 0, false, -10, Release},
		{"above the target halves the budget", 0, 80, 20, 20, 2 * ms, true, -10, Cut},
		{"a small budget is cut at least a step", 0, 80, 6, 6, 2 * ms, true, -1, Cut},
		{"a cut leaves the floor", 0, 80, 8, 8, 2 * ms, true, -3, Cut},
		{"at the floor it holds", -5, 80, 5, 5, 2 * ms, true, -5, Hold},
		{"an unlimited budget is cut a step", 0, 80, -1, -1, 2 * ms, true, -2, Cut},
		{"well below grows a step", 0, 70, 10, 10, ms / 2, true, 2, Grow},
		{"growth stops at 100%", 29, 70, 30, 30, 0, true, 30, Grow},
		{"at 100% it holds", 30, 70, 30, 30, 0, true, 30, Hold},
		{"in the band it holds", -4, 70, 10, 10, 800 * time.Microsecond, true, -4, Hold},
		{"at the target exactly it holds", -4, 70, 10, 10, ms, true, -4, Hold},
		{"an idle batch does not wind it up", 0, 70, 30, 10, 0, true, 0, Hold},
		{"a budget used by half grows", 0, 70, 20, 10, 0, true, 2, Grow},
		{"unknown use grows", 0, 70, 30, -1, 0, true, 2, Grow},
		{"never below 0%", -65, 70, 15, 15, 2 * ms, true, -70, Cut},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, act := r.Next(State{Offset: tt.offset}, tt.base, tt.budget, tt.usage, tt.signal, tt.ok)
			assert.InDelta(t, tt.want, got.Offset, 1e-9)
			assert.Equal(t, tt.action, act)
		})
	}
}

func TestThreshold(t *testing.T) {
	for _, tt := range []struct {
		base   int64
		offset float64
		want   int64
	}{{65, 0, 65}, {65, 2.5, 68}, {65, 2.4, 67}, {65, -2.5, 62}, {65, -70, 0}, {65, 40, 100}} {
		assert.Equal(t, tt.want, threshold(tt.base, tt.offset), "%d%+v", tt.base, tt.offset)
	}
}

// TestRuleSettles: against a plant whose signal rises with the budget
// (LS usage the feed-forward takes off: budget = threshold − LS), the
// threshold settles in the hold band (no oscillation), and a step in LS's
// load is absorbed by the feed-forward at once and by the rule within a
// few intervals.
func TestRuleSettles(t *testing.T) {
	r := Rule{Target: time.Millisecond, HoldBelow: 0.7, Step: 1, Floor: 1}
	const base = 100.0
	ls := 30.0
	plant := func(budget float64) time.Duration { // the wait grows with batch's budget: 1 ms at 20% of the node
		return time.Duration(budget / 20 * float64(time.Millisecond))
	}
	var st State
	budget := func() float64 { return max(base+st.Offset-ls, 0) }
	var last []float64
	for i := 0; i < 80; i++ {
		st, _ = r.Next(st, base, budget(), budget(), plant(budget()), true)
		last = append(last, st.Offset)
	}
	tail := last[len(last)-20:]
	for _, o := range tail {
		assert.Equal(t, tail[0], o, "steady load: one threshold, no oscillation: %v", tail)
	}
	assert.LessOrEqual(t, plant(budget()), r.Target)
	assert.GreaterOrEqual(t, plant(budget()), time.Duration(0.7*float64(r.Target))-time.Duration(float64(time.Millisecond)/20), "in the band, within a step")

	// LS's load rises by 10 points: the feed-forward takes it off the
	// budget at once (the same threshold, 10 points less budget), and the
	// rule, seeing LS unharmed, probes back up to the band.
	before := budget()
	ls += 10
	assert.InDelta(t, before-10, budget(), 1e-9)
	for i := 0; i < 40; i++ {
		st, _ = r.Next(st, base, budget(), budget(), plant(budget()), true)
	}
	assert.LessOrEqual(t, plant(budget()), r.Target)
	assert.GreaterOrEqual(t, plant(budget()), time.Duration(0.7*float64(r.Target))-time.Duration(float64(time.Millisecond)/20))
}

// TestRuleGrowAfter: with GrowAfter 3 a step up comes after three quiet
// intervals in a row; an interval in the hold band or a cut starts the
// count again; a cut is never delayed; no signal keeps the count.
func TestRuleGrowAfter(t *testing.T) {
	r := Rule{Target: time.Millisecond, HoldBelow: 0.7, Step: 2, Floor: 5, GrowAfter: 3}
	quiet, band, over := time.Duration(0), 800*time.Microsecond, 2*time.Millisecond
	st := State{}
	var acts []Action
	step := func(sig time.Duration, ok bool) {
		var a Action
		st, a = r.Next(st, 70, 10, 10, sig, ok)
		acts = append(acts, a)
	}
	step(quiet, true)
	step(quiet, true)
	step(quiet, false) // a gap in the signal: the count kept
	step(quiet, true)
	assert.Equal(t, []Action{Hold, Hold, Release, Grow}, acts)
	assert.InDelta(t, 2, st.Offset, 1e-9)
	assert.Zero(t, st.Quiet, "a step up starts the count again")

	acts = nil
	step(quiet, true)
	step(quiet, true)
	step(band, true) // in the band: the count starts again
	step(quiet, true)
	step(quiet, true)
	step(over, true) // cut at once
	assert.Equal(t, []Action{Hold, Hold, Hold, Hold, Hold, Cut}, acts)
	assert.InDelta(t, -3, st.Offset, 1e-9, "the budget of 10 halved")
	assert.Zero(t, st.Quiet)

	// GrowAfter 0 and 1 step up at every quiet interval.
	for _, n := range []int{0, 1} {
		r.GrowAfter = n
		st = State{}
		st, a := r.Next(st, 70, 10, 10, quiet, true)
		assert.Equal(t, Grow, a, "GrowAfter %d", n)
		assert.InDelta(t, 2, st.Offset, 1e-9)
	}
}
