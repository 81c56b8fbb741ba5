// Package jobs holds the pure parts of make measure-jobs (the promise
// measured with real jobs over a compressed day): the LS load's day trace,
// the stream of batch jobs, and the outcomes of each configuration against
// the targets. Nothing here does I/O; the runner (test/measure/jobs) drives
// the node in a box, the real YARN and the load.
package jobs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Day is a compressed day of LS load: Phases phases over Length, LS's load
// a fraction of the node's CPU following a diurnal curve from Night (its
// low, at 04:00) to Peak (its high, at 16:00), each phase's level moved by
// up to ±Noise of itself, drawn from Seed. The same Day gives the same
// trace: every configuration of a run sees the same load.
type Day struct {
	Phases      int
	Length      time.Duration
	Night, Peak float64
	Noise       float64
	Seed        uint64
}

// DefaultDay is make measure-jobs' day: 24 phases over 3 minutes (the
// issue's 20–30 minutes is -day; 3 minutes keeps six configurations × two
// repeats, with each day's start and drain, near an hour here), 15% of the
// node at night, 70% at the peak, ±10% noise.
func DefaultDay() Day {
	return Day{Phases: 24, Length: 3 * time.Minute, Night: 0.15, Peak: 0.70, Noise: 0.10, Seed: 1}
}

// Phase is one phase of the day.
type Phase struct {
	// Index counts from 0; Hour is the hour of the day the phase stands
	// for (its middle).
	Index int
	Hour  float64
	// Start is the phase's start from the day's; Duration its length.
	Start, Duration time.Duration
	// Level is LS's load as a fraction of the node's CPU.
	Level float64
}

// Validate says what is wrong with d, or nil.
func (d Day) Validate() error {
	switch {
	case d.Phases < 1:
		return fmt.Errorf("a day needs at least one phase (got %d)", d.Phases)
	case d.Length < time.Duration(d.Phases)*time.Second:
		return fmt.Errorf("a day of %d phases needs at least a second a phase (got %v)", d.Phases, d.Length)
	case d.Night <= 0 || d.Peak > 1 || d.Night > d.Peak:
		return fmt.Errorf("LS's load needs 0 < night ≤ peak ≤ 1 (got %.2f and %.2f)", d.Night, d.Peak)
	case d.Noise < 0 || d.Noise >= 1:
		return fmt.Errorf("the noise is a fraction of a phase's level in [0, 1) (got %.2f)", d.Noise)
	}
	return nil
}

// Trace returns the day's phases.
func (d Day) Trace() ([]Phase, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(d.Seed, 0x6a6f6273)) // "jobs"
	each := d.Length / time.Duration(d.Phases)
	out := make([]Phase, d.Phases)
	for i := range out {
		hour := (float64(i) + 0.5) * 24 / float64(d.Phases)
		level := Diurnal(hour, d.Night, d.Peak)
		if d.Noise > 0 {
			level *= 1 + d.Noise*(2*rng.Float64()-1)
		}
		out[i] = Phase{Index: i, Hour: hour, Start: time.Duration(i) * each, Duration: each,
			Level: math.Min(1, math.Max(0.01, level))}
	}
	return out, nil
}

// Diurnal is the load at hour (0–24) on a cosine from low at 04:00 to high
// at 16:00.
func Diurnal(hour, low, high float64) float64 {
	return low + (high-low)*(1-math.Cos(2*math.Pi*(hour-4)/24))/2
}

// PeakPhase returns the index of the phase with the highest level.
func PeakPhase(phases []Phase) int {
	best := 0
	for i, p := range phases {
		if p.Level > phases[best].Level {
			best = i
		}
	}
	return best
}
