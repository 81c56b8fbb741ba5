package nodebox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// markerXattr is the extended attribute the box sets on every kubepods
// directory it creates. It lives in the tree itself (cgroupfs keeps trusted.*
// attributes per directory), so a kubepods tree created by anything else — a
// kubelet, a container runtime, a later re-creation — never carries it,
// whatever files an earlier crashed run left in /run.
const markerXattr = "trusted.koordlet-yarn.nodebox"

// kubepodsNames are the top-level QoS cgroups of the kubelet's two drivers.
var kubepodsNames = []string{"kubepods", "kubepods.slice"}

// kubeletPodsDir holds one directory per pod on a kubelet's node.
const kubeletPodsDir = "/var/lib/kubelet/pods"

// setMarker marks dir as created by the box run token.
func setMarker(dir, token string) error {
	if err := unix.Setxattr(dir, markerXattr, []byte(token), 0); err != nil {
		return fmt.Errorf("mark %s as the box's: %w", dir, err)
	}
	return nil
}

// marker returns the box marker of dir, or "" when it has none.
func marker(dir string) string {
	buf := make([]byte, 256)
	n, err := unix.Getxattr(dir, markerXattr, buf)
	if err != nil || n <= 0 {
		return ""
	}
	return string(buf[:n])
}

// hostRoots are the directories under cgroupRoot where a kubepods tree can
// live: every mounted hierarchy (v1 controllers, the unified one).
func hostRoots(cgroupRoot string) []string {
	entries, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return nil
	}
	var roots []string
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		roots = append(roots, cgroupRoot) // cgroup v2: the root is the hierarchy
	}
	for _, e := range entries {
		p := filepath.Join(cgroupRoot, e.Name())
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			roots = append(roots, p)
		}
	}
	return roots
}

// kubepodsTrees lists the existing kubepods directories under cgroupRoot
// (once per hierarchy: co-mounted symlinks are resolved).
func kubepodsTrees(cgroupRoot string) []string {
	seen := map[string]bool{}
	var out []string
	for _, root := range hostRoots(cgroupRoot) {
		for _, name := range kubepodsNames {
			p := filepath.Join(root, name)
			real, err := filepath.EvalSymlinks(p)
			if err != nil || seen[real] {
				continue
			}
			if fi, err := os.Stat(real); err == nil && fi.IsDir() {
				seen[real] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// kubeletRunning reports the pid of a process named kubelet, or 0.
func kubeletRunning(procRoot string) int {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid := 0
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid <= 0 {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == "kubelet" {
			return pid
		}
	}
	return 0
}

// ErrKubernetesNode is wrapped by the error returned on a host that looks
// like a Kubernetes node.
var ErrKubernetesNode = errors.New("this host looks like a Kubernetes node; the node in a box runs only on a machine of its own (a CI or development VM)")

// checkNotKubernetesNode returns an error wrapping ErrKubernetesNode, with the
// evidence, when the host runs a kubelet, has pods in the kubelet's pod
// directory, or has a kubepods cgroup tree that the box did not mark.
func checkNotKubernetesNode(cgroupRoot, procRoot, podsDir string) error {
	if pid := kubeletRunning(procRoot); pid != 0 {
		return fmt.Errorf("%w: a kubelet process runs (pid %d)", ErrKubernetesNode, pid)
	}
	if entries, err := os.ReadDir(podsDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%w: %s has %d pod directories", ErrKubernetesNode, podsDir, len(entries))
	}
	for _, dir := range kubepodsTrees(cgroupRoot) {
		if marker(dir) == "" {
			return fmt.Errorf("%w: %s exists and was not created by the node in a box; refusing to touch it", ErrKubernetesNode, dir)
		}
	}
	return nil
}

// leftoverTrees returns the kubepods trees under cgroupRoot, all of which
// carry the box marker (checkNotKubernetesNode has passed): the remains of a
// box that crashed. With the box lock held no other box uses them.
func leftoverTrees(cgroupRoot string) []string { return kubepodsTrees(cgroupRoot) }
