package yarnsuppress

import (
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/helpers"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// lsPeakCache is the metric cache upstream's suppress reads on the View.
// While YARNSuppressLSPeak is on, the LS term of upstream's formula is each
// non-BE pod's peak CPU usage over the window instead of its last sample,
// and the formula's system term stays the one of the round's own samples:
//
//   - a pod CPU usage query of a non-BE pod yields the pod's samples raised
//     by held − last, held the pod's peak over the window (its ring fed with
//     the last sample upstream's query yields, once a round);
//   - the node CPU usage query, which upstream makes after its pod queries,
//     yields the node's samples raised by the round's sum of those raises.
//
// Upstream computes system = node − Σ pods − Σ host apps (at least the
// node's reservation): raised by the same amount on both sides, it is the
// round's own; only the non-BE pods' sum, the LS term, is held. Every other
// query, and every query while the gate is off, is upstream's own.
type lsPeakCache struct {
	metriccache.MetricCache
	// pods lists the node's pods (koordlet's states informer), to know
	// which of the queried pods upstream counts as non-BE.
	pods func() []*statesinformer.PodMeta
	// window is how long a peak is held; maxGap how long a pod may go
	// unseen before its ring starts empty.
	window, maxGap time.Duration
	now            func() time.Time
	enabled        func() bool
	metrics        *LSPeakMetrics

	mu    sync.Mutex
	on    bool
	rings map[string]*Peak
	round lsRound
	// rounds counts the rounds closed while on (tests wait on it).
	rounds int
}

// lsRound is what one suppress round's pod queries held.
type lsRound struct {
	nonBE      map[string]bool // pod uid: counted as non-BE by upstream
	seen       map[string]bool
	last, held float64
}

func newLSPeakCache(mc metriccache.MetricCache, pods func() []*statesinformer.PodMeta, window, maxGap time.Duration, m *LSPeakMetrics) *lsPeakCache {
	return &lsPeakCache{MetricCache: mc, pods: pods, window: window, maxGap: maxGap, now: time.Now,
		enabled: func() bool { return features.Enabled(features.YARNSuppressLSPeak) }, metrics: m}
}

// Querier returns the inner querier, its pod and node CPU usage queries
// answered as the type says.
func (c *lsPeakCache) Querier(start, end time.Time) (metriccache.Querier, error) {
	q, err := c.MetricCache.Querier(start, end)
	if err != nil {
		return q, err
	}
	return &lsPeakQuerier{Querier: q, c: c}, nil
}

// holdPod returns how much the usage query of pod uid, whose last sample is
// v, is raised (0: not held).
func (c *lsPeakCache) holdPod(uid string, v float64) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled() {
		c.stopLocked()
		return 0
	}
	if !c.on {
		c.on = true
		klog.Infof("yarn: BE suppress subtracts the LS pods' peak CPU usage over the last %v (%s); the hold starts empty", c.window, features.YARNSuppressLSPeak)
	}
	if c.round.seen[uid] { // the last round never reached its node query
		c.round = lsRound{}
	}
	if c.round.seen == nil {
		c.round = lsRound{nonBE: map[string]bool{}, seen: map[string]bool{}}
		for _, pm := range c.pods() {
			if pm != nil && pm.Pod != nil {
				c.round.nonBE[string(pm.Pod.UID)] = helpers.NonBEPodFilter(pm.Pod)
			}
		}
	}
	c.round.seen[uid] = true
	if !c.round.nonBE[uid] {
		return 0
	}
	if c.rings == nil {
		c.rings = map[string]*Peak{}
	}
	r := c.rings[uid]
	if r == nil {
		r = &Peak{Window: c.window, MaxGap: c.maxGap}
		c.rings[uid] = r
	}
	held := r.Add(c.now(), v)
	c.round.last += v
	c.round.held += held
	return held - v
}

// closeRound ends the round at upstream's node query and returns how much
// the node's usage is raised: the round's sum of the pods' raises.
func (c *lsPeakCache) closeRound() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		if !c.enabled() {
			c.stopLocked()
		}
		return 0
	}
	r := c.round
	c.round = lsRound{}
	c.rounds++
	c.metrics.observe(r.last, r.held)
	now := c.now()
	for uid, ring := range c.rings {
		if now.Sub(ring.Last()) > c.maxGap || ring.Last().After(now) {
			delete(c.rings, uid) // gone, or no usage reported for a while
		}
	}
	if !c.enabled() { // the round's pods were raised: the node is too, then stop
		c.stopLocked()
	}
	return r.held - r.last
}

