package yarnusage

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

const hierarchy = "kubepods/besteffort/hadoop-yarn"

func newMetricCache(t testing.TB) metriccache.MetricCache {
	cfg := metriccache.NewDefaultConfig()
	cfg.TSDBPath = t.TempDir()
	cfg.TSDBEnablePromMetrics = false
	mc, err := metriccache.NewMetricCache(cfg)
	require.NoError(t, err)
	stop := make(chan struct{})
	go func() { _ = mc.Run(stop) }()
	t.Cleanup(func() { close(stop) })
	return mc
}

func lastValue(t *testing.T, mc metriccache.MetricCache, kind metriccache.MetricResource, props map[metriccache.MetricProperty]string, from, to time.Time) (float64, bool) {
	t.Helper()
	q, err := mc.Querier(from, to)
	require.NoError(t, err)
	defer q.Close()
	meta, err := kind.BuildQueryMeta(props)
	require.NoError(t, err)
	res := metriccache.DefaultAggregateResultFactory.New(meta)
	require.NoError(t, q.Query(meta, nil, res))
	if res.Count() == 0 {
		return 0, false
	}
	v, err := res.Value(metriccache.AggregationTypeLast)
	require.NoError(t, err)
	return v, true
}

// node is a fake root with YARN containers in it.
type node struct {
	t      *testing.T
	helper *system.FileTestUtil
	v2     bool
	st     *store.Store
}

func newNode(t *testing.T, v2 bool) *node {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	helper.SetCgroupsV2(v2)
	return &node{t: t, helper: helper, v2: v2, st: store.New()}
}

func (n *node) dir(name string) string { return hierarchy + "/" + name }

