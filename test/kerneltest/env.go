package kerneltest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// StartEnv runs "sleep 300" with exactly the environment env (in that
// order, as execve gets it; nil means an empty one), as the user cred when
// not nil, moves it into each cgroup dir and returns its pid once its
// environ is readable (execve sets it up after the point where exec.Cmd's
// Start returns). It is killed when the test ends.
func StartEnv(t testing.TB, env []string, cred *syscall.Credential, cgroupDirs ...string) int {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sleep, "300")
	cmd.Env = append([]string{}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep with %d environment entries: %v", len(env), err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	cmdline := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "cmdline")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		// cmdline and environ are published together, at the end of execve.
		if b, err := os.ReadFile(cmdline); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: no cmdline 5 s after exec", cmd.Process.Pid)
		}
	}
	for _, dir := range cgroupDirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatalf("move pid %d into %s: %v", cmd.Process.Pid, dir, err)
		}
	}
	return cmd.Process.Pid
}
