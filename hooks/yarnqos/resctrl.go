package yarnqos

import (
	"os"
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

func ids(pinned []*cgroups.Pinned) []int32 {
	out := make([]int32, len(pinned))
	for i, p := range pinned {
		out[i] = int32(p.ID)
	}
	return out
}

func logMisplaced(container string, wrong []int32, err error) {
	if err != nil {
		klog.Errorf("yarn: tasks %v were moved to resctrl %s by a reused number while joining %s, and moving them back failed: %v", wrong, BEResctrlGroup, container, err)
		return
	}
	klog.Warningf("yarn: tasks %v were moved to resctrl %s by a reused number while joining %s; moved back to the group they came from", wrong, BEResctrlGroup, container)
}

// resctrlGroups reads the tasks of every resctrl control group ("" is the
// default group): where each task was before a write, so that a task moved
// by a reused number goes back to its own group.
func resctrlGroups() map[string]map[int32]struct{} {
	out := map[string]map[int32]struct{}{}
	if m, err := system.ReadResctrlTasksMap(""); err == nil {
		out[""] = m
	}
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

// GroupOf returns the group whose tasks hold id ("" and false: none).
func GroupOf(groups map[string]map[int32]struct{}, id int32) (string, bool) {
	for g, tasks := range groups {
		if _, ok := tasks[id]; ok {
			return g, true
		}
	}
	return "", false
}

// homeGroups returns, for each task moved into a group by a reused number,
// the group it was in: cgroups.Move's rule (the task took the number after
// the check, so it was made where its creator was: the group its creator
// was in before the write), else the default group.
func homeGroups(procRoot string, before map[string]map[int32]struct{}, wrong []int32) map[string][]int32 {
	out := map[string][]int32{}
	for _, id := range wrong {
		g := ""
		if c := cgroups.Creator(procRoot, int(id)); c > 0 {
			if cg, ok := GroupOf(before, int32(c)); ok {
				g = cg
			}
		}
		out[g] = append(out[g], id)
	}
	return out
}