// set writes a container's usage files: CPU time in ns, anon and file
// memory, throttling counters.
func (n *node) set(name string, cpuNs, anon, file, periods, throttled int64) {
	d := n.dir(name)
	if n.v2 {
		n.helper.WriteCgroupFileContents(d, system.CPUStatV2, fmt.Sprintf("usage_usec %d\nuser_usec 0\nsystem_usec 0\nnr_periods %d\nnr_throttled %d\nthrottled_usec 0\n", cpuNs/1000, periods, throttled))
		n.helper.WriteCgroupFileContents(d, system.MemoryStatV2, fmt.Sprintf("anon %d\nfile %d\nactive_anon %d\ninactive_anon 0\nactive_file %d\ninactive_file 0\nunevictable 0\n", anon, file, anon, file))
		return
	}
	n.helper.WriteCgroupFileContents(d, system.CPUAcctUsage, fmt.Sprint(cpuNs))
	n.helper.WriteCgroupFileContents(d, system.CPUStat, fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time 0\n", periods, throttled))
	n.helper.WriteCgroupFileContents(d, system.MemoryStat, fmt.Sprintf("cache %d\nrss %d\ntotal_cache %d\ntotal_rss %d\ntotal_active_anon %d\ntotal_inactive_anon 0\ntotal_active_file %d\ntotal_inactive_file 0\ntotal_unevictable 0\n", file, anon, file, anon, anon, file))
}

func (n *node) resync(names ...string) {
	var scan []cgroups.Container
	var nm []yarn.NMContainer
	for _, name := range names {
		id, err := yarn.ParseContainerID(name)
		require.NoError(n.t, err)
		own := cgroups.Ref{Dir: n.dir(name), Owned: true}
		scan = append(scan, cgroups.Container{Name: name, ID: id, Pids: []int{1}, Cgroups: cgroups.Cgroups{own, own, {Dir: "nm"}, own, {Dir: "nm"}}})
		nm = append(nm, yarn.NMContainer{ID: id, State: yarn.StateRunning, User: "alice", TotalVCoresNeeded: 2, TotalMemoryNeededMB: 1024})
	}
	n.st.Resync(store.Observation{Scan: scan, ScanOK: true, NM: nm, NMOK: true}, time.Now())
}

const (
	am   = "container_e17_1700000000000_0042_01_000001"
	exec = "container_e17_1700000000000_0042_01_000002"
)

func TestCollect(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("cgroupv2=%v", v2), func(t *testing.T) {
			n := newNode(t, v2)
			mc := newMetricCache(t)
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg)
			require.NoError(t, err)
			slo := &slov1alpha1.NodeSLO{}
			c := New(Options{Store: n.st, MetricCache: func() metriccache.MetricCache { return mc },
				Interval: func() time.Duration { return time.Second }, Metrics: m, NodeName: "n1",
				NodeSLO: func() *slov1alpha1.NodeSLO { return slo }, Hierarchy: func() string { return hierarchy }})

			n.set(am, 1e9, 100<<20, 50<<20, 10, 0)
			n.set(exec, 5e9, 300<<20, 200<<20, 100, 0)
			n.resync(am, exec)
			t0 := time.Now()
			cyc := c.Collect(t0)
			assert.Equal(t, 2, cyc.Containers)
			_, ok := lastValue(t, mc, metriccache.ContainerCPUUsageMetric, metriccache.MetricPropertiesFunc.Container(exec), t0.Add(-time.Minute), t0.Add(time.Minute))
			assert.False(t, ok, "the first CPU sample only primes")
			mem, ok := lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(exec), t0.Add(-time.Minute), t0.Add(time.Minute))
			require.True(t, ok)
			assert.Equal(t, float64(300<<20), mem)
			withPC, _ := lastValue(t, mc, metriccache.ContainerMemoryUsageWithPageCacheMetric, metriccache.MetricPropertiesFunc.Container(exec), t0.Add(-time.Minute), t0.Add(time.Minute))
			assert.Equal(t, float64(500<<20), withPC)

			// One second later: the executor used 1.5 cores, the AM 0.5, and
			// the executor was throttled in 50 of 100 periods.
			n.set(am, 1.5e9, 100<<20, 50<<20, 20, 0)
			n.set(exec, 6.5e9, 310<<20, 200<<20, 200, 50)
			t1 := t0.Add(time.Second)
			c.Collect(t1)
			cpu, ok := lastValue(t, mc, metriccache.ContainerCPUUsageMetric, metriccache.MetricPropertiesFunc.Container(exec), t1.Add(-time.Millisecond), t1.Add(time.Minute))
			require.True(t, ok)
			assert.InDelta(t, 1.5, cpu, 1e-9)
			thr, _ := lastValue(t, mc, metriccache.ContainerCPUThrottledMetric, metriccache.MetricPropertiesFunc.Container(exec), t1.Add(-time.Millisecond), t1.Add(time.Minute))
			assert.InDelta(t, 0.5, thr, 1e-9)
			agg, ok := lastValue(t, mc, metriccache.HostAppCPUUsageMetric, metriccache.MetricPropertiesFunc.HostApplication(AggregateName), t1.Add(-time.Millisecond), t1.Add(time.Minute))
			require.True(t, ok)
			assert.InDelta(t, 2.0, agg, 1e-9)
			aggMem, _ := lastValue(t, mc, metriccache.HostAppMemoryUsageMetric, metriccache.MetricPropertiesFunc.HostApplication(AggregateName), t1.Add(-time.Millisecond), t1.Add(time.Minute))
			assert.Equal(t, float64(410<<20), aggMem)

			labels := []string{"n1", exec, "application_1700000000000_0042", "alice", "false"}
			assert.InDelta(t, 1.5, testutil.ToFloat64(m.CPUUsage.WithLabelValues(labels...)), 1e-9)
			assert.Equal(t, float64(310<<20), testutil.ToFloat64(m.MemoryUsage.WithLabelValues(labels...)))
			assert.Equal(t, 2.0, testutil.ToFloat64(m.CPURequest.WithLabelValues(labels...)), "2 vcores: 2 cores")
			assert.Equal(t, float64(1<<30), testutil.ToFloat64(m.MemoryRequest.WithLabelValues(labels...)))
			assert.Equal(t, 2.0, testutil.ToFloat64(m.Containers.WithLabelValues("n1", "RUNNING")))
			assert.Equal(t, 0.0, testutil.ToFloat64(m.AccountingAsBE.WithLabelValues("n1")))
			assert.InDelta(t, 2.0, testutil.ToFloat64(m.TotalCPUUsage.WithLabelValues("n1")), 1e-9, "the node's total")
			assert.Equal(t, float64(410<<20), testutil.ToFloat64(m.TotalMemoryUsage.WithLabelValues("n1")))
			assert.Equal(t, 0, testutil.CollectAndCount(m.AppCPUUsage), "no application series per container")

			// The executor exits and vanishes: its series are deleted.
			require.NoError(t, os.RemoveAll(n.helper.TempDir+"/cpu/"+n.dir(exec)))
			n.resync(am)
			c.Collect(t1.Add(time.Second))
			assert.Equal(t, 1, testutil.CollectAndCount(m.CPUUsage, "koordlet_yarn_container_cpu_usage_cores"), "only the AM's CPU series is left")
			assert.Len(t, c.prev, 1)
			if v2 {
				assert.Equal(t, 2, c.opts.Reader.OpenFiles(), "the executor's files are closed")
			} else {
				assert.Equal(t, 3, c.opts.Reader.OpenFiles(), "the executor's files are closed")
			}
		})
	}
}

