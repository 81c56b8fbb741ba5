package nodebox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CgroupRoot is the host cgroup v1 mount root the box uses.
const CgroupRoot = "/sys/fs/cgroup"

// controllers are the cgroup v1 controllers the box builds its kubepods
// hierarchy in.
var controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "blkio"}

// makeCgroup creates rel in every controller; in cpuset each new level
// inherits its parent's cpus and mems so that tasks can join it.
func makeCgroup(rel string) error {
	for _, ctrl := range controllers {
		base := filepath.Join(CgroupRoot, ctrl)
		cur := base
		for _, part := range strings.Split(rel, "/") {
			parent := cur
			cur = filepath.Join(cur, part)
			if err := os.Mkdir(cur, 0o755); err != nil && !os.IsExist(err) {
				return fmt.Errorf("create cgroup %s: %w", cur, err)
			}
			if ctrl == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					if b, err := os.ReadFile(filepath.Join(cur, f)); err == nil && strings.TrimSpace(string(b)) != "" {
						continue
					}
					v, err := os.ReadFile(filepath.Join(parent, f))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(cur, f), v, 0o644); err != nil {
						return fmt.Errorf("init %s/%s: %w", cur, f, err)
					}
				}
			}
		}
	}
	return nil
}

// movePid moves pid into rel in every controller.
func movePid(pid int, rel string) error {
	for _, ctrl := range controllers {
		p := filepath.Join(CgroupRoot, ctrl, rel, "cgroup.procs")
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("move pid %d to %s: %w", pid, p, err)
		}
	}
	return nil
}

// removeCgroupTree removes rel and its children in every controller, killing
// processes still inside.
func removeCgroupTree(rel string) {
	for _, ctrl := range controllers {
		root := filepath.Join(CgroupRoot, ctrl, rel)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			for attempt := 0; attempt < 100; attempt++ {
				if b, err := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs")); err == nil {
					for _, f := range strings.Fields(string(b)) {
						if pid, err := strconv.Atoi(f); err == nil {
							_ = syscall.Kill(pid, syscall.SIGKILL)
						}
					}
				}
				if err := os.Remove(dirs[i]); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}
