package lsslo

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var inf = math.Inf(1)

func bk(counts ...float64) Buckets {
	return Buckets{Bounds: []float64{0.01, 0.05, 0.1, inf}, Counts: counts}
}

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    float64
		b    Buckets
		want float64
	}{
		// 100 observations: 50 ≤ 10ms, 40 in (10, 50], 10 in (50, 100].
		{"median, first bucket", 0.5, bk(50, 90, 100, 100), 0.01},
		{"p25 interpolates from 0", 0.25, bk(50, 90, 100, 100), 0.005},
		{"p70 interpolates in the second", 0.7, bk(50, 90, 100, 100), 0.03},
		{"p99 in the third", 0.99, bk(50, 90, 100, 100), 0.095},
		{"all in the first bucket", 0.99, bk(10, 10, 10, 10), 0.0099},
		{"all in +Inf: the highest finite bound", 0.99, bk(0, 0, 0, 10), 0.1},
		{"rank in +Inf", 0.99, bk(90, 90, 90, 100), 0.1},
		{"empty", 0.99, bk(0, 0, 0, 0), math.NaN()},
		{"non-monotonic: malformed", 0.99, bk(5, 3, 7, 7), math.NaN()},
		{"no +Inf: malformed", 0.5, Buckets{Bounds: []float64{1, 2}, Counts: []float64{1, 2}}, math.NaN()},
		{"first bound 0", 0.1, Buckets{Bounds: []float64{0, 1, inf}, Counts: []float64{5, 10, 10}}, 0},
		{"negative first bound", 0.1, Buckets{Bounds: []float64{-1, 1, inf}, Counts: []float64{5, 10, 10}}, -1},
		{"q NaN", math.NaN(), bk(50, 90, 100, 100), math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Quantile(tc.q, tc.b)
			if math.IsNaN(tc.want) {
				assert.True(t, math.IsNaN(got), "got %v", got)
				return
			}
			assert.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

func TestSlack(t *testing.T) {
	assert.Equal(t, 1.0, Slack(20*time.Millisecond, 0))
	assert.Equal(t, 0.5, Slack(20*time.Millisecond, 10*time.Millisecond))
	assert.Equal(t, 0.0, Slack(20*time.Millisecond, 20*time.Millisecond))
	assert.Equal(t, -1.0, Slack(20*time.Millisecond, 40*time.Millisecond))
	assert.True(t, math.IsInf(Slack(0, time.Millisecond), -1))
}

func TestSub(t *testing.T) {
	d, ok := Sub(bk(50, 90, 100, 110), bk(40, 80, 85, 90))
	require.True(t, ok)
	assert.Equal(t, []float64{10, 10, 15, 20}, d.Counts)

	_, ok = Sub(bk(30, 90, 100, 110), bk(40, 80, 85, 90))
	assert.False(t, ok, "a bucket decreased: a reset")
	_, ok = Sub(Buckets{Bounds: []float64{0.01, inf}, Counts: []float64{1, 2}}, bk(0, 0, 0, 0))
	assert.False(t, ok, "another bucket set: a reset")
}

func TestRingWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	w := 5 * time.Second
	var r ring
	_, ok := r.window(w)
	assert.False(t, ok, "empty")
	assert.False(t, r.add(sample{at(0), bk(0, 0, 0, 0)}, w))
	_, ok = r.window(w)
	assert.False(t, ok, "one scrape is no window")

	for i := 1; i <= 3; i++ {
		r.add(sample{at(float64(i)), bk(float64(10*i), float64(10*i), float64(10*i), float64(10*i))}, w)
	}
	d, ok := r.window(w)
	require.True(t, ok)
	assert.True(t, d.Short, "the ring is 3 s old, the window 5 s")
	assert.Equal(t, 3*time.Second, d.Span)
	assert.Equal(t, 30.0, d.Total())

	for i := 4; i <= 9; i++ {
		r.add(sample{at(float64(i)), bk(float64(10*i), float64(10*i), float64(10*i), float64(10*i))}, w)
	}
	d, ok = r.window(w)
	require.True(t, ok)
	assert.False(t, d.Short)
	assert.Equal(t, w, d.Span)
	assert.Equal(t, 50.0, d.Total(), "90 at 9 s − 40 at 4 s")
	assert.Len(t, r.samples, 6, "older samples than the base are dropped")

	// A restart: the counts fall. The ring starts over, the window is quiet.
	assert.True(t, r.add(sample{at(10), bk(1, 1, 1, 1)}, w))
	_, ok = r.window(w)
	assert.False(t, ok)
	r.add(sample{at(11), bk(3, 3, 3, 3)}, w)
	d, ok = r.window(w)
	require.True(t, ok)
	assert.Equal(t, 2.0, d.Total())

	// Another bucket layout is a reset too.
	assert.True(t, r.add(sample{at(12), Buckets{Bounds: []float64{1, inf}, Counts: []float64{5, 5}}}, w))
	assert.Len(t, r.samples, 1)
}

func TestEvaluate(t *testing.T) {
	s := SLO{Quantile: 0.99, Target: 80 * time.Millisecond, MinRequests: 20}
	p := Evaluate(s, Delta{Buckets: bk(50, 90, 100, 100), Span: 5 * time.Second})
	assert.True(t, p.Known)
	assert.Equal(t, 95*time.Millisecond, p.Latency)
	assert.InDelta(t, -0.1875, p.Slack, 1e-9)
	assert.Equal(t, uint64(100), p.Requests)
	assert.Equal(t, 5*time.Second, p.Window)

	p = Evaluate(s, Delta{Buckets: bk(19, 19, 19, 19)})
	assert.True(t, p.Quiet)
	assert.False(t, p.Known)
	assert.Equal(t, uint64(19), p.Requests)

	p = Evaluate(s, Delta{Buckets: bk(0, 0, 0, 0)})
	assert.True(t, p.Quiet, "an empty window is quiet")

	// The p99 beyond the highest finite bound (100 ms): under a 200 ms
	// target it may be met or not: unknown, never spare slack; over an
	// 80 ms target it is violated.
	wide := SLO{Quantile: 0.99, Target: 200 * time.Millisecond, MinRequests: 20}
	p = Evaluate(wide, Delta{Buckets: bk(50, 90, 95, 100)})
	assert.False(t, p.Known, "a quantile in +Inf with the last bound below the target is not known")
	assert.False(t, p.Quiet)
	assert.Contains(t, p.Why, "highest finite bucket")
	p = Evaluate(s, Delta{Buckets: bk(50, 90, 95, 100)})
	assert.True(t, p.Known)
	assert.Less(t, p.Slack, 0.0, "beyond a last bound above the target: violated")
}

func TestSummarize(t *testing.T) {
	at := time.Unix(5, 0)
	sig := Summarize(at, []PodSLO{
		{Pod: "a/x", Known: true, Slack: 0.5},
		{Pod: "a/y", Known: true, Slack: -0.1},
		{Pod: "a/z", Known: true, Slack: -0.1},
		{Pod: "b/q", Quiet: true},
		{Pod: "b/u", Why: "no pod IP"},
		{Pod: "b/v", Why: "HTTP 500", Slack: -5},
	})
	assert.Equal(t, at, sig.At)
	assert.Equal(t, 6, sig.Declared)
	assert.Equal(t, 1, sig.Quiet)
	assert.Equal(t, 2, sig.Unknown)
	assert.Equal(t, "a/y", sig.Worst.Pod, "the least slack; the first by name on a tie; unknown pods never")

	sig = Summarize(at, []PodSLO{{Pod: "b/q", Quiet: true}})
	assert.Equal(t, "", sig.Worst.Pod)
	assert.Equal(t, Signal{At: at}, Summarize(at, nil))
}
