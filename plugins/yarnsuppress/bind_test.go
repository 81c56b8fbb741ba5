package yarnsuppress

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koordinator-sh/koordinator/apis/extension"
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
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// outside is a YARN hierarchy not below the besteffort cgroup.
const outside = "hadoop-yarn"

// bindCase is a node: 4 cores, a BE pod and YARN containers with CPU
// requests (milli-cores) and recent usage (cores).
type bindCase struct {
	name                  string
	budget                int64 // what upstream's suppress wrote to the besteffort cgroup
	beRequest, yarnVCores int64
	beUsage, yarnUsage    float64
	noStore               bool
	wantBE, wantYARN      string // "": only the sum is checked
}

type bindNode struct {
	helper *system.FileTestUtil
	s      *Strategy
	beDir  string
}

func yarnGate(t *testing.T) {
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(koordfeatures.BECPUSuppress): true, string(features.YARNBECPUSuppress): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(koordfeatures.BECPUSuppress): false, string(features.YARNBECPUSuppress): false})
	})
}

func newMetricCache(t *testing.T) metriccache.MetricCache {
	cfg := metriccache.NewDefaultConfig()
	cfg.TSDBPath = t.TempDir()
	cfg.TSDBEnablePromMetrics = false
	mc, err := metriccache.NewMetricCache(cfg)
	require.NoError(t, err)
	return mc
}

func appendSamples(t *testing.T, mc metriccache.MetricCache, at time.Time, samples map[metriccache.MetricResource]map[string]float64) {
	var out []metriccache.MetricSample
	for kind, byName := range samples {
		for name, v := range byName {
			props := metriccache.MetricPropertiesFunc.Pod(name)
			if kind == metriccache.HostAppCPUUsageMetric {
				props = metriccache.MetricPropertiesFunc.HostApplication(name)
			}
			if kind == metriccache.NodeCPUUsageMetric {
				props = nil
			}
			s, err := kind.GenerateSample(props, at, v)
			require.NoError(t, err)
			out = append(out, s)
		}
	}
	app := mc.Appender()
	require.NoError(t, app.Append(out))
	require.NoError(t, app.Commit())
}

func bePodMeta(uid string, milli int64) *statesinformer.PodMeta {
	return &statesinformer.PodMeta{CgroupDir: "kubepods/besteffort/pod" + uid, Pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID("uid-" + uid), Labels: map[string]string{extension.LabelPodQoS: string(extension.QoSBE)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{extension.BatchCPU: *resource.NewQuantity(milli, resource.DecimalSI)},
			Limits:   corev1.ResourceList{extension.BatchCPU: *resource.NewQuantity(milli, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBestEffort}}}
}

func fourCoreNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}
}

// yarnStore holds two running YARN containers with processes, requesting
// vcores between them, and a finished one whose request does not count.
func yarnStore(vcores int64) *store.Store {
	st := store.New()
	var scan []cgroups.Container
	var nm []yarn.NMContainer
	for seq, v := range map[int64]int64{2: vcores / 2, 3: vcores - vcores/2, 4: 8} {
		id := yarn.ContainerID{ClusterTimestamp: 1700000000000, AppID: 42, AttemptID: 1, Sequence: seq}
		own := cgroups.Ref{Dir: outside + "/" + id.String(), Owned: true}
		scan = append(scan, cgroups.Container{Name: id.String(), ID: id, Pids: []int{int(100 + seq)}, Cgroups: cgroups.Cgroups{own}})
		state := "RUNNING"
		if seq == 4 {
			state = "EXITED_WITH_SUCCESS"
		}
		nm = append(nm, yarn.NMContainer{ID: id, State: state, TotalVCoresNeeded: v, TotalMemoryNeededMB: 1024})
	}
	st.Resync(store.Observation{ScanOK: true, Scan: scan, NMOK: true, NM: nm}, time.Now())
	return st
}

func newBindNode(t *testing.T, c bindCase) *bindNode {
	yarnGate(t)
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	beDir := koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)
	helper.WriteCgroupFileContents(beDir, system.CPUCFSQuota, strconv.FormatInt(c.budget, 10))
	helper.WriteCgroupFileContents(beDir, system.CPUCFSPeriod, "100000")
	helper.WriteCgroupFileContents(outside, system.CPUCFSQuota, "-1")
	helper.WriteCgroupFileContents(outside, system.CPUCFSPeriod, "100000")

	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNode().Return(fourCoreNode()).AnyTimes()
	be := bePodMeta("be", c.beRequest)
	si.EXPECT().GetAllPods().Return([]*statesinformer.PodMeta{be}).AnyTimes()
	mc := newMetricCache(t)
	appendSamples(t, mc, time.Now(), map[metriccache.MetricResource]map[string]float64{
		metriccache.PodCPUUsageMetric:     {string(be.Pod.UID): c.beUsage},
		metriccache.HostAppCPUUsageMetric: {yarnusage.AggregateName: c.yarnUsage},
	})
	deps := Deps{Hierarchy: func() string { return outside }, Quota: cgroups.NewRootQuota()}
	if !c.noStore {
		deps.Store = yarnStore(c.yarnVCores)
	}
	strategy := mustFactory(t, deps)(&qmframework.Options{Config: qmframework.NewDefaultConfig(), StatesInformer: si, MetricCache: mc,
		CgroupReader: resourceexecutor.NewCgroupReader(), MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Second}})
	s, ok := strategy.(*Strategy)
	require.True(t, ok)
	return &bindNode{helper: helper, s: s, beDir: beDir}
}

