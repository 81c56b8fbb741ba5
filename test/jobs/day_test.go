package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultDay(t *testing.T) {
	d := DefaultDay()
	phases, err := d.Trace()
	require.NoError(t, err)
	require.Len(t, phases, 24)
	var end time.Duration
	for i, p := range phases {
		assert.Equal(t, i, p.Index)
		assert.Equal(t, end, p.Start, "phase %d starts where the last ended", i)
		assert.Equal(t, 7500*time.Millisecond, p.Duration)
		end = p.Start + p.Duration
		assert.InDelta(t, Diurnal(p.Hour, d.Night, d.Peak), p.Level, d.Noise*p.Level/(1-d.Noise)+1e-9, "phase %d within the noise", i)
		assert.GreaterOrEqual(t, p.Level, d.Night*(1-d.Noise)-1e-9)
		assert.LessOrEqual(t, p.Level, d.Peak*(1+d.Noise)+1e-9)
	}
	assert.Equal(t, d.Length, end)
	peak := PeakPhase(phases)
	assert.InDelta(t, 16, phases[peak].Hour, 2.5, "the peak in the afternoon")
	assert.Less(t, phases[4].Level, phases[peak].Level/2, "night is well below the peak")

	again, err := d.Trace()
	require.NoError(t, err)
	assert.Equal(t, phases, again, "the same day gives the same trace")
	d.Seed = 2
	other, err := d.Trace()
	require.NoError(t, err)
	assert.NotEqual(t, phases, other, "another seed, other noise")
}

func TestDiurnal(t *testing.T) {
	assert.InDelta(t, 0.15, Diurnal(4, 0.15, 0.7), 1e-9)
	assert.InDelta(t, 0.70, Diurnal(16, 0.15, 0.7), 1e-9)
	assert.InDelta(t, Diurnal(10, 0.15, 0.7), Diurnal(22, 0.15, 0.7), 1e-9, "symmetric about the peak")
}

func TestDayValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		day  func(*Day)
		want string
	}{
		{"no phases", func(d *Day) { d.Phases = 0 }, "at least one phase"},
		{"phases under a second", func(d *Day) { d.Length = 10 * time.Second }, "a second a phase"},
		{"night above peak", func(d *Day) { d.Night = 0.8 }, "night ≤ peak"},
		{"peak above the node", func(d *Day) { d.Peak = 1.2 }, "peak ≤ 1"},
		{"noise of a whole level", func(d *Day) { d.Noise = 1 }, "noise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DefaultDay()
			tc.day(&d)
			_, err := d.Trace()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
