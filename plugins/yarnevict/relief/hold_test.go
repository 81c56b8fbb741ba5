package relief

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFloorHold(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type check struct {
		at             int
		floor, held    bool
		want           HoldStep
		wantSinceCheck int // the hold's first check (-1: no hold)
	}
	for _, tc := range []struct {
		name   string
		rm     bool
		checks []check
	}{
		{name: "at the floor, nothing pressing: no hold", checks: []check{
			{0, true, false, HoldWait, -1}, {40, true, false, HoldWait, -1}}},
		{name: "held under the limit: wait", checks: []check{
			{0, true, true, HoldWait, 0}, {29, true, true, HoldWait, 0}}},
		{name: "held for the limit, no RM: the kill", checks: []check{
			{0, true, true, HoldWait, 0}, {30, true, true, HoldKill, 0}}},
		{name: "a moment under the held value does not end the hold", checks: []check{
			{0, true, true, HoldWait, 0}, {10, true, false, HoldWait, 0}, {30, true, true, HoldKill, 0}}},
		{name: "past the limit but not pressing now: wait", checks: []check{
			{0, true, true, HoldWait, 0}, {35, true, false, HoldWait, 0}}},
		{name: "off the floor: the hold ends", checks: []check{
			{0, true, true, HoldWait, 0}, {20, false, false, HoldWait, -1}, {30, true, true, HoldWait, 30}, {59, true, true, HoldWait, 30}}},
		{name: "RM on: asked at the limit, the kill once it had its 20 s", rm: true, checks: []check{
			{0, true, true, HoldWait, 0}, {30, true, true, HoldAskRM, 0}, {49, true, true, HoldWait, 0}, {50, true, true, HoldKill, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h FloorHold
			for _, c := range tc.checks {
				var step HoldStep
				h, step = h.Next(HoldInput{AtFloor: c.floor, Held: c.held, Now: at(c.at), RM: tc.rm, RMDelay: 20 * time.Second})
				assert.Equal(t, c.want, step, "check at %d s", c.at)
				if c.wantSinceCheck < 0 {
					assert.True(t, h.Since.IsZero(), "check at %d s: no hold", c.at)
				} else {
					assert.Equal(t, at(c.wantSinceCheck), h.Since, "check at %d s", c.at)
				}
			}
		})
	}
	// After a kill the hold is measured anew, the RM not asked again.
	h := FloorHold{Since: t0, Checks: 31, AskedAt: at(30)}.Killed(at(50))
	h, step := h.Next(HoldInput{AtFloor: true, Held: true, Now: at(79), RM: true, RMDelay: 20 * time.Second})
	assert.Equal(t, HoldWait, step)
	_, step = h.Next(HoldInput{AtFloor: true, Held: true, Now: at(80), RM: true, RMDelay: 20 * time.Second})
	assert.Equal(t, HoldKill, step, "a limit after the kill, straight to the next kill")
}
