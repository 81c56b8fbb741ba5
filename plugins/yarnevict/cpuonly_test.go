package yarnevict

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeclientset "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	ma "github.com/koordinator-sh/koordinator/pkg/koordlet/metricsadvisor/framework"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/nodemem"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRealKernelMemoryEvictWithoutMemoryCgroup: YARN containers as YARN's
// CPU-only cgroups handler makes them (own cpu and cpuacct cgroups, memory
// charged to this test's memory cgroup, the NodeManager pod's stand-in)
// with real processes allocating known anonymous memory, and no collector
// sample at all. Memory evict's decision-time value of each container is
// within 3% of what its processes allocated (plus each allocator's own
// runtime, measured apart), and under memory pressure it evicts the newest
// executor, leaving the AM, the older executor and the NodeManager. Before,
// such containers had no memory usage and were never candidates.
//
// The same on the host's real cgroup2 hierarchy, one unified directory per
// container whose YARN root enables no memory controller (Hadoop's v2
// handler with its default memory.enabled=false; on this hybrid host memory
// is bound to v1): the containers are measured by their processes and the
// newest is killed through cgroup.kill.
func TestRealKernelMemoryEvictWithoutMemoryCgroup(t *testing.T) {
	t.Run("v1", func(t *testing.T) { memoryEvictWithoutMemoryCgroup(t, false) })
	t.Run("unified", func(t *testing.T) { memoryEvictWithoutMemoryCgroup(t, true) })
}

// unifiedRoot is this machine kind's cgroup2 mount (hybrid mode).
const unifiedRoot = "/sys/fs/cgroup/unified"

