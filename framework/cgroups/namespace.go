package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// Namespace translates the paths that /proc/<pid>/cgroup shows to koordlet
// into paths on the mounted hierarchy. In the host's cgroup namespace they
// are the same. Container runtimes give pods a private cgroup namespace by
// default on cgroup v2 hosts: /proc/<pid>/cgroup of another process then
// reads relative to koordlet's own cgroup ("0::/../../kubepods/…") while the
// mounted hierarchy (the host's /sys/fs/cgroup at --cgroup-root-dir) shows
// host paths. The namespace root is found once per hierarchy: koordlet's
// own path (/proc/self/cgroup) is looked up on the mount, and, when its
// cgroup.procs does not list koordlet, the mount is searched for the cgroup
// that does. A nil *Namespace translates nothing.
type Namespace struct {
	procRoot, cgroupRoot string
	v2                   bool
	self                 int

	mu    sync.Mutex
	roots map[string]nsRoot
}

type nsRoot struct {
	root string // the namespace root on the mount, relative ("" at the top)
	err  error
}

// maxSearchDirs bounds the search of a hierarchy for koordlet's cgroup.
const maxSearchDirs = 200000

// NewNamespace returns the translator for this process under the cgroup
// mount root (v2: the unified mount; v1: the directory of the controller
// mounts).
func NewNamespace(procRoot, cgroupRoot string, v2 bool) *Namespace {
	return &Namespace{procRoot: procRoot, cgroupRoot: cgroupRoot, v2: v2, self: os.Getpid(), roots: map[string]nsRoot{}}
}

// key is the hierarchy of a controller: "" on v2.
func (n *Namespace) key(ctrl Controller) string {
	if n.v2 {
		return ""
	}
	return ctrl.String()
}

// Root returns the namespace root of ctrl's hierarchy on the mount ("" in
// the host's namespace), or why it cannot be known.
func (n *Namespace) Root(ctrl Controller) (string, error) {
	if n == nil {
		return "", nil
	}
	k := n.key(ctrl)
	n.mu.Lock()
	defer n.mu.Unlock()
	if r, ok := n.roots[k]; ok {
		return r.root, r.err
	}
	root, err := n.find(k)
	n.roots[k] = nsRoot{root: root, err: err}
	switch {
	case err != nil:
		klog.Errorf("yarn: cannot place koordlet's cgroup namespace on the %s hierarchy (%v): checks of a process's cgroup will fail, so no process is signalled or moved", hierName(k), err)
	case root != "":
		klog.Infof("yarn: koordlet runs in a private cgroup namespace rooted at /%s on the %s hierarchy; /proc/<pid>/cgroup paths are read relative to it", root, hierName(k))
	}
	return root, err
}

func hierName(k string) string {
	if k == "" {
		return "unified"
	}
	return k
}

// Translate returns path p of ctrl's hierarchy, as /proc/<pid>/cgroup shows
// it to this process, relative to the mount root; false when the namespace
// root is unknown.
func (n *Namespace) Translate(ctrl Controller, p string) (string, bool) {
	root, err := n.Root(ctrl)
	if err != nil {
		return "", false
	}
	if root == "" {
		if strings.HasPrefix(p, "/..") {
			return "", false // a private namespace that could not be placed
		}
		return strings.TrimPrefix(p, "/"), true
	}
	return strings.TrimPrefix(filepath.Clean("/"+root+"/"+p), "/"), true
}

// mount returns the mount directory of hierarchy k, symlinks resolved: on
// cgroup v1 a co-mounted controller is usually a link to the real mount
// (cpu -> cpu,cpuacct), and a search that does not follow it finds nothing.
func (n *Namespace) mount(k string) string {
	m := n.cgroupRoot
	if k != "" {
		m = filepath.Join(n.cgroupRoot, k)
	}
	if r, err := filepath.EvalSymlinks(m); err == nil {
		return r
	}
	return m
}

// find locates the namespace root of hierarchy k. Without evidence of a
// private namespace (no /proc/self/cgroup line, or no cgroup on the mount
// listing koordlet — a fake root) the host's is assumed: a private one then
// shows other processes' paths as "/../…", which never match.
func (n *Namespace) find(k string) (string, error) {
	own, err := n.selfPath(k)
	if err != nil {
		klog.V(2).Infof("yarn: %v; taking /proc/<pid>/cgroup paths of the %s hierarchy as host paths", err, hierName(k))
		return "", nil
	}
	mount := n.mount(k)
	if n.lists(filepath.Join(mount, own)) {
		return "", nil // the path /proc/self/cgroup shows is the host's
	}
	// A private namespace: search the mount for the cgroup listing us.
	var found string
	seen := 0
	walkErr := filepath.WalkDir(mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if seen++; seen > maxSearchDirs {
			return errors.New("too many cgroups to search")
		}
		if n.lists(p) {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	if found == "" {
		if walkErr != nil {
			return "", walkErr
		}
		klog.V(2).Infof("yarn: pid %d is in no cgroup under %s; taking /proc/<pid>/cgroup paths of the %s hierarchy as host paths", n.self, mount, hierName(k))
		return "", nil
	}
	rel, err := filepath.Rel(mount, found)
	if err != nil {
		return "", err
	}
	// own is where we are relative to the namespace root: strip it.
	hostRel := strings.Trim(rel, "/")
	ownRel := strings.Trim(own, "/")
	if ownRel == "" || ownRel == "." {
		return hostRel, nil
	}
	if !strings.HasSuffix(hostRel, "/"+ownRel) {
		return "", fmt.Errorf("koordlet's cgroup %s on the mount does not end with its namespace path %s", hostRel, ownRel)
	}
	return strings.TrimSuffix(hostRel, "/"+ownRel), nil
}

// selfPath returns this process's path in hierarchy k from /proc/self/cgroup.
func (n *Namespace) selfPath(k string) (string, error) {
	b, err := os.ReadFile(filepath.Join(n.procRoot, "self", "cgroup"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if k == "" {
			if parts[0] == "0" && parts[1] == "" {
				return parts[2], nil
			}
			continue
		}
		for _, name := range strings.Split(parts[1], ",") {
			if name == k {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("no %s line in /proc/self/cgroup", hierName(k))
}

// lists reports whether dir's cgroup.procs lists this process.
func (n *Namespace) lists(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	want := strconv.Itoa(n.self)
	for _, f := range strings.Fields(string(b)) {
		if f == want {
			return true
		}
	}
	return false
}
