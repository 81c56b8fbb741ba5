package yarnadopt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// Marker is the trusted xattr on every cgroup directory koordlet makes for
// a YARN container (and on the YARN hierarchy when koordlet made it): a
// directory without it is YARN's or someone else's and is never removed.
const Marker = cgroups.ContainerCgroupMarker

const markerValue = cgroups.MarkerValue

// leafControllers are the controllers a container's cgroup is made in: on
// cgroup v1 cpu, cpuacct and memory (what the LinuxContainerExecutor makes
// with its CPU and memory handlers); on v2 one unified directory (CPU
// stands for it).
func leafControllers(h cgroups.Hierarchy) []cgroups.Controller {
	if h.V2 {
		return []cgroups.Controller{cgroups.CPU}
	}
	return []cgroups.Controller{cgroups.Memory, cgroups.CPU, cgroups.CPUAcct}
}

// V2Controllers are the controllers enabled for the containers on the YARN
// hierarchy (its cgroup.subtree_control) on cgroup v2, those the hierarchy
// has: Hadoop 3.5's v2 handler's (cpu, memory, io, pids) and cpuset, whose
// cpuset.cpus.effective koordlet's BE collectors read in every container.
var V2Controllers = []string{"cpu", "cpuset", "io", "memory", "pids"}

// leafCtrls are the leaf controllers, one per distinct hierarchy: a
// co-mounted cpu,cpuacct mount (symlinks to one directory) is one.
func leafCtrls(h cgroups.Hierarchy) []cgroups.Controller {
	seen := map[string]bool{}
	var out []cgroups.Controller
	for _, c := range leafControllers(h) {
		mount := h.AbsDir(c, "")
		if r, err := filepath.EvalSymlinks(mount); err == nil {
			mount = r
		}
		if !seen[mount] {
			seen[mount] = true
			out = append(out, c)
		}
	}
	return out
}

// leafDirs returns the container's directories, one per leafCtrls entry.
func leafDirs(h cgroups.Hierarchy, name string) (dirs []string, ctrls []cgroups.Controller) {
	ctrls = leafCtrls(h)
	for _, c := range ctrls {
		dirs = append(dirs, h.AbsDir(c, h.ContainerRelDir(name)))
	}
	return dirs, ctrls
}

// marked reports whether dir carries the marker; the error is the stat's.
func marked(dir string) (bool, error) { return cgroups.Marked(dir, Marker, markerValue) }

// mkdirMarked makes dir and marks it; a directory that cannot be marked is
// removed again. exists reports a directory that was there already.
func mkdirMarked(dir string) (exists bool, err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return true, nil
		}
		return false, err
	}
	if err := unix.Setxattr(dir, Marker, []byte(markerValue), 0); err != nil {
		_ = unix.Rmdir(dir)
		return false, fmt.Errorf("mark %s (xattr %s): %w; without a marker koordlet could not tell its cgroups from YARN's, so it makes none", dir, Marker, err)
	}
	return false, nil
}

// errNotOurs: the container's directory exists without the marker: YARN
// (or someone) made it, and koordlet neither fills nor removes it.
var errNotOurs = errors.New("exists and was not made by koordlet")

// ensureLeaf makes the container's cgroup in every leaf controller (and the
// YARN hierarchy where it is missing, marked). On v2 it enables
// V2Controllers on the hierarchy for its children first, each on its own:
// one that is not handed down or cannot be enabled is told to say (once
// per key, by the caller; nil: not said) and the others are enabled all
// the same. It returns the directories.
func ensureLeaf(h cgroups.Hierarchy, name string, say func(key, msg string)) ([]string, error) {
	dirs, ctrls := leafDirs(h, name)
	for i, d := range dirs {
		root := h.RootDir(ctrls[i])
		if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(filepath.Dir(root)); err != nil {
				return nil, fmt.Errorf("the parent of the YARN hierarchy %s: %w", root, err)
			}
			if _, err := mkdirMarked(root); err != nil {
				return nil, fmt.Errorf("create the YARN hierarchy: %w", err)
			}
		}
		if h.V2 {
			if err := enableV2(root, say); err != nil {
				return nil, err
			}
		}
		exists, err := mkdirMarked(d)
		if err != nil {
			return nil, fmt.Errorf("create the container's cgroup: %w", err)
		}
		if exists {
			if m, err := marked(d); err != nil || !m {
				return nil, fmt.Errorf("%s: %w", d, errNotOurs)
			}
		}
	}
	return dirs, nil
}

// writeSubtree writes one "+ctrl" to a cgroup.subtree_control (tests
// inject a failing one).
var writeSubtree = func(path, ctrl string) error { return os.WriteFile(path, []byte("+"+ctrl), 0) }

// enableV2 enables the V2Controllers the hierarchy root has for its
// children, each on its own: writing "+ctrl" is idempotent, and a
// controller the parent does not hand down, or whose write fails, is said
// (say, keyed by controller) and skipped: the containers get their cgroup
// without it. The error is only for a root whose files cannot be read.
func enableV2(root string, say func(key, msg string)) error {
	if say == nil {
		say = func(string, string) {}
	}
	avail, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("read %s/cgroup.controllers: %w", root, err)
	}
	on, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("read %s/cgroup.subtree_control: %w", root, err)
	}
	have := map[string]bool{}
	for _, c := range strings.Fields(string(avail)) {
		have[c] = true
	}
	enabled := map[string]bool{}
	for _, c := range strings.Fields(string(on)) {
		enabled[c] = true
	}
	for _, c := range V2Controllers {
		switch {
		case enabled[c]:
		case !have[c]:
			say("missing:"+c, fmt.Sprintf("yarn: the %s controller is not handed down to the YARN hierarchy %s (its parent's cgroup.subtree_control): the containers' cgroups have no %s files", c, root, c))
		default:
			if err := writeSubtree(filepath.Join(root, "cgroup.subtree_control"), c); err != nil {
				say("failed:"+c, fmt.Sprintf("yarn: enable %s for the containers of %s: %v; their cgroups are made without it", c, root, err))
			}
		}
	}
	return nil
}

// removeLeaf removes the container's marked directories that hold no
// process; it reports whether none is left. A directory without the
// marker is never removed.
func removeLeaf(h cgroups.Hierarchy, name string) (bool, error) {
	dirs, _ := leafDirs(h, name)
	left := false
	var errs []error
	for _, d := range dirs {
		m, err := marked(d)
		if err != nil || !m {
			continue // gone, or not ours
		}
		if err := unix.Rmdir(d); err != nil {
			left = true
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	return !left, errors.Join(errs...)
}

// ourLeaves lists the container names below the hierarchy whose directory
// (in the first leaf controller) carries the marker.
func ourLeaves(h cgroups.Hierarchy) []string {
	root := h.RootDir(leafControllers(h)[0])
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "container_") {
			continue
		}
		if m, err := marked(filepath.Join(root, e.Name())); err == nil && m {
			out = append(out, e.Name())
		}
	}
	return out
}
