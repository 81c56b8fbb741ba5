package cgroupwatch

import "github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"

// Where the kernel tells a process its cgroup hierarchies (tests point
// them at fixtures).
var (
	selfCgroupFile = "/proc/self/cgroup"
	procCgroupFile = "/proc/cgroups"
)

// hierarchyID returns the id of the hierarchy serving controller c: 0 on
// the unified hierarchy (see cgroups.HierarchyIDFrom).
func hierarchyID(h cgroups.Hierarchy, c cgroups.Controller) (uint32, error) {
	return cgroups.HierarchyIDFrom(h, c, selfCgroupFile, procCgroupFile)
}
