package yarnevict

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/nodemem"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/growth"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/memtrigger"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRealKernelMemoryEvictWakesOnCrossing: with YARNMemoryEvictTrigger and
// a periodic check every 30 s, a new executor that allocates across the
// threshold is evicted within a moment of the crossing: the root memory
// cgroup's usage threshold woke the strategy, not its interval.
func TestRealKernelMemoryEvictWakesOnCrossing(t *testing.T) {
	// No node in a box runs meanwhile: their pressure tests and this one
	// would cross each other's thresholds.
	kerneltest.HoldBoxLock(t, 20*time.Minute)
	n := newYARNNode(t)
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(koordfeatures.BEMemoryEvict): true, string(features.YARNBEMemoryEvict): true, string(features.YARNMemoryEvictTrigger): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(koordfeatures.BEMemoryEvict): false, string(features.YARNBEMemoryEvict): false, string(features.YARNMemoryEvictTrigger): false})
	})

	// The node's executors are older than the growth window: only the
	// new one will be growing.
	time.Sleep(growth.Window)

	// A fourth container, held at its gate until the strategy runs.
	grower := "container_e17_1700000000000_0042_01_000004"
	p := kerneltest.Start(t, kerneltest.HelperScript("grow=1536@3072"),
		kerneltest.MakeCgroup(t, "cpu", n.h.Dir+"/"+grower), kerneltest.MakeCgroup(t, "memory", n.h.Dir+"/"+grower))
	require.Eventually(t, func() bool {
		n.inf.Resync(context.Background())
		c, ok := n.st.Get(grower)
		return ok && len(c.Pids) == 1
	}, 10*time.Second, 50*time.Millisecond)

	// The threshold (70%) lies 512 MiB above today's usage; the release
	// goes down to 69%.
	mi, err := nodemem.Read("/proc")
	require.NoError(t, err)
	capacity := (mi.Used() + 512<<20) * 100 / 70
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(capacity, resource.BinarySI)}}}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), MemoryEvictThresholdPercent: ptr.To[int64](70), MemoryEvictLowerPercent: ptr.To[int64](69)}}}
	nmPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: "nodemanager", UID: "nm-uid",
		Labels: map[string]string{"app.kubernetes.io/component": "node-manager", "koordinator.sh/qosClass": "BE"}}}
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNode().Return(node).AnyTimes()
	si.EXPECT().GetNodeSLO().Return(slo).AnyTimes()
	si.EXPECT().GetAllPods().Return([]*statesinformer.PodMeta{{Pod: nmPod}}).AnyTimes()
	mcCfg := metriccache.NewDefaultConfig()
	mcCfg.TSDBPath = t.TempDir()
	mcCfg.TSDBEnablePromMetrics = false
	mc, err := metriccache.NewMetricCache(mcCfg)
	require.NoError(t, err)
	rec := record.NewFakeRecorder(10)
	metrics, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	deps := Deps{Store: n.st, Killer: func() *kill.Killer { return &kill.Killer{H: n.h, Grace: 100 * time.Millisecond} },
		IsNodeManagerPod: func(p *corev1.Pod) bool { return p.Labels["app.kubernetes.io/component"] == "node-manager" },
		Metrics:          metrics, NodeName: "n1", Hierarchy: func() string { return n.h.Dir }}
	cfg := qmframework.NewDefaultConfig()
	cfg.MemoryEvictIntervalSeconds = 30
	slot, ok := NewMemoryEvictFactory(deps)(&qmframework.Options{Config: cfg, StatesInformer: si, MetricCache: mc,
		EventRecorder: rec, MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Second}}).(*Slot)
	require.True(t, ok)
	m, ok := slot.BE().(*MemoryEvict)
	require.True(t, ok)
	require.True(t, slot.Enabled())
	slot.Setup(&qmframework.Context{Evictor: qmutil.NewEvictor(fakeclientset.NewSimpleClientset(), rec, "v1"), OnlyEvictByAPI: true})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	slot.Run(stop)
	require.Eventually(t, func() bool { return m.TriggerKinds() != nil }, 5*time.Second, 10*time.Millisecond,
		"the first cycle runs at once and opens the trigger")
	require.Equal(t, []string{memtrigger.KindThreshold + " on " + n.h.Dir}, m.TriggerKinds(), "kubepods does not exist here; PSI triggers are not accepted by this kernel")
	time.Sleep(100 * time.Millisecond) // armed

	// The crossing, seen from outside every 2 ms.
	level := ThresholdLevel(capacity, 70)
	crossed := make(chan time.Time, 1)
	go func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			if mi, err := nodemem.Read("/proc"); err == nil && mi.Used() >= level {
				crossed <- time.Now()
				return
			}
		}
	}()
	released := time.Now()
	require.NoError(t, p.Release())
	select {
	case ev := <-rec.Events:
		took := time.Since(released)
		var fromCrossing time.Duration
		select {
		case at := <-crossed:
			fromCrossing = time.Since(at)
		default:
		}
		t.Logf("allocator released → evicted in %v (crossing → evicted %v): %s", took.Round(time.Millisecond), fromCrossing.Round(time.Millisecond), ev)
		assert.Contains(t, ev, grower, "the growing executor, the cause")
		assert.Less(t, took, 5*time.Second, "well before the 30 s periodic check")
	case <-time.After(20 * time.Second):
		mi, _ := koordletutil.GetMemInfo()
		c, _ := n.st.Get(grower)
		t.Fatalf("no eviction before the periodic check (used now %d MiB, level %d MiB, event wakeups %v, grower pids %v)",
			mi.MemUsageBytes()>>20, ThresholdLevel(capacity, 70)>>20,
			testutil.ToFloat64(metrics.Wakeups.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "event")), c.Pids)
	}
	assert.GreaterOrEqual(t, testutil.ToFloat64(metrics.Wakeups.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "event")), 1.0)
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.Wakeups.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "interval")), "no periodic cycle ran")
	for _, name := range []string{n.am, n.old} {
		for _, pid := range n.pids(t, name) {
			assert.True(t, alive(pid), "%s pid %d survives", name, pid)
		}
	}
	assert.NotEmpty(t, kerneltest.Pids(filepath.Join(kerneltest.CgroupRoot, "cpu", n.h.Dir, n.newest)), "the other young executor survives")
}
