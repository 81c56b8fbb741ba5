package yarnevict

import (
	"time"
)

// The memory relief ladder's ResourceManager rung (YARNMemoryRelief with
// YARNRMPreemption): a pressure that grows slowly enough to leave the
// ResourceManager time to preempt is first asked of it, as a capacity
// below YARN's allocation on the node (the RM sync's over-commit path), so
// that the ApplicationMasters see PREEMPTED, which MapReduce and Spark do
// not count as failures; a fast one meets the kill at the threshold as
// before. The decision is pure (RMAskPlan); the growth comes from the
// strategy's checks (GrowthTracker).

// GrowthTracker keeps the node's memory usage at recent checks and gives
// its growth rate.
type GrowthTracker struct {
	// Window is how far back samples count.
	Window  time.Duration
	samples []usageSample
}

type usageSample struct {
	at   time.Time
	used int64
}

// Add records usage used at t (t after every earlier sample).
func (g *GrowthTracker) Add(t time.Time, used int64) {
	g.samples = append(g.samples, usageSample{t, used})
	cut := 0
	for cut < len(g.samples) && t.Sub(g.samples[cut].at) > g.Window {
		cut++
	}
	g.samples = g.samples[cut:]
}

// Reset forgets every sample (the episode ended).
func (g *GrowthTracker) Reset() { g.samples = g.samples[:0] }

// Rate is the least-squares slope of usage over the window, in bytes a
// second; ok is false with fewer than three samples or samples spanning
// less than half the window (too little to tell a trend from noise).
func (g *GrowthTracker) Rate() (float64, bool) {
	n := len(g.samples)
	if n < 3 || g.samples[n-1].at.Sub(g.samples[0].at) < g.Window/2 {
		return 0, false
	}
	t0 := g.samples[0].at
	var st, su, stt, stu float64
	for _, s := range g.samples {
		x, y := s.at.Sub(t0).Seconds(), float64(s.used)
		st, su, stt, stu = st+x, su+y, stt+x*x, stu+x*y
	}
	fn := float64(n)
	den := fn*stt - st*st
	if den == 0 {
		return 0, false
	}
	return (fn*stu - st*su) / den, true
}

// RMAskInput is what one decision reads.
type RMAskInput struct {
	// Used is node memory used now; Start the throttle band's start,
	// Threshold and Lower the levels of memoryEvictThresholdPercent and
	// memoryEvictLowerPercent, all in bytes.
	Used, Start, Threshold, Lower int64
	// Rate is node memory's growth, bytes a second (GrowthTracker).
	Rate float64
	// RMDelay is how long the RM takes to release once asked: the RM
	// sync's interval and request timeout, the over-commit timeout and the
	// grace for the preemption to show.
	RMDelay time.Duration
	// AllocatedMB is YARN's memory allocation on the node (MiB).
	AllocatedMB int64
}

// RMAskDecision says whether to ask the RM and for how much.
type RMAskDecision struct {
	Ask bool
	// ReleaseMB is the YARN allocation to release (MiB).
	ReleaseMB int64
	// TimeToThreshold is when usage reaches the threshold at the rate
	// (0: not growing, or there already).
	TimeToThreshold time.Duration
}

// RMAskPlan asks the RM for a release when node memory is in the band,
// growing, and would reach the threshold later than the RM can release:
// enough to bring usage, as projected to when the RM has released, down
// to the lower percent, at most YARN's allocation.
func RMAskPlan(in RMAskInput) RMAskDecision {
	var d RMAskDecision
	if in.Used < in.Start || in.Used >= in.Threshold || in.Rate <= 0 || in.AllocatedMB <= 0 {
		return d
	}
	d.TimeToThreshold = time.Duration(float64(in.Threshold-in.Used) / in.Rate * float64(time.Second))
	if d.TimeToThreshold <= in.RMDelay {
		return d // too fast for the RM: the kill at the threshold
	}
	projected := in.Used + int64(in.Rate*in.RMDelay.Seconds())
	need := projected - in.Lower
	if need <= 0 {
		return d
	}
	d.Ask = true
	d.ReleaseMB = min((need+1<<20-1)>>20, in.AllocatedMB)
	return d
}
