package v2guest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestKilledRunnerLeavesNoGuest boots a real guest through the run command,
// SIGKILLs the runner (as a killed test run would be) and expects its qemu
// gone within seconds (it dies with the runner's thread), and its record
// removed by the next ReapOrphans.
func TestKilledRunnerLeavesNoGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a guest")
	}
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "the guest's shares need root")
	}
	if _, err := exec.LookPath(QEMU); err != nil {
		kerneltest.Skip(t, QEMU+" is not installed (make deps-v2)")
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		kerneltest.Skip(t, "this is a cgroup v2 host (the guest itself?): no guest in a guest")
	}
	top, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "run")
	build := exec.Command("go", "build", "-o", bin, "./test/v2guest/run")
	build.Dir = top
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	runner := exec.Command(bin, "-work", filepath.Join(top, "build/v2guest"), "-memory", "512", "-timeout", "10m", "--", "/bin/sleep", "600")
	runner.Dir = top
	var runnerOut strings.Builder
	runner.Stdout, runner.Stderr = &runnerOut, &runnerOut
	require.NoError(t, runner.Start())
	runnerDone := make(chan struct{})
	go func() { _ = runner.Wait(); close(runnerDone) }()
	t.Cleanup(func() {
		_ = runner.Process.Kill()
		<-runnerDone
	})

	// The runner's record names its qemu once qemu has started.
	var rec string
	var qemu int
	require.Eventually(t, func() bool {
		select {
		case <-runnerDone:
			return true // said below
		default:
		}
		entries, _ := os.ReadDir(recordsDir)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(recordsDir, e.Name(), "owner"))
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) == 3 && f[0] == itoa(runner.Process.Pid) {
				rec, qemu = filepath.Join(recordsDir, e.Name()), atoi(f[2])
				return true
			}
		}
		return false
	}, 2*time.Minute, 100*time.Millisecond, "the runner starts qemu and records it")
	select {
	case <-runnerDone:
		if qemu == 0 {
			t.Fatalf("the runner ended before it started qemu:\n%s", runnerOut.String())
		}
	default:
	}
	time.Sleep(2 * time.Second) // the guest boots
	require.NoError(t, syscall.Kill(qemu, 0), "qemu runs")

	require.NoError(t, runner.Process.Signal(syscall.SIGKILL))
	<-runnerDone
	assert.Eventually(t, func() bool { return gone(qemu) }, 10*time.Second, 50*time.Millisecond, "qemu dies with its runner")
	require.NoError(t, ReapOrphans(os.Stderr))
	assert.NoDirExists(t, rec, "the dead runner's record is removed")
}

// gone reports whether pid has ended (a zombie not yet reaped by whoever
// inherited it counts as ended).
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
