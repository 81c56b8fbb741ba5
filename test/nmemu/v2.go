package nmemu

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// defaultV2Controllers are what Hadoop 3.5's cgroup v2 handler enables:
// CGroupsV2HandlerImpl.updateEnabledControllersInHierarchy appends to the
// YARN hierarchy's cgroup.subtree_control every controller of its
// cgroup.controllers that CGroupsHandler.CGroupController marks valid on
// v2 (io, cpu, cpuset, memory; pids where the pids handler exists),
// whichever handlers are on.
var defaultV2Controllers = []string{"cpu", "cpuset", "io", "memory", "pids"}

// enableV2Controllers enables the configured controllers that the YARN
// hierarchy dir has in its cgroup.subtree_control, as Hadoop 3.5's v2
// handler does at start-up; none when the hierarchy has none (a hybrid
// host's cgroup2 mount).
func (nm *NM) enableV2Controllers(dir string) error {
	want := nm.cfg.V2Controllers
	if len(want) == 0 {
		want = defaultV2Controllers
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("read %s/cgroup.controllers: %w", dir, err)
	}
	var enable []string
	for _, c := range want {
		if slices.Contains(strings.Fields(string(avail)), c) {
			enable = append(enable, "+"+c)
		}
	}
	if len(enable) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644); err != nil {
		return fmt.Errorf("enable %s for the YARN containers in %s: %w", strings.Join(enable, " "), dir, err)
	}
	return nil
}
