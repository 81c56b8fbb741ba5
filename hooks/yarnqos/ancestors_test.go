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

func TestIdleAncestors(t *testing.T) {
	old := system.CgroupPathFormatter
	t.Cleanup(func() { system.CgroupPathFormatter = old })

	system.SetupCgroupPathFormatter(system.Cgroupfs)
	assert.Equal(t, []string{"kubepods/besteffort"}, idleAncestors("kubepods/besteffort/hadoop-yarn"))
	assert.Equal(t, []string{"kubepods/besteffort"}, idleAncestors("/kubepods/besteffort/hadoop-yarn/"))
	assert.Equal(t, []string{"kubepods/besteffort/yarn", "kubepods/besteffort"}, idleAncestors("kubepods/besteffort/yarn/hadoop-yarn"))
	assert.Nil(t, idleAncestors("hadoop-yarn"), "beside kubepods: the YARN root is the LS pods' kind of sibling itself")
	assert.Nil(t, idleAncestors("kubepods/besteffort"))
	assert.Nil(t, idleAncestors("kubepods/besteffort-other/hadoop-yarn"))
	assert.Nil(t, idleAncestors("kubepods/burstable/hadoop-yarn"))

	system.SetupCgroupPathFormatter(system.Systemd)
	assert.Equal(t, []string{"kubepods.slice/kubepods-besteffort.slice"},
		idleAncestors("kubepods.slice/kubepods-besteffort.slice/hadoop-yarn"))
}

// TestApplyRootMakesBesteffortIdle: with the YARN hierarchy below the
// besteffort QoS cgroup, a sched-idle BE class makes that QoS cgroup idle
// too (the LS pods' sibling), not kubepods; turning CPU QoS off resets it.
func TestApplyRootMakesBesteffortIdle(t *testing.T) {
	gates(t, string(features.YARNCPUQoS))
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	old := system.CgroupPathFormatter
	system.SetupCgroupPathFormatter(system.Cgroupfs)
	t.Cleanup(func() { system.CgroupPathFormatter = old })
	const yarnRoot = "kubepods/besteffort/hadoop-yarn"
	for _, d := range []string{"kubepods", "kubepods/besteffort", yarnRoot} {
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

	assert.Equal(t, 2, a.ApplyRoot())
	assert.Equal(t, "1", helper.ReadCgroupFileContents(yarnRoot, system.CPUIdle))
	assert.Equal(t, "1", helper.ReadCgroupFileContents("kubepods/besteffort", system.CPUIdle), "the LS pods' sibling is idle")
	assert.Equal(t, "0", helper.ReadCgroupFileContents("kubepods", system.CPUIdle), "kubepods itself is not BE")
	assert.Equal(t, 0, a.ApplyRoot(), "unchanged: nothing written")

	spec.ResourceQOSStrategy.BEClass.CPUQOS.Enable = ptr.To(false)
	assert.Equal(t, 2, a.ApplyRoot())
	assert.Equal(t, "0", helper.ReadCgroupFileContents("kubepods/besteffort", system.CPUIdle))
	assert.Equal(t, "0", helper.ReadCgroupFileContents(yarnRoot, system.CPUIdle))
}
