package yarnevict

import (
	"time"

	promstorage "github.com/prometheus/prometheus/storage"
	corev1 "k8s.io/api/core/v1"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

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

// history reads the recent samples of many series from one querier over
// [now − window, now]. A nil history (no metric cache) knows nothing.
type history struct {
	q metriccache.Querier
}

// newHistory opens a querier over the window before now; nil when the
// metric cache is missing or cannot be queried. Close it after use.
func newHistory(mc metriccache.MetricCache, now time.Time, window time.Duration) *history {
	if mc == nil {
		return nil
	}
	q, err := mc.Querier(now.Add(-window), now)
	if err != nil {
		return nil
	}
	return &history{q: q}
}

// values returns the samples of kind with props (nil when none).
func (h *history) values(kind metriccache.MetricResource, props map[metriccache.MetricProperty]string) []float64 {
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
func (h *history) Close() {
	if h != nil {
		h.q.Close()
	}
}

// noteGrowth sets v.MemoryGrowth from its recent samples and its usage now.
func noteGrowth(v *Victim, recent []float64, now time.Time) {
	startedWithin := !v.Started.IsZero() && now.Sub(v.Started) < GrowthWindow
	if g, ok := Growth(recent, v.MemoryUsed, startedWithin); ok {
		v.MemoryGrowth = g
	}
}

// podCPUSeconds is the CPU time the pod has spent (its cgroup's cpuacct
// usage); 0 when unknown.
func podCPUSeconds(r resourceexecutor.CgroupReader, pod *corev1.Pod) float64 {
	if r == nil {
		return 0
	}
	ns, err := r.ReadCPUAcctUsage(koordletutil.GetPodCgroupParentDir(pod))
	if err != nil {
		return 0
	}
	return float64(ns) / 1e9
}

// newUsageReader reads container cgroup files of koordlet's cgroup root and
// version, keeping nothing open between decisions.
func newUsageReader() *cgroups.UsageReader {
	return cgroups.NewUsageReader(system.Conf.CgroupRootDir, system.GetCurrentCgroupVersion() == system.CgroupVersionV2).NoKeep()
}

// containerCPUSeconds is the CPU time the container has spent (its own
// cpuacct cgroup); 0 when unknown.
func containerCPUSeconds(r *cgroups.UsageReader, c *store.Container) float64 {
	ref := c.Cgroups[cgroups.CPUAcct]
	if !ref.Owned {
		return 0
	}
	ns, err := r.CPUUsage(ref.Dir)
	if err != nil {
		return 0
	}
	return float64(ns) / 1e9
}