// TestCollectSeriesModes: --yarn-container-metrics=application exports one
// set of series per application (sums over its containers) and none per
// container; off exports the node's totals only; the metric cache, which
// eviction reads, gets every container's samples in every mode.
func TestCollectSeriesModes(t *testing.T) {
	n := newNode(t, false)
	mc := newMetricCache(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	mode := config.ContainerMetricsContainer
	c := New(Options{Store: n.st, MetricCache: func() metriccache.MetricCache { return mc },
		Interval: func() time.Duration { return time.Second }, Metrics: m, NodeName: "n1",
		SeriesMode: func() string { return mode }})
	n.set(am, 1e9, 100<<20, 0, 10, 0)
	n.set(exec, 5e9, 300<<20, 0, 10, 0)
	n.resync(am, exec)
	t0 := time.Now()
	c.Collect(t0)
	assert.Equal(t, 2, testutil.CollectAndCount(m.MemoryUsage))

	mode = config.ContainerMetricsApplication
	n.set(am, 1.5e9, 100<<20, 0, 20, 0)
	n.set(exec, 6e9, 300<<20, 0, 20, 0)
	t1 := t0.Add(time.Second)
	c.Collect(t1)
	assert.Equal(t, 0, testutil.CollectAndCount(m.MemoryUsage), "no per-container series")
	assert.Equal(t, 0, testutil.CollectAndCount(m.CPURequest))
	app := []string{"n1", "application_1700000000000_0042", "alice"}
	assert.InDelta(t, 1.5, testutil.ToFloat64(m.AppCPUUsage.WithLabelValues(app...)), 1e-9)
	assert.Equal(t, float64(400<<20), testutil.ToFloat64(m.AppMemoryUsage.WithLabelValues(app...)))
	assert.Equal(t, 4.0, testutil.ToFloat64(m.AppCPURequest.WithLabelValues(app...)))
	assert.Equal(t, float64(2<<30), testutil.ToFloat64(m.AppMemoryRequest.WithLabelValues(app...)))
	assert.Equal(t, 2.0, testutil.ToFloat64(m.AppContainers.WithLabelValues(app...)))
	cpu, ok := lastValue(t, mc, metriccache.ContainerCPUUsageMetric, metriccache.MetricPropertiesFunc.Container(exec), t1.Add(-time.Millisecond), t1.Add(time.Minute))
	require.True(t, ok, "the metric cache still has each container")
	assert.InDelta(t, 1.0, cpu, 1e-9)

	mode = config.ContainerMetricsOff
	c.Collect(t1.Add(time.Second))
	assert.Equal(t, 0, testutil.CollectAndCount(m.AppCPUUsage))
	assert.Equal(t, 0, testutil.CollectAndCount(m.MemoryUsage))
	assert.Equal(t, float64(400<<20), testutil.ToFloat64(m.TotalMemoryUsage.WithLabelValues("n1")), "the node's totals stay")

	// The application's containers leave: its series go with them.
	mode = config.ContainerMetricsApplication
	c.Collect(t1.Add(2 * time.Second))
	assert.Equal(t, 1, testutil.CollectAndCount(m.AppContainers))
	n.resync()
	c.Collect(t1.Add(3 * time.Second))
	assert.Equal(t, 0, testutil.CollectAndCount(m.AppContainers))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.TotalCPUUsage.WithLabelValues("n1")), "no container: 0")
}

