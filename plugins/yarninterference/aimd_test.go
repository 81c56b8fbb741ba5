package yarninterference

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAIMDNext(t *testing.T) {
	a := AIMD{Target: time.Millisecond, HoldBelow: 0.7, Step: 100, Decrease: 0.5, Floor: 200}
	ms := time.Millisecond
	for _, tt := range []struct {
		name                   string
		budget, ceiling, usage int64
		signal                 time.Duration
		ok                     bool
		want                   int64
		action                 Action
	}{
		{"no signal releases to the ceiling", 500, 2000, -1, 0, false, 2000, Release},
		{"above the target halves", 1600, 2000, 1600, 2 * ms, true, 800, Cut},
		{"a cut stops at the floor", 300, 2000, 300, 2 * ms, true, 200, Cut},
		{"well below grows a step", 800, 2000, -1, ms / 2, true, 900, Grow},
		{"growth stops at the ceiling", 1950, 2000, -1, 0, true, 2000, Grow},
		{"at the ceiling it holds", 2000, 2000, -1, 0, true, 2000, Hold},
		{"in the band it holds", 800, 2000, 800, 800 * time.Microsecond, true, 800, Hold},
		{"at the target exactly it holds", 800, 2000, 800, ms, true, 800, Hold},
		{"an idle batch does not wind it up", 800, 2000, 100, 0, true, 800, Hold},
		{"a lightly used budget grows to twice the use", 200, 2000, 150, 0, true, 300, Grow},
		{"the ceiling below the floor wins", 800, 100, -1, 0, true, 100, Hold},
		{"a ceiling that fell clamps a hold", 1500, 1000, 1500, 800 * time.Microsecond, true, 1000, Hold},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, act := a.Next(tt.budget, tt.ceiling, tt.usage, tt.signal, tt.ok)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.action, act)
		})
	}
}

// TestAIMDSettles: against a plant whose signal rises with the budget, the
// budget settles (no oscillation) in the hold band, and a step in the
// plant (LS load up) is cut within one interval.
func TestAIMDSettles(t *testing.T) {
	a := AIMD{Target: time.Millisecond, HoldBelow: 0.7, Step: 100, Decrease: 0.5, Floor: 100}
	plant := func(budget int64, load float64) time.Duration { // wait grows with budget × load
		return time.Duration(float64(budget) * load * float64(time.Microsecond))
	}
	budget, load := int64(100), 1.0
	var last []int64
	for i := 0; i < 60; i++ {
		budget, _ = a.Next(budget, 2000, -1, plant(budget, load), true)
		last = append(last, budget)
	}
	tail := last[len(last)-20:]
	for _, b := range tail {
		assert.Equal(t, tail[0], b, "steady load: one budget, no oscillation: %v", tail)
	}
	assert.LessOrEqual(t, plant(tail[0], load), a.Target)
	assert.GreaterOrEqual(t, float64(plant(tail[0], load)), 0.7*float64(a.Target)-float64(a.Step)*float64(time.Microsecond))
	load = 2 // the step
	next, act := a.Next(tail[0], 2000, -1, plant(tail[0], load), true)
	assert.Equal(t, Cut, act)
	assert.Less(t, next, tail[0])
}

func TestCeiling(t *testing.T) {
	for _, tt := range []struct {
		name                    string
		capacity, beBudget, own int64
		want                    int64
	}{
		{"no bounds: the node", 4000, 0, -1, 4000},
		{"suppress's budget", 4000, 2500, -1, 2500},
		{"YARN's own limit", 4000, -1, 3000, 3000},
		{"the lower of both", 4000, 2500, 1500, 1500},
		{"bounds above the node", 4000, 8000, 9000, 4000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ceiling(tt.capacity, tt.beBudget, tt.own))
		})
	}
}

func TestStart(t *testing.T) {
	const floor, ceil = 400, 3000
	for _, tt := range []struct {
		name                    string
		budget, resume, current int64
		want                    int64
	}{
		{"the budget in force", 1200, 0, 2000, 1200},
		{"after a gap: the budget before it", 0, 900, 3000, 900},
		{"first step: what YARN has", 0, 0, 2000, 2000},
		{"first step over an unlimited root: the ceiling", 0, 0, -1, ceil},
		{"first step over a root above the ceiling", 0, 0, 3500, ceil},
		{"first step over a root below the floor", 0, 0, 100, floor},
		{"a resume above a lowered ceiling", 0, 3500, 100, ceil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, start(tt.budget, tt.resume, tt.current, floor, ceil))
		})
	}
	assert.Equal(t, int64(200), start(0, 0, -1, 400, 200), "the ceiling wins over the floor")
}
