// Package cgtree removes cgroup directory trees for the tests, the NM
// emulator and the measurement commands: deepest first, killing the
// processes still inside, retrying while the kernel finishes them.
package cgtree

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Pids lists the processes in the cgroup directory dir.
func Pids(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// Kill sends SIGKILL to every process in the cgroup directory dir.
func Kill(dir string) {
	for _, pid := range Pids(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Remove removes dir and its descendant cgroups, deepest first, killing
// processes still inside. A missing dir is not an error.
func Remove(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var left []string
	for i := len(dirs) - 1; i >= 0; i-- {
		removed := false
		for attempt := 0; attempt < 100; attempt++ {
			Kill(dirs[i])
			if err := os.Remove(dirs[i]); err == nil || os.IsNotExist(err) {
				removed = true
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !removed {
			left = append(left, dirs[i])
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("could not remove cgroups %v", left)
	}
	return nil
}
