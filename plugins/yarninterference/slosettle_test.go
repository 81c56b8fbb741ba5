package yarninterference

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// sloPlant is an LS service beside batch on a node of 100 points: its
// p99 is flat while the node's use (LS + batch's budget) is below a knee,
// rises half a millisecond per point above it, and falls off a cliff (ten
// times the target) 20 points above it; the knee moves down with LS's own
// load (a busier LS has less headroom to lend). The target is 20 ms.
type sloPlant struct{ ls float64 }

const plantTarget = 20.0 // ms

func (p sloPlant) knee() float64 { return 85 - p.ls/2 }

func (p sloPlant) latency(budget float64) float64 {
	over := p.ls + budget - p.knee()
	switch {
	case over <= 0:
		return 10
	case over <= 20:
		return 10 + over/2
	}
	return 10 * plantTarget
}

// TestSLORuleSettles: against sloPlant with the feed-forward of upstream's
// suppress (budget = threshold − LS), the SLO rule settles in its hold
// band under the target on a steady load; a jump of LS's load (30 → 60
// points at once, the knee 70 → 55) overshoots the cliff for the one
// interval in which it happens — the rule acts on the window it has seen —
// and is back under the target from the next (the bound: 1 interval per
// jump); a ramp of the same height over 30 intervals is held without a
// violation (the shrink band catches the slope); a load over 85% of the
// node's threshold holds the threshold where it is.
func TestSLORuleSettles(t *testing.T) {
	r := NewSLORule(1, 5, 1)
	const base = 80.0 // the NodeSLO's threshold: 80% of the node, 10 points past the knee at LS 30
	trace := make([]float64, 0, 400)
	for i := 0; i < 100; i++ {
		trace = append(trace, 30) // steady
	}
	for i := 0; i < 100; i++ {
		trace = append(trace, 60) // a jump
	}
	for i := 0; i < 50; i++ {
		trace = append(trace, 30) // down again
	}
	for i := 0; i < 30; i++ {
		trace = append(trace, 30+float64(i+1)) // a ramp to 60
	}
	for i := 0; i < 70; i++ {
		trace = append(trace, 60)
	}
	var st State
	violations := map[int]bool{}
	var lat []float64
	for i, ls := range trace {
		p := sloPlant{ls: ls}
		budget := max(base+st.Offset-ls, 0)
		l := p.latency(budget) // this interval's p99, seen at the end of it
		lat = append(lat, l)
		if l > plantTarget {
			violations[i] = true
		}
		slack := (plantTarget - l) / plantTarget
		st, _ = r.Next(st, base, budget, budget, SLOInput{Known: true, Slack: slack, Load: ls / base})
	}
	t.Logf("p99 (ms) around the jump: %v; the ramp: %v", lat[95:115], lat[250:290])
	assert.Equal(t, map[int]bool{100: true}, violations, "one interval over the target: the jump's")
	for _, w := range [][2]int{{80, 100}, {180, 200}, {330, 350}} {
		tail := lat[w[0]:w[1]]
		for _, l := range tail {
			assert.Equal(t, tail[0], l, "steady: one threshold, no sawtooth: %v", tail)
			slack := (plantTarget - l) / plantTarget
			assert.GreaterOrEqual(t, slack, r.ShrinkBelow-1e-9, "in or above the hold band")
			assert.LessOrEqual(t, slack, r.GrowAbove+0.5/plantTarget+1e-9, "within a step of the band")
		}
	}

	// LS at 90% of the threshold (72 of 80 points): no growth whatever the slack.
	st = State{Offset: -30}
	for i := 0; i < 20; i++ {
		st, _ = r.Next(st, base, 10, 10, SLOInput{Known: true, Slack: 0.5, Load: 0.9})
	}
	assert.Equal(t, -30.0, st.Offset)
}
