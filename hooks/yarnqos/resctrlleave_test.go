package yarnqos

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// TestResctrlWithdrawn: tasks koordlet moved into the BE group go back to
// the default group when the NodeSLO turns L3 CAT / MBA off, and when a
// koordlet starts with YARNResctrlQoS off; the code before left them.
func TestResctrlWithdrawn(t *testing.T) {
	gates(t, string(features.YARNResctrlQoS))
	spec := beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity)
	helper, _, a, c := fakeNode(t, false, spec)
	si := mockstatesinformer.NewMockStatesInformer(gomock.NewController(t))
	si.EXPECT().GetNodeSLO().DoAndReturn(func() *slov1alpha1.NodeSLO { return &slov1alpha1.NodeSLO{Spec: *spec} }).AnyTimes()
	si.EXPECT().GetNode().Return(&corev1.Node{}).AnyTimes()
	a.opts.StatesInformer = func() statesinformer.StatesInformer { return si }
	a.opts.Hierarchy = func() string { return "kubepods/besteffort/hadoop-yarn" }
	a1, b1 := livePid(t), livePid(t)
	for _, id := range []int{a1, b1} {
		fakeTask(t, id, 1000+int64(id), c.Cgroups[cgroups.CPU].Dir)
	}
	fk := newFakeResctrl(t, helper, map[string][]int32{"": {1, int32(a1), int32(b1)}, BEResctrlGroup: {11}})
	a.resctrlWrite = fk.write
	helper.WriteCgroupFileContents(c.Cgroups[cgroups.CPU].Dir, system.CPUTasks, fmt.Sprintf("%d\n%d\n", a1, b1))
	require.Equal(t, 2, a.Apply(c))
	require.Equal(t, []int32{11, int32(a1), int32(b1)}, fk.sorted(BEResctrlGroup))

	spec.ResourceQOSStrategy.BEClass.ResctrlQOS.Enable = ptr.To(false)
	assert.Equal(t, 2, a.Apply(c), "off in the NodeSLO: both back to the default group")
	assert.Equal(t, []int32{1, int32(a1), int32(b1)}, fk.sorted(""))
	assert.Equal(t, 0, a.Apply(c), "unmarked: nothing more")

	// On again; then a koordlet started with the gate off.
	spec.ResourceQOSStrategy.BEClass.ResctrlQOS.Enable = ptr.To(true)
	require.Equal(t, 2, a.Apply(c))
	require.Equal(t, []int32{11, int32(a1), int32(b1)}, fk.sorted(BEResctrlGroup))
	gates(t)
	assert.Equal(t, 2, a.RestoreDisabled())
	assert.Equal(t, []int32{1, int32(a1), int32(b1)}, fk.sorted(""))
	assert.Equal(t, []int32{11}, fk.sorted(BEResctrlGroup))
}
