package yarnqos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// fakeResctrl stands for the kernel's resctrl file system on the fake
// root: a write of an id to a group's tasks file moves the task out of
// every other group's list into that group's, unless the kernel refuses it
// (koordlet's executor only logs a refused id, as for a task that exited).
type fakeResctrl struct {
	t      *testing.T
	root   string
	refuse map[int32]bool
	// onWrite, when set, runs before each id is written.
	onWrite func(group string, id int32)
	// written are the ids written, in order.
	written []int32
}

func newFakeResctrl(t *testing.T, helper *system.FileTestUtil, groups map[string][]int32) *fakeResctrl {
	f := &fakeResctrl{t: t, root: filepath.Join(helper.TempDir, "fs", "resctrl"), refuse: map[int32]bool{}}
	for g, ids := range groups {
		require.NoError(t, os.MkdirAll(filepath.Join(f.root, g), 0o755))
		f.set(g, ids)
	}
	return f
}

func (f *fakeResctrl) tasksFile(group string) string { return filepath.Join(f.root, group, "tasks") }

func (f *fakeResctrl) list(group string) []int32 {
	b, err := os.ReadFile(f.tasksFile(group))
	require.NoError(f.t, err)
	var out []int32
	for _, l := range strings.Fields(string(b)) {
		v, err := strconv.ParseInt(l, 10, 32)
		require.NoError(f.t, err)
		out = append(out, int32(v))
	}
	return out
}

func (f *fakeResctrl) set(group string, ids []int32) {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%d\n", id)
	}
	require.NoError(f.t, os.WriteFile(f.tasksFile(group), []byte(b.String()), 0o644))
}

func (f *fakeResctrl) groups() []string {
	out := []string{""}
	ents, err := os.ReadDir(f.root)
	require.NoError(f.t, err)
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// write is the Applier's resctrlWrite on the fake.
func (f *fakeResctrl) write(group string, ids []int32) error {
	for _, id := range ids {
		f.written = append(f.written, id)
		if f.onWrite != nil {
			f.onWrite(group, id)
		}
		if f.refuse[id] {
			continue // refused; the executor logs it and goes on
		}
		for _, g := range f.groups() {
			f.set(g, slices.DeleteFunc(f.list(g), func(v int32) bool { return v == id }))
		}
		f.set(group, append(f.list(group), id))
	}
	return nil
}

func (f *fakeResctrl) sorted(group string) []int32 {
	out := f.list(group)
	slices.Sort(out)
	return out
}

func (f *fakeResctrl) in(group string, id int) bool { return slices.Contains(f.list(group), int32(id)) }

// TestResctrlMovesAreVerified (issue 55 item 15): joining and leaving the
// BE group are moves by number like any other (cgroups.Move): checked,
// written, verified. The code before counted every written id as moved, a
// task whose write the kernel refused included, and on leaving removed the
// container's marker although a task stayed in the BE group, so no later
// pass ever moved it back.
func TestResctrlMovesAreVerified(t *testing.T) {
	gates(t, string(features.YARNResctrlQoS))
	spec := beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity)
	helper, _, a, c := fakeNode(t, false, spec)
	si := mockstatesinformer.NewMockStatesInformer(gomock.NewController(t))
	si.EXPECT().GetNodeSLO().DoAndReturn(func() *slov1alpha1.NodeSLO { return &slov1alpha1.NodeSLO{Spec: *spec} }).AnyTimes()
	si.EXPECT().GetNode().Return(&corev1.Node{}).AnyTimes()
	a.opts.StatesInformer = func() statesinformer.StatesInformer { return si }
	dir := c.Cgroups[cgroups.CPU].Dir
	a1, b1 := livePid(t), livePid(t)
	for _, id := range []int{a1, b1} {
		fakeTask(t, id, 1000+int64(id), dir)
	}
	helper.WriteCgroupFileContents(dir, system.CPUTasks, fmt.Sprintf("%d\n%d\n", a1, b1))
	fk := newFakeResctrl(t, helper, map[string][]int32{"": {1, int32(a1), int32(b1)}, BEResctrlGroup: {11}})
	a.resctrlWrite = fk.write

	fk.refuse[int32(b1)] = true
	assert.Equal(t, 1, a.Apply(c), "only the task the kernel took joined")
	assert.True(t, fk.in(BEResctrlGroup, a1))
	assert.True(t, fk.in("", b1), "refused: still in the default group")
	delete(fk.refuse, int32(b1))
	assert.Equal(t, 1, a.Apply(c), "the refused one joins at the next pass")
	require.True(t, fk.in(BEResctrlGroup, b1))

	// Off in the NodeSLO: leave. The kernel refuses a1's move back.
	spec.ResourceQOSStrategy.BEClass.ResctrlQOS.Enable = ptr.To(false)
	fk.refuse[int32(a1)] = true
	assert.Equal(t, 1, a.Apply(c), "only b1 left")
	assert.True(t, fk.in(BEResctrlGroup, a1))
	_, err := unix.Getxattr(cpuDir(dir), ResctrlMarker, make([]byte, 8))
	assert.NoError(t, err, "a task is still in the BE group: the marker stays")
	delete(fk.refuse, int32(a1))
	assert.Equal(t, 1, a.Apply(c), "the next pass moves it back")
	assert.True(t, fk.in("", a1))
	_, err = unix.Getxattr(cpuDir(dir), ResctrlMarker, make([]byte, 8))
	assert.ErrorIs(t, err, unix.ENODATA, "all back: unmarked")
}

