// Package growth measures how fast memory grows, for the eviction
// strategies and the memory relief: a victim's growth over the usage
// collector's recent samples in koordlet's metric cache (Window,
// FromSamples, History), what it will add before a kill's release is done
// (ReleaseHorizon, Projected), and node memory's growth rate over the
// relief's checks (Tracker).
package growth

import (
	"time"

	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
)

// Window is how far back a victim's memory growth is measured, from the
// usage collector's samples in koordlet's metric cache, and how far back
// the relief's ResourceManager rung reads node memory's growth. One window
// on purpose: the rung asks the RM for what the plan would project.
const Window = 10 * time.Second

// FromSamples returns how much usage grew over a window from samples
// (oldest first, values in bytes) and now, the usage read at decision
// time: now minus the smallest sample. A victim that started within the
// window grew from nothing. ok is false when nothing is known (no samples
// and it did not start within the window).
func FromSamples(samples []float64, now int64, startedWithinWindow bool) (growth int64, ok bool) {
	if startedWithinWindow {
		return max(now, 0), true
	}
	if len(samples) == 0 {
		return 0, false
	}
	lowest := samples[0]
	for _, s := range samples[1:] {
		lowest = min(lowest, s)
	}
	return max(now-int64(lowest), 0), true
}

// ReleaseHorizon is how far ahead a memory plan looks: the time until the
// victims' memory is released (the SIGTERM grace, then their exit, at most
// a second for a JVM's address space) plus the time until the next check
// would see the node again (the strategy's interval).
func ReleaseHorizon(grace, interval time.Duration) time.Duration {
	return grace + time.Second + interval
}

// Projected is how much a usage that grew by growth over Window grows over
// horizon at that rate; never negative.
func Projected(growth int64, horizon time.Duration) int64 {
	if growth <= 0 || horizon <= 0 {
		return 0
	}
	return int64(float64(growth) * float64(horizon) / float64(Window))
}

// samples collects the values of the series a query matches, oldest first
// within each series. It is a koordlet metric-cache MetricResult.
type samples struct {
	meta   metriccache.MetricMeta
	values []float64
}

// GetKind returns the queried kind.
func (s *samples) GetKind() string { return s.meta.GetKind() }

// GetProperties returns the queried properties.
func (s *samples) GetProperties() map[string]string { return s.meta.GetProperties() }

// AddSeries appends the series' values.
func (s *samples) AddSeries(series promstorage.Series) error {
	it := series.Iterator()
	for it.Next() {
		_, v := it.At()
		s.values = append(s.values, v)
	}
	return it.Err()
}

// History reads the recent samples of many series from one querier over
// [now − window, now]. A nil History (no metric cache) knows nothing.
type History struct {
	q metriccache.Querier
}

// NewHistory opens a querier over the window before now; nil when the
// metric cache is missing or cannot be queried. Close it after use.
func NewHistory(mc metriccache.MetricCache, now time.Time, window time.Duration) *History {
	if mc == nil {
		return nil
	}
	q, err := mc.Querier(now.Add(-window), now)
	if err != nil {
		return nil
	}
	return &History{q: q}
}

// Values returns the samples of kind with props (nil when none).
func (h *History) Values(kind metriccache.MetricResource, props map[metriccache.MetricProperty]string) []float64 {
	if h == nil {
		return nil
	}
	meta, err := kind.BuildQueryMeta(props)
	if err != nil {
		return nil
	}
	res := &samples{meta: meta}
	if err := h.q.Query(meta, nil, res); err != nil {
		return nil
	}
	return res.values
}

// Close releases the querier.
func (h *History) Close() {
	if h != nil {
		h.q.Close()
	}
}

// Tracker keeps node memory's usage at recent checks and gives its growth
// rate (the relief's ResourceManager rung).
type Tracker struct {
	// Window is how far back samples count.
	Window  time.Duration
	samples []usageSample
}

type usageSample struct {
	at   time.Time
	used int64
}

// Add records usage used at t (t after every earlier sample).
func (g *Tracker) Add(t time.Time, used int64) {
	g.samples = append(g.samples, usageSample{t, used})
	cut := 0
	for cut < len(g.samples) && t.Sub(g.samples[cut].at) > g.Window {
		cut++
	}
	g.samples = g.samples[cut:]
}

// Reset forgets every sample (the episode ended).
func (g *Tracker) Reset() { g.samples = g.samples[:0] }

// Rate is the least-squares slope of usage over the window, in bytes a
// second; ok is false with fewer than three samples or samples spanning
// less than half the window (too little to tell a trend from noise).
func (g *Tracker) Rate() (float64, bool) {
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
