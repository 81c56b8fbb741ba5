package yarnmemcg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// FromMarker is the trusted xattr on a leaf koordlet made that records the
// memory cgroup (relative to the memory mount) its first process came from:
// the NodeManager pod's. Turning YARNMemoryCgroup off moves the leaf's
// processes back there and removes the leaf.
const FromMarker = cgroups.MemcgFromMarker

// recordFrom records from on leaf once.
func recordFrom(leaf, from string) {
	if _, err := unix.Getxattr(leaf, FromMarker, make([]byte, 8)); err == nil {
		return
	}
	if err := unix.Setxattr(leaf, FromMarker, []byte(from), 0); err != nil {
		klog.V(4).Infof("yarn: record %s on %s: %v", FromMarker, leaf, err)
	}
}

// RestoreDisabled, with YARNMemoryCgroup off, moves the processes of every
// leaf koordlet made (marked) back to the memory cgroup they came from
// (FromMarker) and removes the leaves, then the hierarchy's memory root if
// koordlet made it and it is empty. Each process is pinned (pidfd), checked
// in the leaf before, and verified after. Containers keep running: nothing
// is frozen or killed. It returns how many processes it moved.
func (a *Applier) RestoreDisabled() int {
	if features.Enabled(features.YARNMemoryCgroup) {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.hierarchy()
	if !ok {
		return 0
	}
	root := h.RootDir(cgroups.Memory)
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	moved, removed := 0, 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "container_") {
			continue
		}
		leaf := filepath.Join(root, e.Name())
		if m, err := marked(leaf); err != nil || !m {
			continue // YARN's: never touched
		}
		from, ok := cgroups.RecordedOrigin(leaf)
		if !ok || !cgroups.ValidOrigin(from, h.Dir) {
			if len(kernelPids(leaf)) > 0 {
				klog.Warningf("yarn: YARNMemoryCgroup is off but the memory cgroup %s koordlet made does not record where its processes came from; they stay", leaf)
				continue
			}
		}
		rel := h.ContainerRelDir(e.Name())
		for _, pid := range kernelPids(leaf) {
			if a.moveBack(h, rel, from, pid) {
				moved++
			}
		}
		if err := unix.Rmdir(leaf); err == nil {
			removed++
		} else if !errors.Is(err, unix.ENOENT) {
			klog.V(2).Infof("yarn: YARNMemoryCgroup is off: memory cgroup %s not removed yet: %v", leaf, err)
		}
	}
	if m, err := marked(root); err == nil && m {
		_ = unix.Rmdir(root) // only when empty
	}
	if moved > 0 || removed > 0 {
		klog.Infof("yarn: YARNMemoryCgroup is off: %d processes moved back to the memory cgroups they came from, %d memory cgroups koordlet made removed", moved, removed)
	}
	return moved
}

// moveBack moves pid from its leaf (own, relative) to back (relative),
// pinned and verified (cgroups.Move); a number reused around the write is
// sent back where its new task was, and a failure to do so is logged.
func (a *Applier) moveBack(h cgroups.Hierarchy, own, back string, pid int) bool {
	p, err := cgroups.Pin(h.ProcRoot, pid)
	if err != nil {
		return false
	}
	defer p.Release()
	r, err := cgroups.Move(h, p, []cgroups.Step{{Ctrl: cgroups.Memory, From: own, To: back}}, a.write)
	if err != nil {
		klog.Warningf("yarn: YARNMemoryCgroup is off: move %d out of %s: %v", pid, own, err)
	}
	return r == cgroups.MoveMoved
}
