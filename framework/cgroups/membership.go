package cgroups

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// InCgroup reports whether /proc/<id>/cgroup (id a pid or a tid) puts the
// task in dir (relative to the mount root) for controller ctrl (v1), or on
// the unified hierarchy (v2). A task that is gone is in no cgroup.
func InCgroup(procRoot string, id int, ctrl Controller, dir string, v2 bool) bool {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(id), "cgroup"))
	if err != nil {
		return false
	}
	return cgroupFileHas(string(b), ctrl, dir, v2, nil)
}

// Contains reports whether task id (a pid or a tid) is in dir (relative to
// the mount root) for controller ctrl, reading /proc/<id>/cgroup through
// h's cgroup namespace (see Namespace): it holds in koordlet's own
// namespace and in a private one.
func (h Hierarchy) Contains(id int, ctrl Controller, dir string) bool {
	b, err := os.ReadFile(filepath.Join(h.ProcRoot, strconv.Itoa(id), "cgroup"))
	if err != nil {
		return false
	}
	return cgroupFileHas(string(b), ctrl, dir, h.V2, h.NS)
}

// cgroupFileHas reports whether the content of a /proc/<id>/cgroup file
// puts the task in dir for ctrl (v1) or on the unified hierarchy (v2), the
// paths read through ns.
func cgroupFileHas(content string, ctrl Controller, dir string, v2 bool, ns *Namespace) bool {
	for _, line := range strings.Split(content, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 {
			if parts[0] == "0" && parts[1] == "" {
				path, ok := ns.Translate(ctrl, parts[2])
				return ok && path == dir
			}
			continue
		}
		for _, name := range strings.Split(parts[1], ",") {
			if name == ctrl.String() {
				path, ok := ns.Translate(ctrl, parts[2])
				return ok && path == dir
			}
		}
	}
	return false
}

// TaskStartTicks returns the start time of task id (a pid or a tid) in
// clock ticks since boot, from procRoot/<id>/stat: with the id, it names
// one task for as long as the machine runs.
func TaskStartTicks(procRoot string, id int) (int64, bool) {
	st, err := TaskStat(procRoot, id)
	if err != nil || st.Starttime > math.MaxInt64 {
		return 0, false
	}
	return int64(st.Starttime), true
}

// PathOf returns task id's cgroup in controller ctrl (v1) or on the unified
// hierarchy (v2), relative to the mount root, read from /proc/<id>/cgroup
// through h's cgroup namespace; false when the task is gone or the path
// cannot be placed.
func (h Hierarchy) PathOf(id int, ctrl Controller) (string, bool) {
	b, err := os.ReadFile(filepath.Join(h.ProcRoot, strconv.Itoa(id), "cgroup"))
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if h.V2 {
			if parts[0] == "0" && parts[1] == "" {
				return h.NS.Translate(ctrl, parts[2])
			}
			continue
		}
		for _, name := range strings.Split(parts[1], ",") {
			if name == ctrl.String() {
				return h.NS.Translate(ctrl, parts[2])
			}
		}
	}
	return "", false
}