// stopLocked forgets every ring: the hold starts empty when turned on.
func (c *lsPeakCache) stopLocked() {
	if !c.on {
		return
	}
	c.on, c.rings, c.round = false, nil, lsRound{}
	c.metrics.clear()
	klog.Infof("yarn: BE suppress subtracts the LS pods' last CPU usage again (%s off)", features.YARNSuppressLSPeak)
}

// lsPeakQuerier answers the pod and node CPU usage queries of upstream's
// suppress round (see lsPeakCache).
type lsPeakQuerier struct {
	metriccache.Querier
	c *lsPeakCache
}

// Query adds the series matching meta to result, the non-BE pods' CPU
// usage and the node's raised while the LS peak is held.
func (q *lsPeakQuerier) Query(meta metriccache.MetricMeta, hints *metriccache.QueryHints, result metriccache.MetricResult) error {
	if !q.c.enabled() && !q.c.isOn() { // off: upstream's own answer
		return q.Querier.Query(meta, hints, result)
	}
	switch meta.GetKind() {
	case string(metriccache.PodMetricCPUUsage):
		if uid := meta.GetProperties()[string(metriccache.MetricPropertyPodUID)]; uid != "" {
			return q.raised(meta, hints, result, func(last float64) float64 { return q.c.holdPod(uid, last) })
		}
	case string(metriccache.NodeMetricCPUUsage):
		return q.raised(meta, hints, result, func(float64) float64 { return q.c.closeRound() })
	}
	return q.Querier.Query(meta, hints, result)
}

// QueryAndClose is Query, then Close.
func (q *lsPeakQuerier) QueryAndClose(meta metriccache.MetricMeta, hints *metriccache.QueryHints, result metriccache.MetricResult) error {
	defer q.Close()
	return q.Query(meta, hints, result)
}

func (c *lsPeakCache) isOn() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.on
}

// raised runs the query, reads the value upstream's "last" aggregation
// gives, and adds the series to result with every sample raised by
// by(last) (unchanged when there is no sample).
func (q *lsPeakQuerier) raised(meta metriccache.MetricMeta, hints *metriccache.QueryHints, result metriccache.MetricResult,
	by func(last float64) float64) error {
	got := &capturedResult{MetricMeta: meta}
	if err := q.Querier.Query(meta, hints, got); err != nil {
		return err
	}
	var d float64
	if agg := metriccache.DefaultAggregateResultFactory.New(meta); got.points > 0 {
		for _, s := range got.series {
			if err := agg.AddSeries(s.raised(0)); err != nil {
				return err
			}
		}
		if last, err := agg.Value(metriccache.AggregationTypeLast); err == nil {
			d = by(last)
		}
	}
	for _, s := range got.series {
		if err := result.AddSeries(s.raised(d)); err != nil {
			return err
		}
	}
	return nil
}

// capturedResult keeps the series a query adds, read while the querier is
// open.
type capturedResult struct {
	metriccache.MetricMeta
	series []capturedSeries
	points int
}

type capturedSeries struct {
	lset    labels.Labels
	samples []point
}

type point struct {
	t int64
	v float64
}

func (p point) T() int64   { return p.t }
func (p point) V() float64 { return p.v }

// AddSeries reads the series' samples.
func (r *capturedResult) AddSeries(s promstorage.Series) error {
	c := capturedSeries{lset: s.Labels().Copy()}
	it := s.Iterator()
	for it.Next() {
		t, v := it.At()
		c.samples = append(c.samples, point{t: t, v: v})
	}
	if err := it.Err(); err != nil {
		return err
	}
	r.series = append(r.series, c)
	r.points += len(c.samples)
	return nil
}

// raised returns the series with every sample raised by d.
func (s capturedSeries) raised(d float64) promstorage.Series {
	out := make([]tsdbutil.Sample, len(s.samples))
	for i, p := range s.samples {
		out[i] = point{t: p.t, v: p.v + d}
	}
	return promstorage.NewListSeries(s.lset, out)
}
