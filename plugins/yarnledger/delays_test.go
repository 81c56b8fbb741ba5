package yarnledger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNoticeDelay(t *testing.T) {
	for _, tc := range []struct {
		name              string
		running           bool
		interval, timeout time.Duration
		want              time.Duration
	}{
		{"no sync running: nothing waited for", false, 10 * time.Second, 5 * time.Second, 0},
		{"the interval and the RM's timeout", true, 10 * time.Second, 5 * time.Second, 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, NoticeDelay(tc.running, tc.interval, tc.timeout))
		})
	}
}

func TestReleaseDelay(t *testing.T) {
	const s = time.Second
	for _, tc := range []struct {
		name                                              string
		interval, timeout, preemption, flagGrace, derived time.Duration
		want                                              time.Duration
	}{
		{"before any ask: the flag's grace", 10 * s, 5 * s, 3 * s, 5 * s, 0, 23 * s},
		{"the grace derived from the RM's heartbeat", 10 * s, 5 * s, 3 * s, 5 * s, 31 * s, 49 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ReleaseDelay(tc.interval, tc.timeout, tc.preemption, tc.flagGrace, tc.derived))
		})
	}
}

func TestMemoryMiBCeil(t *testing.T) {
	for _, tc := range []struct {
		bytes, want int64
	}{
		{0, 0}, {1, 1}, {1 << 20, 1}, {1<<20 + 1, 2}, {3 << 30, 3 << 10},
	} {
		assert.Equal(t, tc.want, Batch{MemoryBytes: tc.bytes}.MemoryMiBCeil(), "%d bytes", tc.bytes)
	}
}
