package yarnqos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

func TestKubeletManaged(t *testing.T) {
	old := system.CgroupPathFormatter
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	for _, tc := range []struct {
		driver system.CgroupDriverType
		dir    string
		want   bool
	}{
		{system.Cgroupfs, "kubepods/besteffort/hadoop-yarn", false},
		{system.Cgroupfs, "/hadoop-yarn", false},
		{system.Cgroupfs, "kubepods/besteffort/yarn/hadoop-yarn", false},
		{system.Cgroupfs, "kubepods/besteffort", true},
		{system.Cgroupfs, "/kubepods/burstable/", true},
		{system.Cgroupfs, "kubepods", true},
		{system.Cgroupfs, "/", true},
		{system.Cgroupfs, "kubepods/besteffort/pod0a1b2c3d-0000-1111-2222-333344445555", true},
		{system.Cgroupfs, "kubepods/besteffort/pod0a1b2c3d-0000-1111-2222-333344445555/hadoop-yarn", true},
		{system.Systemd, "kubepods.slice/kubepods-besteffort.slice/hadoop-yarn", false},
		{system.Systemd, "kubepods.slice/kubepods-besteffort.slice", true},
		{system.Systemd, "kubepods.slice", true},
		{system.Systemd, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0a1b2c3d_0000_1111_2222_333344445555.slice/hadoop-yarn", true},
		{system.Systemd, "kubepods.slice/kubepods-pod0a1b2c3d_0000_1111_2222_333344445555.slice", true},
	} {
		system.SetupCgroupPathFormatter(tc.driver)
		assert.Equal(t, tc.want, KubeletManaged(tc.dir), "%s %s", tc.driver, tc.dir)
	}
}

// TestApplyRootLeavesBesteffortAlone: with the YARN hierarchy below the
// besteffort QoS cgroup, a sched-idle BE class makes the YARN root idle and
// never the QoS cgroup (the kubelet writes its cpu.shares, which the kernel
// refuses while cpu.idle=1) nor the containers' (the LCE writes cpu.shares
// there); turning CPU QoS off resets the root.
func TestApplyRootLeavesBesteffortAlone(t *testing.T) {
	gates(t, string(features.YARNCPUQoS))
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	const yarnRoot = "kubepods/besteffort/hadoop-yarn"
	for _, d := range []string{"kubepods", "kubepods/besteffort", yarnRoot, yarnRoot + "/container_1700000000000_0001_01_000002"} {
		helper.WriteCgroupFileContents(d, system.CPUIdle, "0")
	}
	helper.SetResourcesSupported(true, system.CPUIdle)

	spec := beSpec(slov1alpha1.CPUQOSPolicyCoreSched)
	si := mockstatesinformer.NewMockStatesInformer(gomock.NewController(t))
	si.EXPECT().GetNodeSLO().DoAndReturn(func() *slov1alpha1.NodeSLO { return &slov1alpha1.NodeSLO{Spec: *spec} }).AnyTimes()
	si.EXPECT().GetNode().Return(&corev1.Node{}).AnyTimes()
	a := New(Options{Store: store.New(), StatesInformer: func() statesinformer.StatesInformer { return si },
		Hierarchy: func() string { return yarnRoot }, Interval: time.Hour})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	a.executor.Run(stop)

	assert.Equal(t, 1, a.ApplyRoot(), "the root made idle")
	assert.Equal(t, "1", helper.ReadCgroupFileContents(yarnRoot, system.CPUIdle))
	assert.Equal(t, "0", helper.ReadCgroupFileContents("kubepods/besteffort", system.CPUIdle), "the kubelet's QoS cgroup is never idle")
	assert.Equal(t, "0", helper.ReadCgroupFileContents(yarnRoot+"/container_1700000000000_0001_01_000002", system.CPUIdle), "the LCE writes cpu.shares there")
	assert.Equal(t, "0", helper.ReadCgroupFileContents("kubepods", system.CPUIdle))
	assert.Equal(t, 0, a.ApplyRoot(), "unchanged: nothing written")

	spec.ResourceQOSStrategy.BEClass.CPUQOS.Enable = ptr.To(false)
	assert.Equal(t, 1, a.ApplyRoot())
	assert.Equal(t, "0", helper.ReadCgroupFileContents(yarnRoot, system.CPUIdle))
}

// TestApplyRootKubeletManagedRoot: a YARN hierarchy that is itself a
// kubelet-managed cgroup (here the besteffort QoS cgroup) is never made
// idle.
func TestApplyRootKubeletManagedRoot(t *testing.T) {
	gates(t, string(features.YARNCPUQoS))
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	helper.WriteCgroupFileContents("kubepods/besteffort", system.CPUIdle, "0")
	helper.SetResourcesSupported(true, system.CPUIdle)
	spec := beSpec(slov1alpha1.CPUQOSPolicyCoreSched)
	si := mockstatesinformer.NewMockStatesInformer(gomock.NewController(t))
	si.EXPECT().GetNodeSLO().Return(&slov1alpha1.NodeSLO{Spec: *spec}).AnyTimes()
	si.EXPECT().GetNode().Return(&corev1.Node{}).AnyTimes()
	a := New(Options{Store: store.New(), StatesInformer: func() statesinformer.StatesInformer { return si },
		Hierarchy: func() string { return "kubepods/besteffort" }, Interval: time.Hour})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	a.executor.Run(stop)
	assert.Equal(t, 0, a.ApplyRoot())
	assert.Equal(t, "0", helper.ReadCgroupFileContents("kubepods/besteffort", system.CPUIdle))
}
