package yarnsuppress

import (
	"os"
	"strconv"
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
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/helpers"
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
// cores (cfs quota 160000). With the interference controller's threshold
// (80%, 15 points above the NodeSLO's), upstream's own formula computes
// 4×0.8 − 0.5 − 0.5 = 2.2 cores.
func TestSuppressCountsYARNAsBE(t *testing.T) {
	for _, tc := range []struct {
		yarnAware bool
		threshold func(int64, *int64) (int64, *int64)
		want      string
	}{{false, nil, "2000"}, {true, nil, "160000"},
		{true, func(base int64, lo *int64) (int64, *int64) { return base + 15, lo }, "220000"},
		// 15% of 4 CPUs less LS and system (1 CPU) is below 0: upstream's 2000 µs without a minimum, 10% of the node with one
		{true, func(base int64, lo *int64) (int64, *int64) { return base - 50, lo }, "2000"},
		{true, func(base int64, _ *int64) (int64, *int64) { return base - 50, ptr.To[int64](10) }, "40000"},
	} { // 2000: upstream's minimum BE quota
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

		strategy := mustFactory(t, Deps{Hierarchy: func() string { return hierarchy }, Quota: cgroups.NewRootQuota(), Threshold: tc.threshold})(&qmframework.Options{
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
		assert.Equal(t, int64(65), *slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent, "koordlet's own NodeSLO is not modified")
		assert.Nil(t, slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressMinPercent, "nor its minimum")
	}
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(koordfeatures.BECPUSuppress): false, string(features.YARNBECPUSuppress): false}))
}

// TestViewCoveringHostApplication: any host application covering the YARN
// hierarchy, whatever its QoS or base, covers it: yarn-containers is not
// injected (YARN would be subtracted twice). A covering BE host application
// is presented as besteffort-based so that upstream counts it as BE; an LS
// one is left as declared.
func TestViewCoveringHostApplication(t *testing.T) {
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	yarnGate(t)
	app := func(name string, base slov1alpha1.CgroupBaseType, rel string, qos extension.QoSClass) slov1alpha1.HostApplicationSpec {
		return slov1alpha1.HostApplicationSpec{Name: name, QoS: qos, CgroupPath: &slov1alpha1.CgroupPath{Base: base, RelativePath: rel}}
	}
	tests := []struct {
		name      string
		hierarchy string
		apps      []slov1alpha1.HostApplicationSpec
		wantNames []string
		wantBE    map[string]bool // per host application: counted as BE by upstream's filter
	}{
		{"none: injected", outside, nil, []string{yarnusage.AggregateName}, map[string]bool{yarnusage.AggregateName: true}},
		{"CgroupRoot BE covering (the README's advice)", outside,
			[]slov1alpha1.HostApplicationSpec{app("hadoop-yarn", slov1alpha1.CgroupBaseTypeRoot, "hadoop-yarn", extension.QoSBE)},
			[]string{"hadoop-yarn"}, map[string]bool{"hadoop-yarn": true}},
		{"CgroupRoot BE ancestor", "hadoop/yarn",
			[]slov1alpha1.HostApplicationSpec{app("hadoop", slov1alpha1.CgroupBaseTypeRoot, "hadoop", extension.QoSBE)},
			[]string{"hadoop"}, map[string]bool{"hadoop": true}},
		{"besteffort-based BE covering", hierarchy,
			[]slov1alpha1.HostApplicationSpec{app("hadoop-yarn", slov1alpha1.CgroupBaseTypeKubeBesteffort, "hadoop-yarn", extension.QoSBE)},
			[]string{"hadoop-yarn"}, map[string]bool{"hadoop-yarn": true}},
		{"LS covering: as declared", outside,
			[]slov1alpha1.HostApplicationSpec{app("hadoop-yarn", slov1alpha1.CgroupBaseTypeRoot, "hadoop-yarn", extension.QoSLS)},
			[]string{"hadoop-yarn"}, map[string]bool{"hadoop-yarn": false}},
		{"another app elsewhere: injected", outside,
			[]slov1alpha1.HostApplicationSpec{app("sshd", slov1alpha1.CgroupBaseTypeRoot, "system.slice/sshd", extension.QoSLS)},
			[]string{"sshd", yarnusage.AggregateName}, map[string]bool{"sshd": false, yarnusage.AggregateName: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			si := mockstatesinformer.NewMockStatesInformer(ctrl)
			slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{HostApplications: tt.apps}}
			orig := slo.DeepCopy()
			si.EXPECT().GetNodeSLO().Return(slo).AnyTimes()
			v := &View{StatesInformer: si, Hierarchy: func() string { return tt.hierarchy }}
			got := v.GetNodeSLO()
			var names []string
			for i := range got.Spec.HostApplications {
				a := &got.Spec.HostApplications[i]
				names = append(names, a.Name)
				assert.Equal(t, tt.wantBE[a.Name], !helpers.NonBEHostAppFilter(a), "%s counted as BE", a.Name)
			}
			assert.Equal(t, tt.wantNames, names)
			assert.Equal(t, orig, slo, "koordlet's own NodeSLO is not modified")
		})
	}
}