func memoryEvictWithoutMemoryCgroup(t *testing.T, unified bool) {
	if unified {
		if os.Geteuid() != 0 {
			kerneltest.Skip(t, "real-kernel test: needs root")
		}
		if _, err := os.Stat(filepath.Join(unifiedRoot, "cgroup.procs")); err != nil {
			kerneltest.Skip(t, "real-kernel test: needs a cgroup2 hierarchy at "+unifiedRoot)
		}
		kerneltest.UseHostRoots(t)
		system.Conf.CgroupRootDir = unifiedRoot + "/"
		wasV2 := system.UseCgroupsV2.Load()
		system.UseCgroupsV2.Store(true)
		t.Cleanup(func() { system.UseCgroupsV2.Store(wasV2) })
	} else {
		kerneltest.RequireCgroupV1(t, "cpu", "cpuacct")
		kerneltest.UseHostRoots(t)
	}
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(koordfeatures.BEMemoryEvict): true, string(features.YARNBEMemoryEvict): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(koordfeatures.BEMemoryEvict): false, string(features.YARNBEMemoryEvict): false})
	})
	baseline := kerneltest.HelperBaseline(t)

	const (
		am     = "container_e17_1700000000000_0042_01_000001"
		old    = "container_e17_1700000000000_0042_01_000002"
		newest = "container_e17_1700000000000_0042_01_000003"
	)
	top := kerneltest.UniqueRoot(t)
	hier := top + "/hadoop-yarn"
	var created cgtree.Tracker
	t.Cleanup(func() { assert.NoError(t, created.RemoveAll()) })
	// cgroupDirs makes a cgroup in the layout's hierarchies.
	cgroupDirs := func(rel string, v1 ...string) []string {
		if unified {
			dir := filepath.Join(unifiedRoot, rel)
			require.NoError(t, created.MkdirAll(dir))
			return []string{dir}
		}
		var dirs []string
		for _, c := range v1 {
			dirs = append(dirs, kerneltest.MakeCgroup(t, c, rel))
		}
		return dirs
	}
	nm := kerneltest.Start(t, "exec sleep 3600", cgroupDirs(top+"/nm", "cpu")...)
	require.NoError(t, nm.Release())
	type workload struct {
		name, script string
		want         int64 // bytes the decision should see
	}
	work := []workload{
		{am, "sleep 3600 & wait", 0},
		{old, kerneltest.HelperScript("alloc=160"), 160<<20 + baseline},
		// The newest executor: a launcher shell and its allocator.
		{newest, "(" + kerneltest.HelperScript("alloc=512") + ") & wait", 512<<20 + baseline},
	}
	for _, w := range work {
		p := kerneltest.Start(t, w.script, cgroupDirs(hier+"/"+w.name, "cpu", "cpuacct")...)
		require.NoError(t, p.Release())
		time.Sleep(20 * time.Millisecond) // distinct start times: newest is newest
	}
	cfg := config.NewDefault()
	cfg.NMEndpoint = "http://127.0.0.1:1"
	cfg.NMTimeout = 100 * time.Millisecond
	cfg.CgroupHierarchy = hier
	st := store.New()
	inf := yarninformer.New(cfg, st, nil)
	inf.Setup(nil, nil)
	require.Eventually(t, func() bool {
		inf.Resync(context.Background())
		for _, w := range work {
			if c, ok := st.Get(w.name); !ok || len(c.Pids) == 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond)
	h, ok := inf.Hierarchy()
	require.True(t, ok)
	require.Equal(t, unified, h.V2)
	for _, w := range work {
		c, _ := st.Get(w.name)
		require.Equal(t, cgroups.MemoryByProcesses, c.Cgroups.MemoryAccounting(), "%s: %+v", c.Name, c.Cgroups)
	}

	// The node's capacity is set, just before the cycle, so that today's
	// real usage lies needMiB above the 98% lower percent, and so above the
	// 99% threshold whatever the host holds (up to ~25 GB): the need is a
	// fixed amount, not a share of what other processes on the host use,
	// and the newest executor alone covers it with ~190 MiB to spare either
	// way for drift during the cycle.
	const needMiB = 320
	capacity := func() int64 {
		mi, err := nodemem.Read("/proc")
		require.NoError(t, err)
		return (mi.Used() - needMiB<<20) * 100 / 98
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), MemoryEvictThresholdPercent: ptr.To[int64](99), MemoryEvictLowerPercent: ptr.To[int64](98)}}}
	nmPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: "nodemanager", UID: "nm-uid",
		Labels: map[string]string{"app.kubernetes.io/component": "node-manager", "koordinator.sh/qosClass": "BE"}}}
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNode().Return(node).AnyTimes()
	si.EXPECT().GetNodeSLO().Return(slo).AnyTimes()
	si.EXPECT().GetAllPods().Return([]*statesinformer.PodMeta{{Pod: nmPod}}).AnyTimes()
	mcCfg := metriccache.NewDefaultConfig()
	mcCfg.TSDBPath = t.TempDir()
	mcCfg.TSDBEnablePromMetrics = false          // the TSDB's own series are registered once per process
	mc, err := metriccache.NewMetricCache(mcCfg) // empty: no collector sample
	require.NoError(t, err)
	rec := record.NewFakeRecorder(10)
	metrics, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	deps := Deps{Store: st, Killer: func() *kill.Killer { return &kill.Killer{H: h, Grace: 100 * time.Millisecond} },
		IsNodeManagerPod: func(p *corev1.Pod) bool { return p.Labels["app.kubernetes.io/component"] == "node-manager" },
		Metrics:          metrics, NodeName: "n1", CgroupHierarchy: inf.Hierarchy}
	strategy := NewMemoryEvictFactory(deps)(&qmframework.Options{Config: qmframework.NewDefaultConfig(), StatesInformer: si, MetricCache: mc,
		EventRecorder: rec, MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Second}})
	m, ok := strategy.(*Slot).BE().(*MemoryEvict)
	require.True(t, ok)
	m.Setup(&qmframework.Context{Evictor: qmutil.NewEvictor(fakeclientset.NewSimpleClientset(), rec, "v1"), OnlyEvictByAPI: true})

	// Decision-time values, once the allocators have touched their pages
	// and their runtime's (the want includes both: waiting for the pages
	// alone let a runtime still growing fail the 3% below, under load).
	require.Eventually(t, func() bool {
		for _, w := range work[1:] {
			c, _ := st.Get(w.name)
			if v, ok := m.containerMemory(c, time.Second); !ok || float64(v) < float64(w.want)*0.97 {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond)
	for _, w := range work {
		c, _ := st.Get(w.name)
		got, ok := m.containerMemory(c, time.Second)
		require.True(t, ok, w.name)
		t.Logf("%s: decision-time memory %.1f MiB, want %.1f MiB (allocator runtime %.1f MiB)", w.name, float64(got)/(1<<20), float64(w.want)/(1<<20), float64(baseline)/(1<<20))
		if w.want == 0 {
			assert.Less(t, got, int64(8<<20), "a shell and a sleep")
			continue
		}
		assert.InEpsilon(t, w.want, got, 0.03, w.name)
	}

	victim, _ := st.Get(newest)
	amC, _ := st.Get(am)
	oldC, _ := st.Get(old)
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(capacity(), resource.BinarySI)}
	evicted := m.Cycle(time.Now())
	require.Len(t, evicted, 1, "one container covers the need")
	assert.Equal(t, newest, evicted[0].Name())
	assert.InEpsilon(t, float64(512<<20+baseline), float64(evicted[0].MemoryUsed), 0.03)
	assert.Equal(t, 0, deps.Killer().WaitGone(victim, 5*time.Second))
	for _, pid := range append(append(append([]int{}, amC.Pids...), oldC.Pids...), nm.Pid()) {
		assert.True(t, alive(pid), "pid %d survives", pid)
	}
}
