package yarnqos

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// ResctrlMarker is the trusted xattr on a YARN container's cpu cgroup once
// koordlet moved its tasks into the resctrl BE group: withdrawing L3 CAT /
// MBA (the gate or the NodeSLO turning it off, even after a restart) moves
// the tasks of the marked containers back to the default group.
const ResctrlMarker = "trusted.koordlet-yarn.resctrl"

// markResctrl marks the container's cpu cgroup; false when it cannot (then
// no task is moved: they could not be moved back after a restart).
func (a *Applier) markResctrl(rel string) bool {
	dir := cpuDir(rel)
	if dir == "" {
		return false
	}
	if _, err := unix.Getxattr(dir, ResctrlMarker, make([]byte, 8)); err == nil {
		return true
	}
	if err := unix.Setxattr(dir, ResctrlMarker, []byte("1"), 0); err != nil {
		if a.said.First("resctrl-mark") {
			klog.Warningf("yarn: L3 CAT / MBA for YARN containers skipped: cannot mark %s (xattr %s: %v); without a marker koordlet could not move the tasks back", dir, ResctrlMarker, err)
		}
		return false
	}
	return true
}

// leaveResctrl moves the tasks of a container koordlet moved into the BE
// group (marked) back to the default group, and returns how many it moved.
// Each task is moved as for joining (cgroups.MoveIn); the marker goes only
// when none failed. The caller holds a.mu.
func (a *Applier) leaveResctrl(c *store.Container) int {
	ref := c.Cgroups[cgroups.CPU]
	if !ref.Owned {
		return 0
	}
	dir := cpuDir(ref.Dir)
	if dir == "" {
		return 0
	}
	if _, err := unix.Getxattr(dir, ResctrlMarker, make([]byte, 8)); err != nil {
		return 0
	}
	unmark := func() {
		if err := unix.Removexattr(dir, ResctrlMarker); err != nil && !errors.Is(err, unix.ENODATA) {
			klog.V(4).Infof("yarn: remove %s from %s: %v", ResctrlMarker, dir, err)
		}
	}
	if _, err := os.Stat(system.GetResctrlGroupRootDirPath(BEResctrlGroup)); err != nil {
		unmark() // no BE group any more: nothing is in it
		return 0
	}
	tasks, err := a.cgroupReader().ReadCPUTasks(ref.Dir)
	if err != nil {
		return 0
	}
	in, err := system.ReadResctrlTasksMap(BEResctrlGroup)
	if err != nil {
		return 0
	}
	var ours []int32
	for _, id := range tasks {
		if _, ok := in[id]; ok {
			ours = append(ours, id)
		}
	}
	if len(ours) == 0 {
		unmark()
		return 0
	}
	h := a.hierarchy()
	moved, failed := 0, false
	for _, id := range ours {
		switch a.moveResctrl(h, c.Name, ref.Dir, id, BEResctrlGroup, "") {
		case cgroups.MoveMoved:
			moved++
		case cgroups.MoveFailed:
			failed = true
		}
	}
	if !failed {
		unmark() // else the marker stays: the next pass moves the rest back
	}
	return moved
}

// leaveResctrlDisabled moves the tasks of every marked container under the
// YARN root back to the default group (the gate YARNResctrlQoS is off).
// The caller holds a.mu.
func (a *Applier) leaveResctrlDisabled(root string) int {
	rootAbs := cpuDir(root)
	if rootAbs == "" {
		return 0
	}
	n := 0
	for _, c := range cpuChildren(root, rootAbs) {
		n += a.leaveResctrl(c)
	}
	return n
}
