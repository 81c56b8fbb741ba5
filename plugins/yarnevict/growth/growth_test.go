package growth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTracker(t *testing.T) {
	g := Tracker{Window: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	_, ok := g.Rate()
	assert.False(t, ok, "no samples")
	for i := 0; i < 3; i++ {
		g.Add(t0.Add(time.Duration(i)*time.Second), int64(i)*(10<<20))
	}
	_, ok = g.Rate()
	assert.False(t, ok, "3 samples over 2 s of a 10-s window: too short")
	for i := 3; i <= 12; i++ {
		g.Add(t0.Add(time.Duration(i)*time.Second), int64(i)*(10<<20))
	}
	r, ok := g.Rate()
	assert.True(t, ok)
	assert.InDelta(t, 10<<20, r, 1, "10 MiB a second")
	assert.Len(t, g.samples, 11, "only the window's samples are kept")
	g.Reset()
	_, ok = g.Rate()
	assert.False(t, ok)
}

func TestGrowth(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		now     int64
		started bool
		want    int64
		ok      bool
	}{
		{"from the lowest sample", []float64{300, 200, 250}, 700, false, 500, true},
		{"shrinking is no growth", []float64{900}, 700, false, 0, true},
		{"started within the window: from nothing", nil, 400, true, 400, true},
		{"no samples, older: unknown", nil, 400, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ok := FromSamples(tt.samples, tt.now, tt.started)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, g)
		})
	}
}
