// Package kerneltest helps tests that run against the real kernel: real
// cgroup v1 directories and real processes, all removed when the test ends.
// Tests using it skip, with the reason, where the kernel or the privileges
// do not allow them.
package kerneltest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
)

// CgroupRoot is the host cgroup mount root.
const CgroupRoot = "/sys/fs/cgroup"

// RequireCgroupV1 skips t unless it runs as root on a host whose cgroup v1
// controllers are mounted and writable.
func RequireCgroupV1(t testing.TB, controllers ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "real-kernel test: needs root to create cgroups")
	}
	if _, err := os.Stat(filepath.Join(CgroupRoot, "cgroup.controllers")); err == nil {
		Skip(t, "real-kernel test: needs cgroup v1, this host mounts cgroup v2 at "+CgroupRoot)
	}
	for _, c := range controllers {
		dir := filepath.Join(CgroupRoot, c)
		probe := filepath.Join(dir, fmt.Sprintf("koordlet-yarn-probe-%d", os.Getpid()))
		if err := os.Mkdir(probe, 0o755); err != nil {
			Skipf(t, "real-kernel test: cgroup v1 controller %s is not writable: %v", c, err)
		}
		_ = os.Remove(probe)
	}
}

// RemoveCgroupTree removes a cgroup directory and its descendants, killing
// processes still inside; failures are test errors.
func RemoveCgroupTree(t testing.TB, dir string) {
	if err := cgtree.Remove(dir); err != nil {
		t.Errorf("%v", err)
	}
}

// Pids lists the processes in the cgroup directory dir.
func Pids(dir string) []int { return cgtree.Pids(dir) }

// UseHostRoots points koordlet's system configuration at the host's cgroup
// and proc roots for the test, and restores it afterwards (koordinator's
// fake-root helper leaves it pointing at a removed temp dir).
func UseHostRoots(t testing.TB) {
	old := *system.Conf
	t.Cleanup(func() { *system.Conf = old })
	system.Conf.CgroupRootDir = CgroupRoot + "/"
	system.Conf.ProcRootDir = "/proc/"
}

// UniqueRoot returns a fresh relative cgroup name for one test.
func UniqueRoot(t testing.TB) string {
	return fmt.Sprintf("koordlet-yarn-test-%d-%d", os.Getpid(), time.Now().UnixNano())
}

// MakeCgroup creates <CgroupRoot>/<controller>/<rel> (and its missing
// parents) and registers the removal of the levels it created, children
// first, when the test ends; levels that existed before are never removed.
// It returns the absolute path.
func MakeCgroup(t testing.TB, controller, rel string) string {
	t.Helper()
	dir := filepath.Join(CgroupRoot, controller, rel)
	var created cgtree.Tracker
	err := created.MkdirAll(dir)
	t.Cleanup(func() {
		if err := created.RemoveAll(); err != nil {
			t.Errorf("%v", err)
		}
	})
	if err != nil {
		t.Fatalf("create cgroup %s: %v", dir, err)
	}
	return dir
}

// Process is a real process started by Start.
type Process struct {
	Cmd   *exec.Cmd
	stdin io.WriteCloser
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Release lets a process started with a gate (see Start) continue.
func (p *Process) Release() error {
	_, err := p.stdin.Write([]byte("go\n"))
	return err
}

// Start runs "sh -c script" held at a gate (the script starts with
// "read gate"), moves it into each cgroup dir, and returns it. Call Release
// to let it run: every process it forks is then born inside the cgroups.
// The process is killed when the test ends.
func Start(t testing.TB, script string, cgroupDirs ...string) *Process {
	t.Helper()
	cmd := exec.Command("sh", "-c", "read gate; "+script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", script, err)
	}
	p := &Process{Cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for _, dir := range cgroupDirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatalf("move pid %d into %s: %v", cmd.Process.Pid, dir, err)
		}
	}
	return p
}

// SelfCgroup returns this process's cgroup (relative, no leading slash) in
// a v1 controller, from /proc/self/cgroup.
func SelfCgroup(t testing.TB, controller string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return strings.TrimPrefix(parts[2], "/")
			}
		}
	}
	t.Fatalf("controller %s not in /proc/self/cgroup", controller)
	return ""
}

// StartPlain runs "sh -c script" without moving it anywhere and returns its
// pid; it is killed when the test ends.
func StartPlain(t testing.TB, script string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", script, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}
