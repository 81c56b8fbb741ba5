package yarnqos

import (
	"errors"
	"os"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// pidfdThread is the kernel's PIDFD_THREAD flag (Linux 6.9): a pidfd for a
// thread rather than a thread-group leader.
const pidfdThread = unix.O_EXCL

// pinnedTask is a task of a container held across a move that writes its
// id by number: the pidfd tells afterwards whether the task that was
// checked still lives, hence still owns the number.
type pinnedTask struct {
	id int32
	fd int // -1: the kernel cannot pin this thread; start time only
	// start is the task's start time in clock ticks since boot.
	start int64
}

// pinTasks keeps the tasks that are, with a pidfd held where the kernel
// allows one, in the container's cgroup dir (ctrl), with their start time;
// /proc/<id>/cgroup is read through h's cgroup namespace.
func pinTasks(h cgroups.Hierarchy, ids []int32, ctrl cgroups.Controller, dir string) []pinnedTask {
	procRoot := h.ProcRoot
	var out []pinnedTask
	for _, id := range ids {
		fd, err := unix.PidfdOpen(int(id), pidfdThread)
		if errors.Is(err, unix.EINVAL) {
			fd, err = unix.PidfdOpen(int(id), 0) // older kernel: leaders only
		}
		if err != nil {
			fd = -1
			if errors.Is(err, unix.ESRCH) {
				continue // gone
			}
		}
		start, ok := cgroups.TaskStartTicks(procRoot, int(id))
		if !ok || !h.Contains(int(id), ctrl, dir) {
			closeFd(fd)
			continue
		}
		out = append(out, pinnedTask{id: id, fd: fd, start: start})
	}
	return out
}

// misplaced checks, after the ids of pinned were written, that each number
// still named the task that was checked, and returns the ids that named
// another task (a number reused between the check and the write): those
// tasks were moved by mistake. A task whose pidfd shows it alive owned its
// number all along. Without a live pidfd, a number now held by a task with
// another start time outside the container is reported: a thread that took
// the number after the write inherited its creator's group, so moving it
// back to the default group errs on the side of never leaving a foreign
// task in the BE class. It closes the pidfds.
func misplaced(h cgroups.Hierarchy, pinned []pinnedTask, ctrl cgroups.Controller, dir string) []int32 {
	procRoot := h.ProcRoot
	var wrong []int32
	for _, p := range pinned {
		alive := p.fd >= 0 && unix.PidfdSendSignal(p.fd, 0, nil, 0) == nil
		closeFd(p.fd)
		if alive {
			continue
		}
		start, ok := cgroups.TaskStartTicks(procRoot, int(p.id))
		if !ok || start == p.start {
			continue // gone, or the same task
		}
		if !h.Contains(int(p.id), ctrl, dir) {
			wrong = append(wrong, p.id)
		}
	}
	return wrong
}

func closeFd(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}

func ids(pinned []pinnedTask) []int32 {
	out := make([]int32, len(pinned))
	for i, p := range pinned {
		out[i] = p.id
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

// creator returns the task a task took its resctrl group from: its thread
// group's leader for a thread, its parent for a leader (0 if unknown).
func creator(procRoot string, id int32) int32 {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return 0
	}
	p, err := fs.Proc(int(id))
	if err != nil {
		return 0
	}
	if st, err := p.NewStatus(); err == nil && st.TGID > 0 && int32(st.TGID) != id {
		return int32(st.TGID) // a thread: its leader
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return int32(st.PPID)
}

// homeGroups returns, for each task moved into the BE group by a reused
// number, the group it belongs in: the group its creator was in before the
// write (a new task inherits its creator's group), else the default group.
func homeGroups(procRoot string, before map[string]map[int32]struct{}, wrong []int32) map[string][]int32 {
	out := map[string][]int32{}
	for _, id := range wrong {
		g := ""
		if c := creator(procRoot, id); c > 0 {
			if cg, ok := GroupOf(before, c); ok {
				g = cg
			}
		}
		out[g] = append(out[g], id)
	}
	return out
}