// TestResctrlJoinRevertsAReusedNumber: the task exits as its number is
// written to the BE group's tasks file, and a new task of an LS pod (its
// parent is in the LS group) takes the number, so the write moves it into
// BE. cgroups.MoveIn's one revert rule sends it back to its creator's
// group, and the container's count leaves it out.
func TestResctrlJoinRevertsAReusedNumber(t *testing.T) {
	gates(t, string(features.YARNResctrlQoS))
	helper, _, a, c := fakeNode(t, false, beSpec(slov1alpha1.CPUQOSPolicyGroupIdentity))
	dir := c.Cgroups[cgroups.CPU].Dir
	cmd := exec.Command("sleep", "3600")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	id := cmd.Process.Pid
	fakeTask(t, id, 1000, dir)
	const creator = 4242
	fakeTask(t, creator, 100, "kubepods/pod-ls/c1")
	helper.WriteCgroupFileContents(dir, system.CPUTasks, fmt.Sprintf("%d\n", id))
	fk := newFakeResctrl(t, helper, map[string][]int32{"": {1, int32(id)}, BEResctrlGroup: {11}, "LS": {creator}})
	a.resctrlWrite = fk.write
	fk.onWrite = func(group string, v int32) {
		if group != BEResctrlGroup || int(v) != id {
			return
		}
		fk.onWrite = nil
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		p := filepath.Join(system.Conf.ProcRootDir, strconv.Itoa(id))
		require.NoError(t, os.WriteFile(filepath.Join(p, "stat"), []byte(kerneltest.ProcStat(id, "python", creator, 2000)), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(p, "cgroup"), []byte("4:cpu:/kubepods/pod-ls/c1\n"), 0o644))
		fk.set("", []int32{1})
		fk.set("LS", []int32{creator, int32(id)}) // born in its parent's group
	}
	assert.Equal(t, 0, a.Apply(c), "the checked task is gone: nothing of the container moved")
	assert.Equal(t, []int32{11}, fk.sorted(BEResctrlGroup), "the new task is not left in BE")
	assert.ElementsMatch(t, []int32{int32(id), creator}, fk.list("LS"), "back in its creator's group")
}

func TestParseResctrlGroups(t *testing.T) {
	for _, tc := range []struct {
		in    string
		group string
		ok    bool
	}{
		{"res:/\nmon:/\n", "", true},
		{"res:BE\nmon:/BE\n", "BE", true},
		{"res:/BE\nmon:\n", "BE", true},
		{"res:\nmon:\n", "", false}, // resctrl not mounted
		{"", "", false},
	} {
		g, ok := parseResctrlGroups(tc.in)
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.group, g, tc.in)
	}
}

// TestGroupOf: a task is in the named group that lists it, else in the
// default group (the kernel's default group lists every task no other
// group holds), so its list, every task on the node, is never needed.
func TestGroupOf(t *testing.T) {
	named := map[string]map[int32]struct{}{"BE": {7: {}}, "LS": {9: {}}}
	for _, tc := range []struct {
		id   int32
		want string
	}{{7, "BE"}, {9, "LS"}, {8, ""}} {
		assert.Equal(t, tc.want, GroupOf(named, tc.id), "task %d", tc.id)
	}
	assert.Equal(t, "", GroupOf(nil, 7), "no named group: the default")
}
