package yarnqos

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// What RestoreDisabled leaves undone, read from the node (the markers and
// files it restores from), for koordlet_yarn_restore_pending and
// /yarn/restore. Each returns -1 while the YARN hierarchy is not known.

// PendingCPUQoS counts what YARNCPUQoS made that is still there: container
// cgroups marked SchedIdleMarker (their tasks not all given SCHED_OTHER
// back) and the YARN root (unless kubelet-managed) with cpu.idle=1, the one
// cpu.idle koordlet-yarn writes (YARN and the kubelet never write it). A
// container cgroup's cpu.idle is not koordlet-yarn's: no restore would
// ever clear it, so it is not counted.
func (a *Applier) PendingCPUQoS() int {
	root, ok := a.root()
	if !ok {
		return -1
	}
	rootAbs := cpuDir(root)
	if rootAbs == "" {
		return 0
	}
	n := 0
	if !KubeletManaged(root) && idle(rootAbs) {
		n++
	}
	for _, name := range childDirs(rootAbs) {
		dir := filepath.Join(rootAbs, name)
		if marked(dir) {
			n++
		}
	}
	return n
}

// PendingMemoryQoS counts the container memory cgroups that still carry
// the prior Memory QoS values (MemoryQoSMarker): values not written back.
func (a *Applier) PendingMemoryQoS() int {
	return a.countChildren(memoryDir, func(dir string) bool { return len(readPrior(dir)) > 0 })
}

// PendingResctrl counts the container cpu cgroups marked ResctrlMarker:
// tasks koordlet moved into the resctrl BE group and has not moved back.
func (a *Applier) PendingResctrl() int {
	return a.countChildren(cpuDir, func(dir string) bool {
		_, err := unix.Getxattr(dir, ResctrlMarker, make([]byte, 8))
		return err == nil
	})
}

// countChildren counts the container cgroups under the YARN root's
// directory (controllerDir of the root) for which has holds: -1 while the
// hierarchy is not known, 0 without that controller.
func (a *Applier) countChildren(controllerDir func(string) string, has func(dir string) bool) int {
	root, ok := a.root()
	if !ok {
		return -1
	}
	rootAbs := controllerDir(root)
	if rootAbs == "" {
		return 0
	}
	n := 0
	for _, name := range childDirs(rootAbs) {
		if has(filepath.Join(rootAbs, name)) {
			n++
		}
	}
	return n
}

// root is the YARN hierarchy (relative), once known.
func (a *Applier) root() (string, bool) {
	if a.opts.Hierarchy == nil {
		return "", false
	}
	root := a.opts.Hierarchy()
	return root, root != ""
}

// idle reports whether the cpu cgroup dir (absolute) has cpu.idle=1.
func idle(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, system.CPUIdleName))
	return err == nil && strings.TrimSpace(string(b)) == "1"
}
