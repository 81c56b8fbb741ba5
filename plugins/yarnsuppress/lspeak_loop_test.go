package yarnsuppress

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	ma "github.com/koordinator-sh/koordinator/pkg/koordlet/metricsadvisor/framework"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/cpusuppress"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// loopNode is a 4-core node (allocatable as given) with an LS pod, a BE
// pod and YARN below besteffort, its BE cfs quota in a fake cgroup root,
// for koordlet's own cpuSuppress loop at 65%.
type loopNode struct {
	helper *system.FileTestUtil
	si     statesinformer.StatesInformer
	mc     metriccache.MetricCache
	beDir  string
	pods   []*statesinformer.PodMeta
}

func newLoopNode(t *testing.T, allocatable string) *loopNode {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	be := koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)
	helper.WriteCgroupFileContents(be, system.CPUCFSQuota, "-1")
	helper.WriteCgroupFileContents(be, system.CPUCFSPeriod, "100000")
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	node := fourCoreNode()
	node.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(allocatable)
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), CPUSuppressThresholdPercent: ptr.To[int64](65), CPUSuppressPolicy: slov1alpha1.CPUCfsQuotaPolicy}}}
	pods := []*statesinformer.PodMeta{lsPodMeta("ls1"), bePodMeta("be", 1000)}
	si.EXPECT().GetNode().Return(node).AnyTimes()
	si.EXPECT().GetNodeSLO().Return(slo).AnyTimes()
	si.EXPECT().GetAllPods().Return(pods).AnyTimes()
	si.EXPECT().HasSynced().Return(true).AnyTimes()
	si.EXPECT().GetNodeTopo().Return(nil).AnyTimes()
	mc := newMetricCache(t)
	mc.Set(metriccache.NodeCPUInfoKey, &metriccache.NodeCPUInfo{ProcessorInfos: []koordletutil.ProcessorInfo{
		{CPUID: 0, CoreID: 0}, {CPUID: 1, CoreID: 1}, {CPUID: 2, CoreID: 2}, {CPUID: 3, CoreID: 3}}})
	return &loopNode{helper: helper, si: si, mc: mc, beDir: be, pods: pods}
}

func (n *loopNode) options() *qmframework.Options {
	return &qmframework.Options{Config: qmframework.NewDefaultConfig(), StatesInformer: n.si, MetricCache: n.mc,
		CgroupReader:        resourceexecutor.NewCgroupReader(),
		MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Minute}} // the last sample stays the one read
}

// usage appends the node's samples now: the LS pod's, YARN's (0.5, BE)
// and the node's (LS + YARN + 0.5 of system), BE pods idle.
func (n *loopNode) usage(t *testing.T, ls float64) {
	appendSamples(t, n.mc, time.Now(), map[metriccache.MetricResource]map[string]float64{
		metriccache.NodeCPUUsageMetric:    {"": ls + 0.5 + 0.5},
		metriccache.PodCPUUsageMetric:     {"ls1": ls, string(n.pods[1].Pod.UID): 0},
		metriccache.HostAppCPUUsageMetric: {yarnusage.AggregateName: 0.5},
	})
}

func (n *loopNode) waitQuota(t *testing.T, want string, msg string) {
	t.Helper()
	require.Eventually(t, func() bool { return n.helper.ReadCgroupFileContents(n.beDir, system.CPUCFSQuota) == want },
		20*time.Second, 20*time.Millisecond, "%s: BE cfs quota %s, want %s", msg, n.helper.ReadCgroupFileContents(n.beDir, system.CPUCFSQuota), want)
}

func setGates(t *testing.T, peak bool) {
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(koordfeatures.BECPUSuppress): true, string(features.YARNBECPUSuppress): true, string(features.YARNSuppressLSPeak): peak}))
}

func resetGates(t *testing.T) {
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(koordfeatures.BECPUSuppress): false,
			string(features.YARNBECPUSuppress): false, string(features.YARNSuppressLSPeak): false})
	})
}

