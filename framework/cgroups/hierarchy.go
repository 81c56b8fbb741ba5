package cgroups

import (
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// DefaultYARNDirName is the name of the YARN hierarchy below the besteffort
// QoS cgroup when no hierarchy is configured.
const DefaultYARNDirName = "hadoop-yarn"

// Hierarchy locates the YARN cgroup hierarchy on this node.
type Hierarchy struct {
	// CgroupRoot is the cgroup mount root (koordlet's --cgroup-root-dir).
	CgroupRoot string
	// ProcRoot is the proc mount (koordlet's --proc-root-dir).
	ProcRoot string
	// V2 is true on the unified (cgroup v2) hierarchy.
	V2 bool
	// Dir is the YARN hierarchy relative to a controller's mount root,
	// e.g. kubepods/besteffort/hadoop-yarn. Clean, relative, no "..".
	Dir string
	// NS reads /proc/<pid>/cgroup paths through koordlet's cgroup
	// namespace (nil: the host's).
	NS *Namespace
}

// ResolveHierarchy returns the YARN hierarchy of this node from koordlet's
// system configuration (cgroup root, proc root, cgroup version and driver).
// override is the value of yarn.nodemanager.linux-container-executor.cgroups.hierarchy
// (relative to the controller mounts; a leading slash is allowed); when empty
// the hierarchy is "hadoop-yarn" below the besteffort QoS cgroup of the
// node's cgroup driver (kubepods/besteffort/hadoop-yarn for cgroupfs,
// kubepods.slice/kubepods-besteffort.slice/hadoop-yarn for systemd).
func ResolveHierarchy(override string) (Hierarchy, error) {
	dir := filepath.Join(koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort), DefaultYARNDirName)
	if override != "" {
		clean, err := CleanHierarchyDir(override)
		if err != nil {
			return Hierarchy{}, err
		}
		dir = clean
	}
	h := Hierarchy{
		CgroupRoot: system.Conf.CgroupRootDir,
		ProcRoot:   system.Conf.ProcRootDir,
		V2:         system.GetCurrentCgroupVersion() == system.CgroupVersionV2,
		Dir:        dir,
	}
	h.NS = NewNamespace(h.ProcRoot, h.CgroupRoot, h.V2)
	// Place koordlet's cgroup namespace now, so that start-up says whether
	// it is private (and where) or cannot be placed.
	for _, c := range []Controller{CPU, Memory} {
		_, _ = h.NS.Root(c)
	}
	return h, nil
}

// CleanHierarchyDir validates a configured YARN hierarchy and returns it
// relative to the controller mount root.
func CleanHierarchyDir(s string) (string, error) {
	trimmed := strings.Trim(strings.TrimSpace(s), "/")
	if trimmed == "" {
		return "", fmt.Errorf("invalid YARN cgroup hierarchy %q: empty (the cgroup root itself is never YARN's)", s)
	}
	for _, part := range strings.Split(trimmed, "/") {
		if part == ".." || part == "." || part == "" {
			return "", fmt.Errorf("invalid YARN cgroup hierarchy %q: must be a plain relative path without '.', '..' or empty components", s)
		}
	}
	return trimmed, nil
}

// mountDir returns the mount directory of controller c.
func (h Hierarchy) mountDir(c Controller) string {
	if h.V2 {
		return h.CgroupRoot
	}
	return filepath.Join(h.CgroupRoot, c.String())
}

// RootDir returns the absolute YARN hierarchy directory in controller c.
func (h Hierarchy) RootDir(c Controller) string {
	return filepath.Join(h.mountDir(c), h.Dir)
}

// ContainerRelDir returns the container's own cgroup relative to the mount
// root. name must be a canonical container id.
func (h Hierarchy) ContainerRelDir(name string) string {
	return h.Dir + "/" + name
}

// AbsDir returns the absolute directory of a cgroup dir relative to
// controller c's mount root.
func (h Hierarchy) AbsDir(c Controller, rel string) string {
	return filepath.Join(h.mountDir(c), rel)
}

// String describes the hierarchy for logs.
func (h Hierarchy) String() string {
	v := "v1"
	if h.V2 {
		v = "v2"
	}
	return fmt.Sprintf("%s (cgroup %s under %s)", h.Dir, v, h.CgroupRoot)
}

// OutsideBestEffort reports whether the YARN hierarchy dir is not below the
// besteffort QoS cgroup of koordlet's cgroup driver, so that the besteffort
// cgroup's limits and usage do not cover the YARN containers' own cgroups.
func OutsideBestEffort(dir string) bool {
	be := filepath.Clean(koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort))
	return dir != "" && !strings.HasPrefix(filepath.Clean(dir)+"/", be+"/")
}
