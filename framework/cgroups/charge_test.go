package cgroups

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTrueMemory(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct {
		name                      string
		charge, procs, leftAtMove int64
		want                      ChargeTruth
	}{
		{"adopted at 600 MiB, nothing charged to its cgroup yet: its processes' memory, all of it elsewhere",
			0, 600 * mi, 600 * mi, ChargeTruth{Usage: 600 * mi, Elsewhere: 600 * mi}},
		{"grew by 100 MiB since: charged 100, holding 700",
			100 * mi, 700 * mi, 600 * mi, ChargeTruth{Usage: 700 * mi, Elsewhere: 600 * mi}},
		{"freed half of what it left behind",
			100 * mi, 400 * mi, 600 * mi, ChargeTruth{Usage: 400 * mi, Elsewhere: 300 * mi}},
		{"freed all of it: the charge is its own",
			300 * mi, 300 * mi, 600 * mi, ChargeTruth{Usage: 300 * mi, Own: true}},
		{"charged more than its processes map (tmpfs, unmapped shmem): the charge",
			500 * mi, 300 * mi, 600 * mi, ChargeTruth{Usage: 500 * mi, Own: true}},
		{"the processes count shared memory twice: no more than what was left at the move",
			200 * mi, 900 * mi, 50 * mi, ChargeTruth{Usage: 250 * mi, Elsewhere: 50 * mi}},
		{"within the slack: own",
			100 * mi, 100*mi + OwnChargeSlack, 600 * mi, ChargeTruth{Usage: 100*mi + OwnChargeSlack, Elsewhere: OwnChargeSlack, Own: true}},
		{"left at the move unknown: unbounded",
			0, 600 * mi, -1, ChargeTruth{Usage: 600 * mi, Elsewhere: 600 * mi}},
		{"kernel moved the charge with the process (v1 before 6.8 with move_charge_at_immigrate)",
			600 * mi, 600 * mi, 600 * mi, ChargeTruth{Usage: 600 * mi, Own: true}},
		{"nothing read from the processes (all exited)",
			10 * mi, 0, 600 * mi, ChargeTruth{Usage: 10 * mi, Own: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, TrueMemory(tc.charge, tc.procs, tc.leftAtMove))
		})
	}
}

func TestLeftCharges(t *testing.T) {
	var none *LeftCharges
	none.Add("a", 1)
	_, ok := none.Get("a")
	assert.False(t, ok, "a nil record records nothing")
	assert.Zero(t, none.Len())

	l := NewLeftCharges()
	l.Add("a", 0)
	assert.Zero(t, l.Len(), "nothing left: nothing recorded")
	l.Add("a", 100)
	l.Add("a", 20)
	v, ok := l.Get("a")
	assert.True(t, ok)
	assert.Equal(t, int64(120), v, "each process moved adds what it held")
	l.Add("b", 5)
	l.Settle("a", 100)
	_, ok = l.Get("a")
	assert.True(t, ok, "a move recorded since the read keeps the record")
	l.Settle("a", 120)
	_, ok = l.Get("a")
	assert.False(t, ok, "settled")
	l.Forget("b")
	l.Forget("c")
	assert.Zero(t, l.Len())
}
