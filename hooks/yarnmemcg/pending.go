package yarnmemcg

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// RestorePending counts the memory cgroups koordlet made (marked Marker) that are
// still there, the YARN hierarchy's memory root among them when koordlet
// made it: what RestoreDisabled has not moved back and removed yet (for
// koordlet_yarn_restore_pending and /yarn/restore). -1 while the hierarchy
// is not known; 0 on cgroup v2, where none is made.
func (a *Applier) RestorePending() int {
	if a.opts.Hierarchy == nil {
		return -1
	}
	h, ok := a.opts.Hierarchy()
	if !ok {
		return -1
	}
	if h.V2 {
		return 0
	}
	root := h.RootDir(cgroups.Memory)
	n := 0
	if m, err := marked(root); err == nil && m {
		n++
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "container_") {
			continue
		}
		if m, err := marked(filepath.Join(root, e.Name())); err == nil && m {
			n++
		}
	}
	return n
}
