package yarnqos

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// SchedIdleMarker is the trusted xattr on a YARN container's cpu cgroup
// while koordlet has given (some of) its tasks the SCHED_IDLE policy: it
// tells a later koordlet, or one started with YARNCPUQoS off, whose
// SCHED_IDLE tasks to give back SCHED_OTHER.
const SchedIdleMarker = "trusted.koordlet-yarn.sched-idle"

// SchedPolicyResource is the resource label of the tasks whose scheduling
// policy the applier changed (koordlet_yarn_qos_writes_total).
const SchedPolicyResource = "sched_policy"

// nextPolicy returns the policy a task with policy cur gets: SCHED_IDLE for
// a normal or batch task when idle, SCHED_OTHER (normal) for an idle task
// when not; changed is false when the task keeps its policy (real-time and
// deadline tasks are never changed).
func nextPolicy(cur uint32, idle bool) (next uint32, changed bool) {
	switch {
	case idle && (cur == unix.SCHED_NORMAL || cur == unix.SCHED_BATCH):
		return unix.SCHED_IDLE, true
	case !idle && cur == unix.SCHED_IDLE:
		return unix.SCHED_NORMAL, true
	}
	return cur, false
}

// setPolicy gives task id the policy, keeping its nice value and its
// reset-on-fork flag, and returns whether it changed.
func setPolicy(id int, idle bool) (bool, error) {
	attr, err := unix.SchedGetAttr(id, 0)
	if err != nil {
		return false, err
	}
	next, changed := nextPolicy(attr.Policy, idle)
	if !changed {
		return false, nil
	}
	want := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: next, Nice: attr.Nice,
		Flags: attr.Flags & unix.SCHED_FLAG_RESET_ON_FORK}
	if err := unix.SchedSetAttr(id, &want, 0); err != nil {
		return false, err
	}
	return true, nil
}

// cpuDir is the absolute cpu cgroup dir of rel.
func cpuDir(rel string) string {
	r, err := system.GetCgroupResource(system.CPUTasksName)
	if err != nil {
		return ""
	}
	return filepath.Dir(r.Path(rel))
}

func marked(dir string) bool {
	_, err := unix.Getxattr(dir, SchedIdleMarker, make([]byte, 8))
	return err == nil
}

// applySchedIdle gives the tasks of the container's own cpu cgroup the
// SCHED_IDLE policy (idle) or gives the ones koordlet made idle back
// SCHED_OTHER (!idle), and returns how many tasks changed. The kernel
// preempts a SCHED_IDLE task at once for any waking task of another
// policy, whatever their cgroups, and tasks inherit the policy on fork, so
// this gives LS wake-ups precedence over YARN work without making a cgroup
// idle that the LCE writes cpu.shares to. Each task is pinned (pidfd,
// start time) and checked to be the container's before its policy is set
// by number; a number that named another task by then (reused) gets that
// task's policy back. The caller holds a.mu.
func (a *Applier) applySchedIdle(c *store.Container, idle bool) int {
	ref := c.Cgroups[cgroups.CPU]
	if !ref.Owned || a.schedIdleOff {
		return 0
	}
	dir := cpuDir(ref.Dir)
	if dir == "" {
		return 0
	}
	if !idle && !marked(dir) {
		return 0 // koordlet never made this container's tasks idle
	}
	tasks, err := a.cgroupReader().ReadCPUTasks(ref.Dir)
	if err != nil {
		return 0
	}
	h := a.hierarchy()
	pinned := pinTasks(h, tasks, cgroups.CPU, ref.Dir)
	defer func() {
		if wrong := misplaced(h, pinned, cgroups.CPU, ref.Dir); len(wrong) > 0 && idle {
			for _, id := range wrong {
				_, err := setPolicy(int(id), false)
				klog.Warningf("yarn: task %d took the number of a task of %s while it was made SCHED_IDLE; its policy was given back (err: %v)", id, c.Name, err)
			}
		}
	}()
	if idle && len(pinned) > 0 && !marked(dir) {
		// Marked before the first change: a koordlet that dies midway
		// leaves the marker, and the next one can give the tasks back.
		if err := unix.Setxattr(dir, SchedIdleMarker, []byte("1"), 0); err != nil {
			a.schedIdleOff = true
			klog.Warningf("yarn: SCHED_IDLE for YARN container tasks skipped on this node: cannot mark %s (xattr %s: %v); without a marker koordlet could not give the tasks back their policy", dir, SchedIdleMarker, err)
			return 0
		}
	}
	changed, failed := 0, 0
	for _, p := range pinned {
		ok, err := setPolicy(p.ID, idle)
		switch {
		case errors.Is(err, unix.EPERM):
			a.schedIdleOff = true
			klog.Warningf("yarn: SCHED_IDLE for YARN container tasks skipped on this node: koordlet may not change scheduling policies (%v; needs CAP_SYS_NICE)", err)
			return changed
		case err != nil && !errors.Is(err, unix.ESRCH):
			failed++
			klog.V(4).Infof("yarn: set the scheduling policy of task %d of %s: %v", p.ID, c.Name, err)
		case ok:
			changed++
		}
	}
	if !idle && failed == 0 {
		if err := unix.Removexattr(dir, SchedIdleMarker); err != nil && !errors.Is(err, unix.ENODATA) {
			klog.V(4).Infof("yarn: remove %s from %s: %v", SchedIdleMarker, dir, err)
		}
	}
	return changed
}
