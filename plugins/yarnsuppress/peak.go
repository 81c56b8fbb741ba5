package yarnsuppress

import "time"

// maxPeakSamples bounds a Peak's memory whatever the rate it is fed at
// (upstream's suppress feeds it once a round: a 30 s window holds ~30).
const maxPeakSamples = 1024

// Peak is the largest of the values seen over the last Window: a ring of
// timestamped samples, the ones older than the window dropped. A gap (no
// sample for longer than MaxGap) or time going backwards starts it empty:
// what came before is another lifetime (a pod whose usage went unreported,
// a clock step), not the recent past. It does no I/O and keeps no clock:
// the caller gives each sample its time.
type Peak struct {
	// Window is how long a sample counts; 0 or less: only the latest.
	Window time.Duration
	// MaxGap is the longest time between two samples that keeps the
	// earlier ones; 0 or less: no gap limit (the window alone).
	MaxGap  time.Duration
	samples []peakSample
}

type peakSample struct {
	at time.Time
	v  float64
}

// Add records v at at and returns the peak over the window ending at at
// (v itself when it is the first sample, after a gap or a step back).
func (p *Peak) Add(at time.Time, v float64) float64 {
	if n := len(p.samples); n > 0 {
		last := p.samples[n-1].at
		if at.Before(last) || (p.MaxGap > 0 && at.Sub(last) > p.MaxGap) {
			p.samples = p.samples[:0]
		}
	}
	if p.Window <= 0 {
		p.samples = p.samples[:0]
	}
	drop := 0
	for drop < len(p.samples) && at.Sub(p.samples[drop].at) > p.Window {
		drop++
	}
	if over := len(p.samples) - drop + 1 - maxPeakSamples; over > 0 {
		drop += over
	}
	p.samples = append(p.samples[:0], p.samples[drop:]...)
	p.samples = append(p.samples, peakSample{at: at, v: v})
	return p.Max()
}

// Max returns the largest value held (0 when empty).
func (p *Peak) Max() float64 {
	var m float64
	for i, s := range p.samples {
		if i == 0 || s.v > m {
			m = s.v
		}
	}
	return m
}

// Last returns the time of the latest sample (zero when empty).
func (p *Peak) Last() time.Time {
	if len(p.samples) == 0 {
		return time.Time{}
	}
	return p.samples[len(p.samples)-1].at
}

// Len returns how many samples are held.
func (p *Peak) Len() int { return len(p.samples) }
