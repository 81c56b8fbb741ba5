package cgroups

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// v2Names are the cgroup v2 names of the controllers whose interface files
// a container directory has only when its parent enables them. CPU and
// CPUAcct have none here: the container's directory is its membership (the
// killer, the scan) and its CPU usage (the base cpu.stat of every cgroup2
// directory) whatever is enabled; the CPU QoS files (cpu.idle, cpu.weight)
// come with the cpu controller and their appliers check for them.
var v2Names = [NumControllers]string{CPUSet: "cpuset", Memory: "memory", Blkio: "io"}

// V2Controllers says, on cgroup v2, which controllers the container
// directories below the YARN root have. Hadoop's v2 handler enables in the
// YARN root's cgroup.subtree_control only the controllers it manages: with
// yarn.nodemanager.resource.memory.enabled=false (Hadoop's default) a
// container directory has no memory files and its memory is charged to the
// nearest ancestor that has them — CPU-only YARN, as on cgroup v1.
//
// Membership (cgroup.procs) and CPU usage (the base cpu.stat) are the
// container directory's whatever is enabled, so CPU and CPUAcct are always
// the container's own; Memory, CPUSet and Blkio are its own only when
// enabled, else they refer to the ancestor that is charged (not owned).
type V2Controllers struct {
	// chargedTo is, for each controller not enabled for the containers,
	// the directory (relative to the mount) that holds their charges; ""
	// for an enabled controller.
	chargedTo [NumControllers]string
	enabled   [NumControllers]bool
}

// AllV2Controllers treats every controller as enabled for the containers:
// the containers' directories are every controller's.
func AllV2Controllers() V2Controllers {
	var v V2Controllers
	for c := range v.enabled {
		v.enabled[c] = true
	}
	return v
}

// ReadV2Controllers reads the controllers enabled for the container
// directories of h (cgroup v2) from the YARN root's cgroup.subtree_control,
// and for each one not enabled, the nearest ancestor charged in its place.
// A YARN root whose cgroup.subtree_control cannot be read (not created yet,
// or not a cgroup2 file system) is reported with every controller enabled,
// the containers' directories being theirs in every controller, and ok
// false.
func (h Hierarchy) ReadV2Controllers() (v V2Controllers, ok bool) {
	enabledIn := map[string][]string{}
	subtree := func(rel string) ([]string, bool) {
		if f, seen := enabledIn[rel]; seen {
			return f, true
		}
		b, err := os.ReadFile(filepath.Join(h.CgroupRoot, rel, "cgroup.subtree_control"))
		if err != nil {
			return nil, false
		}
		f := strings.Fields(string(b))
		enabledIn[rel] = f
		return f, true
	}
	root := path.Clean(h.Dir)
	names, found := subtree(root)
	if !found {
		return AllV2Controllers(), false
	}
	for c, name := range v2Names {
		if name == "" || slices.Contains(names, name) {
			v.enabled[c] = true
			continue
		}
		v.chargedTo[c] = chargedAncestor(root, name, subtree)
	}
	return v, true
}

// chargedAncestor returns the nearest directory from dir upwards whose
// parent enables controller name (so dir has the controller's files and
// holds the charges of its descendants without them); "" is the root.
func chargedAncestor(dir, name string, subtree func(string) ([]string, bool)) string {
	for dir != "." && dir != "/" && dir != "" {
		parent := path.Dir(dir)
		if names, ok := subtree(parent); ok && slices.Contains(names, name) {
			return dir
		}
		dir = parent
	}
	return ""
}

// Enabled reports whether container directories have controller c's files.
func (v V2Controllers) Enabled(c Controller) bool { return v.enabled[c] }

// Refs returns a v2 container's references: own dir for the enabled
// controllers, the charged ancestor (not owned) for the others.
func (v V2Controllers) Refs(own string) Cgroups {
	var cg Cgroups
	for c := range cg {
		if v.enabled[c] {
			cg[c] = Ref{Dir: own, Owned: true}
		} else {
			cg[c] = Ref{Dir: v.chargedTo[c]}
		}
	}
	return cg
}
