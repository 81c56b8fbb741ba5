package lsslo

import (
	"fmt"
	"math"
	"time"
)

// sample is one good scrape's cumulative buckets.
type sample struct {
	at time.Time
	b  Buckets
}

// maxRing bounds a pod's ring whatever the window and the interval.
const maxRing = 4096

// ring is a pod's recent good scrapes, oldest first.
type ring struct {
	samples []sample
}

// add appends s and drops what no window needs any more (all but the
// newest sample at least window older than s). A counter reset (a bucket
// or the count decreasing, the bucket set changing) starts the ring over
// at s; add says so.
func (r *ring) add(s sample, window time.Duration) (reset bool) {
	if n := len(r.samples); n > 0 && isReset(r.samples[n-1].b, s.b) {
		r.samples = r.samples[:0]
		reset = true
	}
	r.samples = append(r.samples, s)
	// Keep the newest sample at least window old as the base, drop older.
	cut := 0
	for i := range r.samples {
		if s.at.Sub(r.samples[i].at) >= window {
			cut = i
		}
	}
	if len(r.samples)-cut > maxRing {
		cut = len(r.samples) - maxRing
	}
	if cut > 0 {
		r.samples = append(r.samples[:0], r.samples[cut:]...)
	}
	return reset
}

// isReset says whether cur cannot follow prev in one counter's life: the
// bucket set changed or a bucket's count decreased.
func isReset(prev, cur Buckets) bool {
	if len(prev.Bounds) != len(cur.Bounds) {
		return true
	}
	for i := range prev.Bounds {
		if prev.Bounds[i] != cur.Bounds[i] || cur.Counts[i] < prev.Counts[i] {
			return true
		}
	}
	return false
}

// Delta is a window's observations: the buckets' increase from its base
// scrape to its newest.
type Delta struct {
	Buckets
	// Span is the time from the base scrape to the newest; Short says the
	// ring was younger than the window (the span is shorter).
	Span  time.Duration
	Short bool
}

// window returns the delta over window: the newest sample minus the newest
// one at least window older (the oldest when none is: a shorter window);
// ok is false with fewer than two samples.
func (r *ring) window(window time.Duration) (Delta, bool) {
	n := len(r.samples)
	if n < 2 {
		return Delta{}, false
	}
	newest := r.samples[n-1]
	base, short := r.samples[0], true
	for i := n - 2; i >= 0; i-- {
		if newest.at.Sub(r.samples[i].at) >= window {
			base, short = r.samples[i], false
			break
		}
	}
	d, ok := Sub(newest.b, base.b)
	if !ok {
		return Delta{}, false
	}
	return Delta{Buckets: d, Span: newest.at.Sub(base.at), Short: short}, true
}

// Sub is cur − prev bucket by bucket; ok is false when they are not one
// counter's (a reset: the buckets differ or one decreased) or the
// difference is not cumulative.
func Sub(cur, prev Buckets) (Buckets, bool) {
	if isReset(prev, cur) {
		return Buckets{}, false
	}
	d := Buckets{Bounds: cur.Bounds, Counts: make([]float64, len(cur.Counts))}
	for i := range cur.Counts {
		d.Counts[i] = cur.Counts[i] - prev.Counts[i]
		if i > 0 && d.Counts[i] < d.Counts[i-1] {
			return Buckets{}, false
		}
	}
	return d, true
}

// Quantile is the q-quantile of b's observations as Prometheus'
// histogram_quantile computes it: linear interpolation within the bucket
// that holds the rank (from 0 in the first bucket when its bound is
// positive), the highest finite bound when the rank falls in the +Inf
// bucket. NaN when b is empty or not a histogram.
func Quantile(q float64, b Buckets) float64 {
	if math.IsNaN(q) || q < 0 || q > 1 || b.check() != nil || b.Total() <= 0 {
		return math.NaN()
	}
	n := len(b.Bounds)
	rank := q * b.Total()
	i := 0
	for i < n-1 && b.Counts[i] < rank {
		i++
	}
	if i == n-1 {
		return b.Bounds[n-2]
	}
	if i == 0 && b.Bounds[0] <= 0 {
		return b.Bounds[0]
	}
	start, below := 0.0, 0.0
	if i > 0 {
		start, below = b.Bounds[i-1], b.Counts[i-1]
	}
	in := b.Counts[i] - below
	if in <= 0 {
		return b.Bounds[i]
	}
	return start + (b.Bounds[i]-start)*((rank-below)/in)
}

// maxLatency bounds a quantile read from a histogram (its buckets'
// bounds are the pod's to choose).
const maxLatency = time.Hour

// inInf: the q-quantile's rank falls in b's +Inf bucket.
func inInf(q float64, b Buckets) bool {
	n := len(b.Counts)
	return n >= 2 && b.Counts[n-2] < q*b.Total()
}

// Slack is (target − latency) ÷ target: 1 for no latency, 0 at the
// target, below 0 past it.
func Slack(target, latency time.Duration) float64 {
	if target <= 0 {
		return math.Inf(-1)
	}
	return float64(target-latency) / float64(target)
}

// Evaluate is a pod's SLO over delta d: Quiet with fewer than minRequests
// observations, else Known with the quantile, the latency and the slack.
func Evaluate(s SLO, d Delta) PodSLO {
	p := PodSLO{Quantile: s.Quantile, Target: s.Target, Requests: uint64(math.Max(0, d.Total())), Window: d.Span, ShortWindow: d.Short}
	if d.Total() < float64(s.MinRequests) {
		p.Quiet = true
		return p
	}
	v := Quantile(s.Quantile, d.Buckets)
	if math.IsNaN(v) || v < 0 {
		p.Why = "the window's buckets are not a histogram"
		return p
	}
	if n := len(d.Bounds); n >= 2 && inInf(s.Quantile, d.Buckets) && d.Bounds[n-2] < s.Target.Seconds() {
		// The rank is above the highest finite bound, which is below the
		// target: the latency may be anywhere over it, the SLO met or not.
		p.Why = fmt.Sprintf("the quantile is above the histogram's highest finite bucket (%gs), which is below the target", d.Bounds[n-2])
		return p
	}
	v = min(v, maxLatency.Seconds())
	p.Latency = time.Duration(v * float64(time.Second))
	p.Known = true
	p.Slack = Slack(s.Target, p.Latency)
	return p
}

// Summarize is the Signal at over pods: the counts and the Known pod with
// the least slack (the first by Pod on a tie).
func Summarize(at time.Time, pods []PodSLO) Signal {
	sig := Signal{At: at, Declared: len(pods), Pods: pods}
	for _, p := range pods {
		switch {
		case p.Known:
			if sig.Worst.Pod == "" || p.Slack < sig.Worst.Slack || p.Slack == sig.Worst.Slack && p.Pod < sig.Worst.Pod {
				sig.Worst = p
			}
		case p.Quiet:
			sig.Quiet++
		default:
			sig.Unknown++
		}
	}
	return sig
}
