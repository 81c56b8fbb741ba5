package yarnsuppress

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	ma "github.com/koordinator-sh/koordinator/pkg/koordlet/metricsadvisor/framework"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/yarnusage"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

func TestMain(m *testing.M) {
	if err := features.Register(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

const hierarchy = "kubepods/besteffort/hadoop-yarn"

func TestViewInjectsYARNHostApp(t *testing.T) {
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	slo := &slov1alpha1.NodeSLO{}
	si.EXPECT().GetNodeSLO().DoAndReturn(func() *slov1alpha1.NodeSLO { return slo }).AnyTimes()
	v := &View{StatesInformer: si, Hierarchy: func() string { return hierarchy }}

	got := v.GetNodeSLO()
	require.Len(t, got.Spec.HostApplications, 1)
	app := got.Spec.HostApplications[0]
	assert.Equal(t, yarnusage.AggregateName, app.Name)
	assert.Equal(t, extension.QoSBE, app.QoS)
	assert.Equal(t, hierarchy, koordletutil.GetHostAppCgroupRelativePath(&app))
	assert.Equal(t, slov1alpha1.CgroupBaseTypeKubeBesteffort, app.CgroupPath.Base, "upstream counts only besteffort-based host apps as BE")
	assert.Empty(t, slo.Spec.HostApplications, "koordlet's own NodeSLO is not modified")

	// An operator-declared BE host application already covers YARN: no injection.
	slo = &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{HostApplications: []slov1alpha1.HostApplicationSpec{{
		Name: "hadoop-yarn", QoS: extension.QoSBE, CgroupPath: &slov1alpha1.CgroupPath{Base: slov1alpha1.CgroupBaseTypeKubeBesteffort, RelativePath: "hadoop-yarn"}}}}}
	assert.Len(t, v.GetNodeSLO().Spec.HostApplications, 1)

	// Hierarchy unknown: unchanged.
	v.Hierarchy = func() string { return "" }
	slo = &slov1alpha1.NodeSLO{}
	assert.Empty(t, v.GetNodeSLO().Spec.HostApplications)
}

func TestOutsideBestEffort(t *testing.T) {
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	assert.False(t, cgroups.OutsideBestEffort("kubepods/besteffort/hadoop-yarn"))
	assert.True(t, cgroups.OutsideBestEffort("hadoop-yarn"))
	assert.True(t, cgroups.OutsideBestEffort("kubepods/besteffort-x/hadoop-yarn"))
	assert.False(t, cgroups.OutsideBestEffort(""))
}

// TestSuppressCountsYARNAsBE runs koordlet's own cpuSuppress through the
// factory with and without the YARN gate on the same node: 4 cores, 65%
// threshold, node usage 3 cores of which an LS pod uses 0.5 and YARN 2.
// Upstream counts YARN as system usage (3 − 0.5 = 2.5) and squeezes BE to
// its minimum; YARN-aware, system is 0.5 and BE gets 4×0.65 − 0.5 − 0.5 = 1.6
// cores (cfs quota 160000).
func TestSuppressCountsYARNAsBE(t *testing.T) {
	for _, tc := range []struct {
		yarnAware bool
		want      string
	}{{false, "2000"}, {true, "160000"}} { // 2000: upstream's minimum BE quota
		helper := system.NewFileTestUtil(t)
		old := system.CgroupPathFormatter
		system.SetupCgroupPathFormatter(system.Cgroupfs)
		be := koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)
		helper.WriteCgroupFileContents(be, system.CPUCFSQuota, "-1")
		helper.WriteCgroupFileContents(be, system.CPUCFSPeriod, "100000")

		require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(koordfeatures.BECPUSuppress): true, string(features.YARNBECPUSuppress): tc.yarnAware}))

		ctrl := gomock.NewController(t)
		si := mockstatesinformer.NewMockStatesInformer(ctrl)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}
		ls := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ls", UID: "ls-uid", Labels: map[string]string{extension.LabelPodQoS: "LS"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable}}
		slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable: ptr.To(true), CPUSuppressThresholdPercent: ptr.To[int64](65), CPUSuppressPolicy: slov1alpha1.CPUCfsQuotaPolicy}}}
		si.EXPECT().GetNode().Return(node).AnyTimes()
		si.EXPECT().GetNodeSLO().Return(slo).AnyTimes()
		si.EXPECT().GetAllPods().Return([]*statesinformer.PodMeta{{Pod: ls, CgroupDir: "kubepods/burstable/podls-uid"}}).AnyTimes()
		si.EXPECT().HasSynced().Return(true).AnyTimes()
		si.EXPECT().GetNodeTopo().Return(nil).AnyTimes()

		cfg := metriccache.NewDefaultConfig()
		cfg.TSDBPath = t.TempDir()
		cfg.TSDBEnablePromMetrics = false
		mc, err := metriccache.NewMetricCache(cfg)
		require.NoError(t, err)
		mc.Set(metriccache.NodeCPUInfoKey, &metriccache.NodeCPUInfo{ProcessorInfos: []koordletutil.ProcessorInfo{
			{CPUID: 0, CoreID: 0}, {CPUID: 1, CoreID: 1}, {CPUID: 2, CoreID: 2}, {CPUID: 3, CoreID: 3}}})
		now := time.Now()
		var samples []metriccache.MetricSample
		for _, s := range []struct {
			kind  metriccache.MetricResource
			props map[metriccache.MetricProperty]string
			v     float64
		}{
			{metriccache.NodeCPUUsageMetric, nil, 3},
			{metriccache.PodCPUUsageMetric, metriccache.MetricPropertiesFunc.Pod("ls-uid"), 0.5},
			{metriccache.HostAppCPUUsageMetric, metriccache.MetricPropertiesFunc.HostApplication(yarnusage.AggregateName), 2},
		} {
			sample, err := s.kind.GenerateSample(s.props, now, s.v)
			require.NoError(t, err)
			samples = append(samples, sample)
		}
		app := mc.Appender()
		require.NoError(t, app.Append(samples))
		require.NoError(t, app.Commit())

		strategy := NewFactory(Deps{Hierarchy: func() string { return hierarchy }})(&qmframework.Options{
			Config: qmframework.NewDefaultConfig(), StatesInformer: si, MetricCache: mc, CgroupReader: resourceexecutor.NewCgroupReader(),
			MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Second}})
		_, isOurs := strategy.(*Strategy)
		assert.Equal(t, tc.yarnAware, isOurs)
		require.True(t, strategy.Enabled())
		stop := make(chan struct{})
		strategy.Run(stop)
		assert.Eventually(t, func() bool {
			return helper.ReadCgroupFileContents(be, system.CPUCFSQuota) == tc.want
		}, 5*time.Second, 50*time.Millisecond, "yarnAware=%v: BE cfs quota %s, want %s", tc.yarnAware,
			helper.ReadCgroupFileContents(be, system.CPUCFSQuota), tc.want)
		close(stop)
		system.CgroupPathFormatter = old
		helper.Cleanup()
	}
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(koordfeatures.BECPUSuppress): false, string(features.YARNBECPUSuppress): false}))
}
