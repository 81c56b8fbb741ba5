package cgroups

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// signalTarget starts a child that runs until signalled; the returned channel
// closes when it has been reaped.
func signalTarget(t *testing.T) (int, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return cmd.Process.Pid, done
}

func waitGone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the signalled process did not exit")
	}
}

func TestPinnedSignal(t *testing.T) {
	threadPidfd := func(pid, flags int) (int, error) { return unix.PidfdOpen(pid, flags) }
	beforeLinux69 := func(pid, flags int) (int, error) {
		if flags&pidfdThread != 0 {
			return -1, unix.EINVAL
		}
		return unix.PidfdOpen(pid, flags)
	}
	for _, tc := range []struct {
		name string
		open func(pid, flags int) (int, error)
	}{
		{"this kernel's pidfd", threadPidfd},
		{"a kernel before 6.9: a process pidfd", beforeLinux69},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer SetPidfdOpen(tc.open)()
			pid, done := signalTarget(t)
			p, err := Pin("/proc", pid)
			require.NoError(t, err)
			defer p.Release()
			require.True(t, p.ByPidfd())
			require.NoError(t, p.Signal(unix.SIGTERM))
			waitGone(t, done)
			assert.ErrorIs(t, p.Signal(unix.SIGTERM), unix.ESRCH, "the pinned process is gone: its number is never signalled again")
		})
	}
}

func TestPinnedSignalWithoutPidfd(t *testing.T) {
	defer SetPidfdOpen(nil)()
	pid, done := signalTarget(t)
	p, err := Pin("/proc", pid)
	require.NoError(t, err)
	defer p.Release()
	assert.False(t, p.ByPidfd(), "no pidfd_open: pinned by start time")
	assert.ErrorIs(t, p.Signal(unix.SIGTERM), unix.ENOSYS, "a task no pidfd holds is not signalled")
	select {
	case <-done:
		t.Fatal("the process was signalled")
	case <-time.After(100 * time.Millisecond):
	}
}
