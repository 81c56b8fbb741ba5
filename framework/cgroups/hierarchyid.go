package cgroups

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// HierarchyID returns the id of the cgroup hierarchy serving controller c
// (see HierarchyIDFrom), from /proc/self/cgroup and /proc/cgroups.
func HierarchyID(h Hierarchy, c Controller) (uint32, error) {
	return HierarchyIDFrom(h, c, "/proc/self/cgroup", "/proc/cgroups")
}

// HierarchyIDFrom returns the id of the cgroup hierarchy serving controller c:
// 0 on the unified hierarchy (cgroup v2's default root is hierarchy 0), else
// the id the kernel gives c's v1 hierarchy. Co-mounted controllers
// (cpu,cpuacct) share one id.
// The kernel tells a process its hierarchies in selfCgroupFile
// (/proc/self/cgroup: "<hierarchy id>:<controller>[,...]:<path>", "0::<path>"
// for the unified hierarchy), else in procCgroupFile (/proc/cgroups:
// "<controller> <hierarchy id> <cgroups> <enabled>"). Hierarchy ids are
// global: a cgroup namespace or a container changes the paths, not the ids.
func HierarchyIDFrom(h Hierarchy, c Controller, selfCgroupFile, procCgroupFile string) (uint32, error) {
	if h.V2 {
		return 0, nil
	}
	name := c.String()
	var errs []string
	if b, err := os.ReadFile(selfCgroupFile); err != nil {
		errs = append(errs, err.Error())
	} else if id, ok := idFromSelfCgroup(b, name); ok {
		return id, nil
	}
	if b, err := os.ReadFile(procCgroupFile); err != nil {
		errs = append(errs, err.Error())
	} else if id, ok := idFromProcCgroups(b, name); ok {
		return id, nil
	}
	if len(errs) > 0 {
		return 0, fmt.Errorf("hierarchy of cgroup controller %s: %s", name, strings.Join(errs, "; "))
	}
	return 0, fmt.Errorf("cgroup controller %s is in no v1 hierarchy (%s, %s)", name, selfCgroupFile, procCgroupFile)
}

func idFromSelfCgroup(b []byte, controller string) (uint32, bool) {
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				id, err := strconv.ParseUint(parts[0], 10, 32)
				if err != nil || id == 0 {
					return 0, false
				}
				return uint32(id), true
			}
		}
	}
	return 0, false
}

func idFromProcCgroups(b []byte, controller string) (uint32, bool) {
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != controller {
			continue
		}
		id, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil || id == 0 { // 0: bound to the unified hierarchy, or not mounted
			return 0, false
		}
		return uint32(id), true
	}
	return 0, false
}
