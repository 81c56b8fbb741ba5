package yarnsuppress

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

const core = int64(100000) // µs per 100 ms period

func TestDivide(t *testing.T) {
	tests := []struct {
		name           string
		budget         int64
		be, yarn       Side
		wantBE, wantYA int64 // 0: only the invariants are checked
	}{
		{name: "both capped: by request 1:3", budget: 2 * core,
			be:     Side{Usage: core / 2, Request: core, Quota: core / 2},
			yarn:   Side{Usage: 3 * core / 2, Request: 3 * core, Quota: 3 * core / 2},
			wantBE: core / 2, wantYA: 3 * core / 2},
		{name: "first round, both busy: by request", budget: 2 * core,
			be:     Side{Usage: 2 * core, Request: core},
			yarn:   Side{Usage: 2 * core, Request: 3 * core},
			wantBE: core / 2, wantYA: 3 * core / 2},
		{name: "BE pods idle: they keep a headroom, YARN gets the rest", budget: 2 * core,
			be:     Side{Usage: 0, Request: core, Quota: core / 2},
			yarn:   Side{Usage: 3 * core / 2, Request: 3 * core, Quota: 3 * core / 2},
			wantBE: core / 5, wantYA: 9 * core / 5},
		{name: "YARN idle: the BE pods use its share", budget: 2 * core,
			be:     Side{Usage: core / 2, Request: core, Quota: core / 2},
			yarn:   Side{Usage: core / 10, Request: 3 * core, Quota: 3 * core / 2},
			wantBE: 2*core - 3*core/10, wantYA: 3 * core / 10},
		{name: "both idle: demands, the surplus by request", budget: 2 * core,
			be:     Side{Usage: 0, Request: core},
			yarn:   Side{Usage: 0, Request: 3 * core},
			wantBE: core/5 + (2*core-2*core/5)/4, wantYA: core/5 + (2*core-2*core/5)*3/4},
		{name: "no requests: equal weights", budget: 2 * core,
			be:     Side{Usage: 2 * core, Request: 0, Quota: core},
			yarn:   Side{Usage: 2 * core, Request: 0, Quota: core},
			wantBE: core, wantYA: core},
		{name: "YARN requests unknown: equal weights", budget: 2 * core,
			be:     Side{Usage: core, Request: 4 * core, Quota: core},
			yarn:   Side{Usage: core, Request: -1, Quota: core},
			wantBE: core, wantYA: core},
		{name: "zero request, busy, against a busy requester: the floor", budget: 2 * core,
			be:     Side{Usage: 2 * core, Request: 0, Quota: core},
			yarn:   Side{Usage: core, Request: 3 * core, Quota: core},
			wantBE: minSideQuota, wantYA: 2*core - minSideQuota},
		{name: "upstream's minimum budget: both floors", budget: 2000,
			be:     Side{Usage: core, Request: core},
			yarn:   Side{Usage: core, Request: 9 * core},
			wantBE: minSideQuota, wantYA: minSideQuota},
		{name: "odd budget", budget: 123457,
			be:   Side{Usage: 7777, Request: 333, Quota: 9000},
			yarn: Side{Usage: 55555, Request: 777, Quota: 60000}},
		{name: "large node", budget: 250 * core,
			be:   Side{Usage: 300 * core, Request: 900 * core},
			yarn: Side{Usage: 300 * core, Request: 1100 * core}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be, ya := Divide(tt.budget, tt.be, tt.yarn)
			assert.Equal(t, tt.budget, be+ya, "the two quotas sum to the budget")
			assert.GreaterOrEqual(t, be, minSideQuota)
			assert.GreaterOrEqual(t, ya, minSideQuota)
			if tt.wantBE != 0 {
				assert.Equal(t, tt.wantBE, be, "besteffort")
				assert.Equal(t, tt.wantYA, ya, "YARN")
			}
		})
	}
	be, ya := Divide(1500, Side{}, Side{})
	assert.Equal(t, [2]int64{minSideQuota, minSideQuota}, [2]int64{be, ya}, "below two minimums (never set by upstream): each its minimum")
}

// TestDivideSettles runs the division in closed loop against sides whose
// usage is min(demand, quota): it settles (no oscillation), gives capped
// sides their request shares, and a side idle at first that starts gets its
// share within two rounds.
func TestDivideSettles(t *testing.T) {
	const budget = 4 * core
	tests := []struct {
		name             string
		demandBE, demand [2]int64 // BE pods' and YARN's true demand: before and after round 10
		reqBE, reqYARN   int64
		want             [2]int64 // settled quotas after round 10 (BE, YARN)
	}{
		{"both saturate, 1:1", [2]int64{8 * core, 8 * core}, [2]int64{8 * core, 8 * core}, core, core, [2]int64{2 * core, 2 * core}},
		{"YARN idle, then starts", [2]int64{8 * core, 8 * core}, [2]int64{0, 8 * core}, core, 3 * core, [2]int64{core, 3 * core}},
		{"BE pods idle, then start", [2]int64{0, 8 * core}, [2]int64{8 * core, 8 * core}, core, core, [2]int64{2 * core, 2 * core}},
		{"BE pods need less than their share", [2]int64{core / 2, core / 2}, [2]int64{8 * core, 8 * core}, 3 * core, core, [2]int64{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var qBE, qYA int64
			var history [][2]int64
			for round := 0; round < 20; round++ {
				phase := 0
				if round >= 10 {
					phase = 1
				}
				be := Side{Usage: min(tt.demandBE[phase], max(qBE, 0)), Request: tt.reqBE, Quota: qBE}
				ya := Side{Usage: min(tt.demand[phase], max(qYA, 0)), Request: tt.reqYARN, Quota: qYA}
				if round == 0 {
					be.Usage, ya.Usage = tt.demandBE[0], tt.demand[0]
				}
				qBE, qYA = Divide(budget, be, ya)
				assert.Equal(t, int64(budget), qBE+qYA)
				history = append(history, [2]int64{qBE, qYA})
			}
			// After the change at round 10, two rounds to react, then steady.
			for r := 13; r < 20; r++ {
				assert.Equal(t, history[12], history[r], "steady from round 12: %v", fmt.Sprint(history))
			}
			if tt.want != [2]int64{} {
				assert.Equal(t, tt.want, history[19], fmt.Sprint(history))
			} else {
				// A side with slack keeps its usage plus the headroom, the
				// other side gets the rest.
				assert.Equal(t, tt.demandBE[1]+budget/10, history[19][0], fmt.Sprint(history))
			}
		})
	}
}
