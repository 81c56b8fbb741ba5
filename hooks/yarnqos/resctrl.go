package yarnqos

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// pinTasks pins the tasks (cgroups.Pin: a thread pidfd, else the start
// time) that are in the container's cgroup dir (ctrl); /proc/<id>/cgroup
// is read through h's cgroup namespace.
func pinTasks(h cgroups.Hierarchy, ids []int32, ctrl cgroups.Controller, dir string) []*cgroups.Pinned {
	var out []*cgroups.Pinned
	for _, id := range ids {
		p, err := cgroups.Pin(h.ProcRoot, int(id))
		if err != nil {
			continue // gone
		}
		if !h.Contains(int(id), ctrl, dir) || !p.Alive() {
			p.Release()
			continue
		}
		out = append(out, p)
	}
	return out
}

// misplaced checks, after the ids of pinned were written, that each number
// still named the task that was checked, and returns the ids that named
// another task (a number reused between the check and the write), now
// outside the container: those tasks were moved by mistake. It releases
// the pins.
func misplaced(h cgroups.Hierarchy, pinned []*cgroups.Pinned, ctrl cgroups.Controller, dir string) []int32 {
	var wrong []int32
	for _, p := range pinned {
		if p.Reused() && !h.Contains(p.ID, ctrl, dir) {
			wrong = append(wrong, int32(p.ID))
		}
		p.Release()
	}
	return wrong
}

// namedResctrlGroups reads the tasks of every resctrl control group but
// the default one (which lists every task in no other group).
func namedResctrlGroups() map[string]map[int32]struct{} {
	out := map[string]map[int32]struct{}{}
	entries, _ := os.ReadDir(system.GetResctrlGroupRootDirPath(""))
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "info" || strings.HasPrefix(e.Name(), "mon_") {
			continue
		}
		if m, err := system.ReadResctrlTasksMap(e.Name()); err == nil {
			out[e.Name()] = m
		}
	}
	return out
}

// GroupOf returns the control group of task id from the named groups'
// tasks: the one that lists it, else the default group (""). The kernel
// keeps every task in exactly one group, and the default group's tasks
// file lists exactly the tasks no other group holds; so a task no named
// group lists is in the default group (one that exited is told by its pin,
// not here), and the default group's list, every task on the node, need
// not be read.
func GroupOf(named map[string]map[int32]struct{}, id int32) string {
	for g, tasks := range named {
		if _, ok := tasks[id]; ok {
			return g
		}
	}
	return ""
}

// resctrlPlace is the resctrl control groups as a cgroups.Place, so that a
// task joins or leaves a group by cgroups.MoveIn, the one mover by number
// (pinned, checked, written, verified, a reused number's task moved back
// where its creator is). A group is its directory name under the resctrl
// root ("": the default group); a task is in exactly one.
type resctrlPlace struct {
	procRoot string
	write    func(group string, ids []int32) error
}

// Of reads the task's group from /proc/<id>/cpu_resctrl_groups (Linux
// 5.0), else from the named groups' tasks files (GroupOf).
func (r resctrlPlace) Of(id int) (string, bool) {
	if b, err := os.ReadFile(filepath.Join(r.procRoot, strconv.Itoa(id), "cpu_resctrl_groups")); err == nil {
		if g, ok := parseResctrlGroups(string(b)); ok {
			return g, true
		}
	}
	return GroupOf(namedResctrlGroups(), int32(id)), true
}

func (r resctrlPlace) Put(group string, id int) error { return r.write(group, []int32{int32(id)}) }

func (r resctrlPlace) Path(group string) string { return system.GetResctrlTasksFilePath(group) }

func (r resctrlPlace) String() string { return "resctrl" }

// Whole is false: a tasks file moves the one thread written.
func (r resctrlPlace) Whole() bool { return false }

// parseResctrlGroups returns the control group of a task's
// cpu_resctrl_groups ("res:/" for the default group, "res:BE" for BE; ok
// false when resctrl is not mounted: "res:").
func parseResctrlGroups(content string) (string, bool) {
	for _, line := range strings.Split(content, "\n") {
		v, ok := strings.CutPrefix(line, "res:")
		if !ok {
			continue
		}
		if v == "" {
			return "", false
		}
		return strings.Trim(v, "/"), true
	}
	return "", false
}

// moveResctrl moves task id of the container whose cpu cgroup is cpuDir
// from resctrl group from to group to by cgroups.MoveIn: the task must be
// in the container's cgroup (checked before and after, never written) and
// in from. A reverted task is logged by MoveIn.
func (a *Applier) moveResctrl(h cgroups.Hierarchy, container, cpuDir string, id int32, from, to string) cgroups.MoveResult {
	p, err := cgroups.Pin(h.ProcRoot, int(id))
	if err != nil {
		return cgroups.MoveGone
	}
	defer p.Release()
	r, err := cgroups.MoveIn(h.ProcRoot, p, []cgroups.Shift{
		{Place: h.Place(cgroups.CPU, nil), From: cpuDir, To: cpuDir},
		{Place: resctrlPlace{procRoot: h.ProcRoot, write: a.resctrlWrite}, From: from, To: to},
	})
	switch {
	case errors.Is(err, cgroups.ErrNotMovedBack):
		klog.Warningf("yarn: resctrl group of task %d of %s: %v", id, container, err)
	case err != nil:
		klog.V(4).Infof("yarn: resctrl group of task %d of %s: %v", id, container, err)
	}
	return r
}