func (n *bindNode) quotas(t *testing.T) (be, yarnRoot int64) {
	be, err := strconv.ParseInt(n.helper.ReadCgroupFileContents(n.beDir, system.CPUCFSQuota), 10, 64)
	require.NoError(t, err)
	yarnRoot, err = strconv.ParseInt(n.helper.ReadCgroupFileContents(outside, system.CPUCFSQuota), 10, 64)
	require.NoError(t, err)
	return be, yarnRoot
}

// TestBindYARNSumsToBudget: with the YARN hierarchy outside besteffort, the
// quotas of the besteffort cgroup and of the YARN root sum to the budget
// upstream's suppress computed (the old code copied the whole budget onto
// the YARN root: twice the budget together).
func TestBindYARNSumsToBudget(t *testing.T) {
	tests := []bindCase{
		{name: "both busy, requests 1:3", budget: 200000, beRequest: 1000, yarnVCores: 3, beUsage: 2, yarnUsage: 2,
			wantBE: "49999", wantYARN: "150001"},
		{name: "BE pods idle", budget: 200000, beRequest: 1000, yarnVCores: 3, beUsage: 0, yarnUsage: 2},
		{name: "YARN idle", budget: 200000, beRequest: 1000, yarnVCores: 3, beUsage: 2, yarnUsage: 0},
		{name: "both idle", budget: 200000, beRequest: 1000, yarnVCores: 3},
		{name: "no requests anywhere", budget: 160000, beUsage: 1, yarnUsage: 1, wantBE: "79999", wantYARN: "80001"},
		{name: "no store: equal weights", budget: 160000, beRequest: 3000, beUsage: 3, yarnUsage: 3, noStore: true,
			wantBE: "79999", wantYARN: "80001"},
		{name: "upstream's minimum budget", budget: 2000, beRequest: 1000, yarnVCores: 3, beUsage: 2, yarnUsage: 2,
			wantBE: "1000", wantYARN: "1000"},
		{name: "odd budget", budget: 123457, beRequest: 700, yarnVCores: 5, beUsage: 0.3, yarnUsage: 1.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newBindNode(t, tc)
			n.s.BindYARN()
			be, ya := n.quotas(t)
			assert.Equal(t, tc.budget, be+ya, "besteffort %d + YARN root %d", be, ya)
			assert.GreaterOrEqual(t, be, system.CFSQuotaMinValue)
			assert.GreaterOrEqual(t, ya, system.CFSQuotaMinValue)
			if tc.wantBE != "" {
				assert.Equal(t, tc.wantBE, fmt.Sprint(be))
				assert.Equal(t, tc.wantYARN, fmt.Sprint(ya))
			}
			// Upstream sees the budget, not the BE pods' part of it, and a
			// second round (upstream not having written) keeps the budget.
			read, err := (&budgetReader{CgroupReader: resourceexecutor.NewCgroupReader(), s: n.s}).ReadCPUQuota(n.beDir)
			require.NoError(t, err)
			assert.Equal(t, tc.budget, read)
			n.s.BindYARN()
			be2, ya2 := n.quotas(t)
			assert.Equal(t, tc.budget, be2+ya2)
		})
	}
}

// TestBindYARNFollowsUpstream: a new budget written by upstream is divided
// anew; an unlimited budget leaves the YARN root unlimited; a hierarchy
// that is below besteffort again gets the besteffort cgroup the whole
// budget back.
func TestBindYARNFollowsUpstream(t *testing.T) {
	n := newBindNode(t, bindCase{budget: 200000, beRequest: 1000, yarnVCores: 1, beUsage: 2, yarnUsage: 2})
	n.s.BindYARN()
	be, ya := n.quotas(t)
	assert.Equal(t, [2]int64{99999, 100001}, [2]int64{be, ya})

	// Upstream lowers the budget (an LS burst): a multiple of 100, never a
	// share of ours.
	n.helper.WriteCgroupFileContents(n.beDir, system.CPUCFSQuota, "120000")
	n.s.BindYARN()
	be, ya = n.quotas(t)
	assert.Equal(t, int64(120000), be+ya)
	assert.Equal(t, [2]int64{59999, 60001}, [2]int64{be, ya})

	// Upstream's suppress off: unlimited.
	n.helper.WriteCgroupFileContents(n.beDir, system.CPUCFSQuota, "-1")
	n.s.BindYARN()
	be, ya = n.quotas(t)
	assert.Equal(t, [2]int64{-1, -1}, [2]int64{be, ya})

	// Divided again, then the hierarchy is re-resolved below besteffort.
	n.helper.WriteCgroupFileContents(n.beDir, system.CPUCFSQuota, "200000")
	n.s.BindYARN()
	be, _ = n.quotas(t)
	assert.Equal(t, int64(99999), be)
	n.s.deps.Hierarchy = func() string { return "kubepods/besteffort/hadoop-yarn" }
	n.s.BindYARN()
	be, _ = n.quotas(t)
	assert.Equal(t, int64(200000), be, "the whole budget back to the besteffort cgroup")
}