// TestAccountingOnlyWhereANodeManagerRuns: a node without a NodeManager
// (no container, none found) exports no accounting series, so the alert on
// it does not fire there.
func TestAccountingOnlyWhereANodeManagerRuns(t *testing.T) {
	n := newNode(t, false)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	present := false
	slo := &slov1alpha1.NodeSLO{}
	c := New(Options{Store: n.st, Metrics: m, NodeName: "n1", Interval: func() time.Duration { return time.Second },
		NodeSLO: func() *slov1alpha1.NodeSLO { return slo }, Hierarchy: func() string { return hierarchy },
		NodeManagerPresent: func() bool { return present }})
	c.Collect(time.Now())
	assert.Equal(t, 0, testutil.CollectAndCount(m.AccountingAsBE), "no NodeManager: nothing to account")
	present = true
	c.Collect(time.Now())
	assert.Equal(t, 1, testutil.CollectAndCount(m.AccountingAsBE))
	present = false
	c.Collect(time.Now())
	assert.Equal(t, 0, testutil.CollectAndCount(m.AccountingAsBE), "the NodeManager left")
}

func TestCollectVanishedMidRead(t *testing.T) {
	n := newNode(t, false)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	c := New(Options{Store: n.st, Metrics: m, NodeName: "n1", Interval: func() time.Duration { return time.Second }})
	n.resync(am) // in the store, but its cgroup files are gone
	cyc := c.Collect(time.Now())
	assert.Equal(t, 1, cyc.Containers)
	assert.Equal(t, 0, cyc.Samples)
}

func TestCheckAccounting(t *testing.T) {
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	be := func(name string, base slov1alpha1.CgroupBaseType, rel string, qos extension.QoSClass) slov1alpha1.HostApplicationSpec {
		return slov1alpha1.HostApplicationSpec{Name: name, QoS: qos, CgroupPath: &slov1alpha1.CgroupPath{Base: base, RelativePath: rel}}
	}
	slo := func(apps ...slov1alpha1.HostApplicationSpec) *slov1alpha1.NodeSLO {
		return &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{HostApplications: apps}}
	}
	tests := []struct {
		name       string
		slo        *slov1alpha1.NodeSLO
		yarnAware  bool // YARNBECPUSuppress
		covered    bool
		want       bool
		hostAppWas string
	}{
		{"no NodeSLO", nil, false, false, false, ""},
		{"no host apps", slo(), false, false, false, ""},
		{"exact", slo(be("hadoop-yarn", slov1alpha1.CgroupBaseTypeKubeBesteffort, "hadoop-yarn/", extension.QoSBE)), false, true, true, "hadoop-yarn"},
		{"ancestor", slo(be("all-be", slov1alpha1.CgroupBaseTypeKubeBesteffort, "", extension.QoSBE)), false, true, true, "all-be"},
		{"BE but not besteffort-based, upstream suppress",
			slo(be("hadoop-yarn", slov1alpha1.CgroupBaseTypeRoot, "kubepods/besteffort/hadoop-yarn", extension.QoSBE)), false, true, false, "hadoop-yarn"},
		{"BE but not besteffort-based, YARN-aware suppress",
			slo(be("hadoop-yarn", slov1alpha1.CgroupBaseTypeRoot, "kubepods/besteffort/hadoop-yarn", extension.QoSBE)), true, true, true, "hadoop-yarn"},
		{"LS app", slo(be("hadoop-yarn", slov1alpha1.CgroupBaseTypeKubeBesteffort, "hadoop-yarn", extension.QoSLS)), true, true, false, "hadoop-yarn"},
		{"other dir", slo(be("hadoop-yarn2", slov1alpha1.CgroupBaseTypeKubeBesteffort, "hadoop-yarn2", extension.QoSBE)), true, false, false, ""},
		{"prefix is not an ancestor", slo(be("hadoop", slov1alpha1.CgroupBaseTypeKubeBesteffort, "hadoop", extension.QoSBE)), true, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNBECPUSuppress): tt.yarnAware}))
			t.Cleanup(func() {
				_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNBECPUSuppress): false})
			})
			acc := CheckAccounting(tt.slo, hierarchy)
			assert.Equal(t, tt.covered, acc.Covered, acc.Reason)
			assert.Equal(t, tt.want, acc.AsBE, acc.Reason)
			assert.Equal(t, tt.hostAppWas, acc.HostApplication)
			if !tt.want {
				assert.NotEmpty(t, acc.Reason)
			}
		})
	}
}

