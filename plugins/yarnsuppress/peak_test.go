package yarnsuppress

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPeak(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	type add struct {
		at   time.Duration // after t0
		v    float64
		want float64 // the peak Add returns
	}
	tests := []struct {
		name           string
		window, maxGap time.Duration
		adds           []add
		wantLen        int
	}{
		{"rise: the peak is the last", 30 * time.Second, 3 * time.Second,
			[]add{{0, 1, 1}, {time.Second, 2, 2}, {2 * time.Second, 3, 3}}, 3},
		{"rise then fall: held for the window, then follows", 30 * time.Second, 0,
			[]add{{0, 1, 1}, {time.Second, 3, 3}, {2 * time.Second, 0.5, 3}, {3 * time.Second, 0.5, 3}, {31 * time.Second, 0.5, 3}, {32 * time.Second, 0.5, 0.5}}, 4},
		{"older than the window dropped", 3 * time.Second, 2 * time.Second,
			[]add{{0, 3, 3}, {time.Second, 1, 3}, {2 * time.Second, 1, 3}, {3 * time.Second, 1, 3}, {4 * time.Second, 1, 1}}, 4},
		{"a second, lower peak follows the first out", 3 * time.Second, 2 * time.Second,
			[]add{{0, 3, 3}, {time.Second, 2, 3}, {2 * time.Second, 1, 3}, {3 * time.Second, 1, 3}, {4 * time.Second, 1, 2}, {5 * time.Second, 1, 1}}, 4},
		{"a gap starts empty", 30 * time.Second, 3 * time.Second,
			[]add{{0, 3, 3}, {time.Second, 1, 3}, {5 * time.Second, 1, 1}}, 1},
		{"a gap of exactly maxGap keeps the ring", 30 * time.Second, 3 * time.Second,
			[]add{{0, 3, 3}, {3 * time.Second, 1, 3}}, 2},
		{"time going backwards starts empty", 30 * time.Second, 3 * time.Second,
			[]add{{2 * time.Second, 3, 3}, {time.Second, 1, 1}}, 1},
		{"no window: only the latest", 0, 3 * time.Second,
			[]add{{0, 3, 3}, {time.Second, 1, 1}}, 1},
		{"no gap limit: the window alone", 30 * time.Second, 0,
			[]add{{0, 3, 3}, {20 * time.Second, 1, 3}, {31 * time.Second, 1, 1}}, 2},
		{"negative values are values", 30 * time.Second, 0,
			[]add{{0, -2, -2}, {time.Second, -1, -1}, {2 * time.Second, -3, -1}}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Peak{Window: tt.window, MaxGap: tt.maxGap}
			assert.Zero(t, p.Len())
			for i, a := range tt.adds {
				assert.Equal(t, a.want, p.Add(t0.Add(a.at), a.v), "add %d (%v at +%v)", i, a.v, a.at)
				assert.Equal(t, a.want, p.Max())
				assert.Equal(t, t0.Add(a.at), p.Last())
			}
			if tt.wantLen > 0 {
				assert.Equal(t, tt.wantLen, p.Len())
			}
		})
	}
}

func TestPeakBounded(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	p := &Peak{Window: time.Hour}
	p.Add(t0, 5)
	for i := 1; i < 3*maxPeakSamples; i++ {
		p.Add(t0.Add(time.Duration(i)*time.Millisecond), 1)
	}
	assert.Equal(t, maxPeakSamples, p.Len())
	assert.Equal(t, 1.0, p.Max(), "the oldest samples go first when the ring is full")
	assert.Empty(t, (&Peak{}).Last())
}