// TestSuppressOutsideBestEffortWithCoveringHostApp runs koordlet's own
// cpuSuppress through the factory on the README's setup for a hierarchy
// outside besteffort: a "CgroupRoot" BE host application covering it. 4
// cores, 65%: node usage 3 = LS pod 0.5 + YARN 2 + system 0.5, BE pods
// idle. The budget is 4×0.65 − 0.5 − 0.5 = 1.6 cores (160000); YARN is
// counted once and as BE, and the besteffort cgroup and the YARN root
// together get the budget, and keep it while upstream runs (upstream sees
// the budget, not the BE pods' part of it). The old code gave each 10000:
// YARN subtracted as a non-BE host app and again through yarn-containers.
func TestSuppressOutsideBestEffortWithCoveringHostApp(t *testing.T) {
	n := newBindNode(t, bindCase{budget: -1, beRequest: 1000, yarnVCores: 3, beUsage: 0, yarnUsage: 2})
	ls := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ls", UID: "ls-uid", Labels: map[string]string{extension.LabelPodQoS: "LS"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable}}
	be := bePodMeta("be", 1000)
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{
		ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable: ptr.To(true), CPUSuppressThresholdPercent: ptr.To[int64](65), CPUSuppressPolicy: slov1alpha1.CPUCfsQuotaPolicy},
		HostApplications: []slov1alpha1.HostApplicationSpec{{Name: "hadoop-yarn", Priority: extension.PriorityBatch, QoS: extension.QoSBE,
			CgroupPath: &slov1alpha1.CgroupPath{Base: slov1alpha1.CgroupBaseTypeRoot, RelativePath: outside}}}}}
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNode().Return(fourCoreNode()).AnyTimes()
	si.EXPECT().GetNodeSLO().Return(slo).AnyTimes()
	si.EXPECT().GetAllPods().Return([]*statesinformer.PodMeta{{Pod: ls, CgroupDir: "kubepods/burstable/podls-uid"}, be}).AnyTimes()
	si.EXPECT().GetNodeTopo().Return(nil).AnyTimes()
	mc := newMetricCache(t)
	mc.Set(metriccache.NodeCPUInfoKey, &metriccache.NodeCPUInfo{ProcessorInfos: []koordletutil.ProcessorInfo{
		{CPUID: 0, CoreID: 0}, {CPUID: 1, CoreID: 1}, {CPUID: 2, CoreID: 2}, {CPUID: 3, CoreID: 3}}})
	appendSamples(t, mc, time.Now(), map[metriccache.MetricResource]map[string]float64{
		metriccache.NodeCPUUsageMetric:    {"": 3},
		metriccache.PodCPUUsageMetric:     {"ls-uid": 0.5, string(be.Pod.UID): 0},
		metriccache.HostAppCPUUsageMetric: {"hadoop-yarn": 2, yarnusage.AggregateName: 2},
	})
	strategy := mustFactory(t, Deps{Hierarchy: func() string { return outside }, Quota: cgroups.NewRootQuota(), Store: yarnStore(3)})(&qmframework.Options{
		Config: qmframework.NewDefaultConfig(), StatesInformer: si, MetricCache: mc, CgroupReader: resourceexecutor.NewCgroupReader(),
		MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Minute}}) // samples stay recent for the whole test
	require.True(t, strategy.Enabled())
	stop := make(chan struct{})
	defer close(stop)
	strategy.Run(stop)

	require.Eventually(t, func() bool {
		// (a fake cgroup file read while it is rewritten may be empty)
		b, err1 := strconv.ParseInt(n.helper.ReadCgroupFileContents(n.beDir, system.CPUCFSQuota), 10, 64)
		y, err2 := strconv.ParseInt(n.helper.ReadCgroupFileContents(outside, system.CPUCFSQuota), 10, 64)
		return err1 == nil && err2 == nil && b+y == 160000
	}, 5*time.Second, 50*time.Millisecond, "besteffort + YARN root: want the budget 160000")
	bePart, _ := n.quotas(t)
	assert.Less(t, bePart, int64(160000), "divided: the idle BE pods do not hold the whole budget")
	// Three more rounds of upstream's loop and ours: unchanged.
	time.Sleep(3 * time.Second)
	b, y := n.quotas(t)
	assert.Equal(t, int64(160000), b+y, "besteffort %d + YARN root %d", b, y)
	assert.Equal(t, bePart, b)
}
