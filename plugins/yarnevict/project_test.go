package yarnevict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/growth"
)

// TestGrowthDuringTheKill: an idle low-priority container covers the need
// at the instant of the decision while a higher-priority one grows fast.
// Planned for the instant (the code before), the idle one dies, the grower
// takes the node across again before the next check and dies too: two
// kills. Planned with the growth over the release horizon, the grower alone
// covers it: one kill.
func TestGrowthDuringTheKill(t *testing.T) {
	const mi = int64(1 << 20)
	idle := Victim{Priority: 5000, MemoryUsed: 1024 * mi}
	grower := Victim{Priority: 6000, MemoryUsed: 1024 * mi, MemoryGrowth: 2560 * mi} // +256Mi/s over growth.Window
	ranked := []Victim{idle, grower}
	Rank(ranked, MemoryUsage)
	need := 512 * mi
	horizon := growth.ReleaseHorizon(250*time.Millisecond, time.Second) // 2.25 s: +576Mi for the grower

	naive, _ := Plan(ranked, need, MemoryUsage)
	assert.Len(t, naive, 1)
	assert.Equal(t, int64(5000), naive[0].Priority, "at the instant: the idle, lower-priority one")
	// ... after which the grower alone adds more than what was released
	// below the threshold before the next check: a second kill.
	assert.Greater(t, growth.Projected(ranked[1].MemoryGrowth, horizon)+need, naive[0].MemoryUsed)

	projNeed, measure := ProjectNeed(ranked, need, horizon, MemoryUsage)
	chosen, covered := Plan(ranked, projNeed, measure)
	assert.Len(t, chosen, 1, "one kill")
	assert.Equal(t, int64(6000), chosen[0].Priority, "the grower")
	assert.GreaterOrEqual(t, covered, projNeed)
}

func TestProjectNeed(t *testing.T) {
	vs := []Victim{{MemoryUsed: 100, MemoryGrowth: 50}, {MemoryUsed: 0, MemoryGrowth: 500}, {MemoryUsed: 10, MemoryGrowth: -5}}
	need, m := ProjectNeed(vs, 30, 2*growth.Window, MemoryUsage)
	assert.Equal(t, int64(30+100), need, "growth of the victims with usage only, negative growth none")
	assert.Equal(t, int64(200), m(&vs[0]))
	assert.Equal(t, int64(0), m(&vs[1]))
	assert.Equal(t, int64(10), m(&vs[2]))
	n0, _ := ProjectNeed(vs, 0, time.Second, MemoryUsage)
	assert.Equal(t, int64(0), n0, "no need: none")
	assert.Equal(t, 3250*time.Millisecond, growth.ReleaseHorizon(250*time.Millisecond, 2*time.Second))
}
