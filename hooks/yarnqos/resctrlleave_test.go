package yarnqos

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestHomeGroups: a task moved by a reused number goes back to the group
// its creator (leader for a thread, parent for a process) was in before
// the write; the code before sent every such task to the default group,
// taking an LS pod's task out of its own group.
func TestHomeGroups(t *testing.T) {
	proc := t.TempDir()
	status := func(id, tgid, ppid int) {
		require.NoError(t, os.MkdirAll(filepath.Join(proc, strconv.Itoa(id)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(proc, strconv.Itoa(id), "status"),
			[]byte(fmt.Sprintf("Name:\tx\nTgid:\t%d\nPid:\t%d\nPPid:\t%d\n", tgid, id, ppid)), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(proc, strconv.Itoa(id), "stat"), []byte(kerneltest.ProcStat(id, "x", ppid, 1)), 0o644))
	}
	status(100, 100, 50) // a process whose parent 50 is in LS
	status(101, 60, 1)   // a thread of 60, which is in BE
	status(102, 102, 1)  // a process whose parent is in no group read
	before := map[string]map[int32]struct{}{"": {1: {}}, "LS": {50: {}}, BEResctrlGroup: {60: {}}}
	got := homeGroups(proc, before, []int32{100, 101, 102, 103})
	assert.Equal(t, map[string][]int32{"LS": {100}, BEResctrlGroup: {101}, "": {102, 103}}, got)
	g, ok := GroupOf(before, 50)
	assert.True(t, ok)
	assert.Equal(t, "LS", g)
}

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
	root := filepath.Join(helper.TempDir, "fs", "resctrl")
	beTasks, rootTasks := filepath.Join(root, BEResctrlGroup, "tasks"), filepath.Join(root, "tasks")
	require.NoError(t, os.MkdirAll(filepath.Dir(beTasks), 0o755))
	require.NoError(t, os.WriteFile(beTasks, []byte("11\n"), 0o644))
	require.NoError(t, os.WriteFile(rootTasks, []byte("1\n"), 0o644))
	a1, b1 := livePid(t), livePid(t)
	for _, id := range []int{a1, b1} {
		fakeTask(t, id, 1000+int64(id), c.Cgroups[cgroups.CPU].Dir)
	}
	helper.WriteCgroupFileContents(c.Cgroups[cgroups.CPU].Dir, system.CPUTasks, fmt.Sprintf("%d\n%d\n", a1, b1))
	require.Equal(t, 2, a.Apply(c))
	// As the kernel lists them: both in BE now.
	require.NoError(t, os.WriteFile(beTasks, []byte(fmt.Sprintf("11\n%d\n%d\n", a1, b1)), 0o644))

	spec.ResourceQOSStrategy.BEClass.ResctrlQOS.Enable = ptr.To(false)
	assert.Equal(t, 2, a.Apply(c), "off in the NodeSLO: both back to the default group")
	b, err := os.ReadFile(rootTasks)
	require.NoError(t, err)
	// (a regular file stands for the tasks file: the last id written stays)
	assert.True(t, strings.Contains(string(b), strconv.Itoa(a1)) || strings.Contains(string(b), strconv.Itoa(b1)), string(b))
	assert.Equal(t, 0, a.Apply(c), "unmarked: nothing more")

	// On again; then a koordlet started with the gate off.
	spec.ResourceQOSStrategy.BEClass.ResctrlQOS.Enable = ptr.To(true)
	require.NoError(t, os.WriteFile(beTasks, []byte("11\n"), 0o644))
	require.Equal(t, 2, a.Apply(c))
	require.NoError(t, os.WriteFile(beTasks, []byte(fmt.Sprintf("11\n%d\n%d\n", a1, b1)), 0o644))
	require.NoError(t, os.WriteFile(rootTasks, []byte("1\n"), 0o644))
	gates(t)
	assert.Equal(t, 2, a.RestoreDisabled())
	b, err = os.ReadFile(rootTasks)
	require.NoError(t, err)
	assert.NotEqual(t, "1\n", string(b))
}
