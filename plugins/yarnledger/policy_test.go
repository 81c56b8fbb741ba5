package yarnledger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPatchPolicyDue(t *testing.T) {
	const gi = int64(1 << 30)
	origin := Batch{MilliCPU: 32000, MemoryBytes: 64 * gi}
	p := PatchPolicy{MinInterval: 5 * time.Second, Hysteresis: 10, MaxAge: time.Minute}
	t0 := time.Unix(1700000000, 0)
	onNode := Batch{MilliCPU: 8000, MemoryBytes: 16 * gi}
	for _, tc := range []struct {
		name  string
		want  Batch
		now   time.Time
		force bool
		wait  time.Duration
	}{
		{"growth ≥ 10% of memory: after the min interval", Batch{MilliCPU: 8000, MemoryBytes: 23 * gi}, t0.Add(time.Second), false, 4 * time.Second},
		{"growth ≥ 10% of CPU, interval passed: now", Batch{MilliCPU: 12000, MemoryBytes: 16 * gi}, t0.Add(6 * time.Second), false, 0},
		{"small growth: at max age", Batch{MilliCPU: 9000, MemoryBytes: 17 * gi}, t0.Add(10 * time.Second), false, 50 * time.Second},
		{"a decrease: at max age", Batch{MilliCPU: 1000, MemoryBytes: 2 * gi}, t0.Add(10 * time.Second), false, 50 * time.Second},
		{"a decrease past max age: now", Batch{}, t0.Add(61 * time.Second), false, 0},
		{"a correction: after the min interval", Batch{MilliCPU: 9000, MemoryBytes: 17 * gi}, t0.Add(time.Second), true, 4 * time.Second},
	} {
		assert.Equal(t, tc.wait, p.Due(onNode, tc.want, origin, t0, tc.now, tc.force), tc.name)
	}
	assert.True(t, Grew(onNode, Batch{MilliCPU: 8001}, origin, 0), "no hysteresis: any growth")
	assert.False(t, Grew(onNode, onNode, origin, 0))
}