// TestLSPeakOffIsUpstream: with YARNSuppressLSPeak off the YARN-aware
// suppress writes what upstream's strategy writes on the same view, here
// with the node's reservation (0.75 cores) flooring system: 4×0.65 − LS
// 0.5 − max(system 0.5, 0.75) = 1.35 cores.
func TestLSPeakOffIsUpstream(t *testing.T) {
	resetGates(t)
	setGates(t, false)
	for _, ours := range []bool{false, true} {
		n := newLoopNode(t, "3.25")
		n.usage(t, 0.5)
		var strategy qmframework.QOSStrategy
		if ours {
			strategy = mustFactory(t, Deps{Hierarchy: func() string { return hierarchy }, Quota: cgroups.NewRootQuota()})(n.options())
			_, isOurs := strategy.(*Strategy)
			require.True(t, isOurs)
		} else {
			view := n.options()
			view.StatesInformer = &View{StatesInformer: n.si, Hierarchy: func() string { return hierarchy }}
			strategy = cpusuppress.New(view)
		}
		stop := make(chan struct{})
		strategy.Run(stop)
		n.waitQuota(t, "135000", map[bool]string{false: "upstream", true: "ours, gate off"}[ours])
		close(stop)
	}
}

// TestLSPeakHoldsTheBudget runs koordlet's own cpuSuppress loop through the
// factory: LS rises from 0.5 to 2 cores and falls back. Gate on, the
// budget stays at the peak's (4×0.65 − 2 − 0.5 = 0.1 core) for the window
// (the hold's clock is the test's), then follows to 1.6 cores at
// upstream's step-up; turned off at run time, the next rounds follow at
// once; turned on again over a busy node, the hold starts empty.
func TestLSPeakHoldsTheBudget(t *testing.T) {
	resetGates(t)
	setGates(t, true)
	n := newLoopNode(t, "4")
	reg := prometheus.NewPedanticRegistry()
	m, err := NewLSPeakMetrics(reg)
	require.NoError(t, err)
	strategy := mustFactory(t, Deps{Hierarchy: func() string { return hierarchy }, Quota: cgroups.NewRootQuota(), LSPeakWindow: 30 * time.Second, LSPeakMetrics: m})(n.options())
	s, ok := strategy.(*Strategy)
	require.True(t, ok)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC).UnixNano())
	s.peak.now = func() time.Time { return time.Unix(0, clock.Load()) }
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	rounds := func() int { s.peak.mu.Lock(); defer s.peak.mu.Unlock(); return s.peak.rounds }
	waitRounds := func(k int, msg string) {
		from := rounds()
		require.Eventually(t, func() bool { return rounds() >= from+k }, 20*time.Second, 20*time.Millisecond, "%s: %d rounds", msg, k)
	}
	stop := make(chan struct{})
	defer close(stop)
	strategy.Run(stop)

	n.usage(t, 0.5)
	n.waitQuota(t, "160000", "LS low")
	n.usage(t, 2)
	n.waitQuota(t, "10000", "LS at its peak")
	advance(time.Second)
	n.usage(t, 0.5)
	waitRounds(3, "LS fallen, within the window")
	n.waitQuota(t, "10000", "held at the peak's")
	assert.Equal(t, 0.5, testutil.ToFloat64(m.usage.WithLabelValues("last")))
	assert.Equal(t, 2.0, testutil.ToFloat64(m.usage.WithLabelValues("peak")))

	advance(31 * time.Second) // the peak leaves the window
	n.waitQuota(t, "160000", "the window over: follows")

	n.usage(t, 2)
	n.waitQuota(t, "10000", "a second peak")
	n.usage(t, 0.5)
	setGates(t, false)
	n.waitQuota(t, "160000", "turned off at run time: follows")
	assert.Zero(t, testutil.CollectAndCount(m.usage), "off: no series")

	setGates(t, true)
	waitRounds(3, "turned on again over LS at 0.5, its 2 cores within the window")
	n.waitQuota(t, "160000", "the hold starts empty")
	n.usage(t, 2)
	n.waitQuota(t, "10000", "a third peak")
	n.usage(t, 0.5)
	waitRounds(3, "and fallen")
	n.waitQuota(t, "10000", "held again")
}
