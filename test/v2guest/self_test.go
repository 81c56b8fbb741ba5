package v2guest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestGuestTimeouts(t *testing.T) {
	for _, tc := range []struct {
		budget, test, guest time.Duration
	}{
		{30 * time.Minute, 25 * time.Minute, 28 * time.Minute},
		{60 * time.Minute, 55 * time.Minute, 58 * time.Minute},
		{10 * time.Minute, 10 * time.Minute, 10 * time.Minute},
		{time.Minute, time.Minute, time.Minute},
	} {
		test, guest := GuestTimeouts(tc.budget)
		assert.Equal(t, tc.test, test, "budget %s", tc.budget)
		assert.Equal(t, tc.guest, guest, "budget %s", tc.budget)
		if tc.budget > 2*bootMargin {
			// The guest's tests end first, the guest (and qemu's two
			// minutes to power off) before go test kills the host.
			assert.Less(t, test, guest)
			assert.LessOrEqual(t, guest+2*time.Minute, tc.budget)
		}
	}
}

func TestWithTestTimeout(t *testing.T) {
	d := 25 * time.Minute
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"as go test passes it", []string{"-test.paniconexit0", "-test.timeout=30m0s", "-test.run=^TestV2$"},
			[]string{"-test.timeout=25m0s", "-test.paniconexit0", "-test.run=^TestV2$"}},
		{"absent", []string{"-test.v"}, []string{"-test.timeout=25m0s", "-test.v"}},
		{"value apart", []string{"-test.timeout", "30m", "-test.v"}, []string{"-test.timeout=25m0s", "-test.v"}},
		{"two dashes", []string{"--test.timeout=1h"}, []string{"-test.timeout=25m0s"}},
		{"not the flag", []string{"-test.timeoutx=1"}, []string{"-test.timeout=25m0s", "-test.timeoutx=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, WithTestTimeout(tc.args, d))
		})
	}
}