// TestCollectAllocationsDoNotGrow: the per-cycle allocations of a steady
// node do not grow with the number of cycles (no per-cycle leak).
func TestCollectAllocationsDoNotGrow(t *testing.T) {
	n := newNode(t, false)
	var names []string
	for i := 1; i <= 50; i++ {
		name := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 42, AttemptID: 1, Sequence: int64(i)}.String()
		names = append(names, name)
		n.set(name, int64(i)*1e6, 1<<20, 1<<20, 1, 0)
	}
	n.resync(names...)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	c := New(Options{Store: n.st, Metrics: m, NodeName: "n1", Interval: func() time.Duration { return time.Second }})
	defer c.Close()
	now := time.Now()
	cycle := func() { now = now.Add(time.Second); c.Collect(now) }
	for i := 0; i < 5; i++ {
		cycle()
	}
	early := testing.AllocsPerRun(20, cycle)
	for i := 0; i < 300; i++ {
		cycle()
	}
	late := testing.AllocsPerRun(20, cycle)
	t.Logf("allocations per cycle: %.0f after 25 cycles, %.0f after 345", early, late)
	assert.LessOrEqual(t, late, early*1.05+10)
}

// TestContainersWithoutCgroup: a container the NodeManager lists as
// RUNNING with no cgroup found (another hierarchy, or YARN making none) is
// counted; one still localizing (its cgroup not made yet) and one with its
// cgroup are not.
func TestContainersWithoutCgroup(t *testing.T) {
	n := newNode(t, false)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	c := New(Options{Store: n.st, Metrics: m, NodeName: "n1", Interval: func() time.Duration { return time.Second },
		Hierarchy: func() string { return hierarchy }})
	const (
		running    = "container_e17_1700000000000_0042_01_000003"
		localizing = "container_e17_1700000000000_0042_01_000004"
	)
	n.set(exec, 1e9, 1<<20, 0, 1, 0)
	id := func(s string) yarn.ContainerID { v, err := yarn.ParseContainerID(s); require.NoError(t, err); return v }
	own := cgroups.Ref{Dir: n.dir(exec), Owned: true}
	n.st.Resync(store.Observation{
		Scan:   []cgroups.Container{{Name: exec, ID: id(exec), Pids: []int{1}, Cgroups: cgroups.Cgroups{own, own, {Dir: "nm"}, own, {Dir: "nm"}}}},
		ScanOK: true,
		NM: []yarn.NMContainer{{ID: id(exec), State: yarn.StateRunning}, {ID: id(running), State: yarn.StateRunning},
			{ID: id(localizing), State: yarn.StateLocalizing}},
		NMOK: true,
	}, time.Now())
	c.Collect(time.Now())
	assert.Equal(t, 1.0, testutil.ToFloat64(m.WithoutCgroup.WithLabelValues("n1")))
	assert.Equal(t, 2.0, testutil.ToFloat64(m.Containers.WithLabelValues("n1", "RUNNING")), "the state gauge counts both")

	// The hierarchy fixed: the container's cgroup is found.
	own2 := cgroups.Ref{Dir: n.dir(running), Owned: true}
	n.set(running, 1e9, 1<<20, 0, 1, 0)
	n.st.Resync(store.Observation{
		Scan: []cgroups.Container{{Name: exec, ID: id(exec), Pids: []int{1}, Cgroups: cgroups.Cgroups{own, own, {Dir: "nm"}, own, {Dir: "nm"}}},
			{Name: running, ID: id(running), Pids: []int{2}, Cgroups: cgroups.Cgroups{own2, own2, {Dir: "nm"}, own2, {Dir: "nm"}}}},
		ScanOK: true,
		NM:     []yarn.NMContainer{{ID: id(exec), State: yarn.StateRunning}, {ID: id(running), State: yarn.StateRunning}},
		NMOK:   true,
	}, time.Now())
	c.Collect(time.Now())
	assert.Zero(t, testutil.ToFloat64(m.WithoutCgroup.WithLabelValues("n1")))
}
