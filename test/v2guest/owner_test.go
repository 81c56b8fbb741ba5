package v2guest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// standIn starts a process whose command line carries "-name name", as a
// guest's qemu does (a shell that waits, so the line stays its own), and
// reaps it when the test ends.
func standIn(t *testing.T, name string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "sleep 600; :", "-name", name)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd, done
}

func ended(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// writeRecord writes a guest record as a runner would: owner pid and start
// time, and the qemu pid.
func writeRecord(t *testing.T, dir, name string, ownerPid int, ownerStart uint64, qemuPid int) string {
	t.Helper()
	rec := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(rec, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(rec, "owner"), []byte(fmt.Sprintf("%d %d %d\n", ownerPid, ownerStart, qemuPid)), 0o644))
	return rec
}

// TestReapOrphans: a guest whose runner is gone is killed and its record
// removed; a guest whose runner lives, and a pid now someone else's (the
// command line lacks the record's name), are left alone.
func TestReapOrphans(t *testing.T) {
	dir := t.TempDir()
	self, err := startTime(os.Getpid())
	require.NoError(t, err)

	orphanName := namePrefix + "test-orphan"
	orphan, orphanDone := standIn(t, orphanName)
	// The runner's pid is this process but its start time is not: a runner
	// that ended and whose pid was reused.
	orphanRec := writeRecord(t, dir, orphanName, os.Getpid(), self+1, orphan.Process.Pid)

	liveName := namePrefix + "test-live"
	live, liveDone := standIn(t, liveName)
	liveRec := writeRecord(t, dir, liveName, os.Getpid(), self, live.Process.Pid)

	reusedName := namePrefix + "test-reused"
	other, otherDone := standIn(t, namePrefix+"someone-else")
	reusedRec := writeRecord(t, dir, reusedName, os.Getpid(), self+1, other.Process.Pid)

	var log bytes.Buffer
	require.NoError(t, reapOrphans(dir, &log))
	require.Eventually(t, func() bool { return ended(orphanDone) }, 5*time.Second, 20*time.Millisecond, "the orphaned guest is killed")
	assert.NoDirExists(t, orphanRec)
	assert.Contains(t, log.String(), "killed guest "+orphanName)

	assert.DirExists(t, liveRec, "a live runner's record stays")
	time.Sleep(100 * time.Millisecond)
	assert.False(t, ended(liveDone), "a live runner's guest runs")
	assert.NoDirExists(t, reusedRec, "a dead runner's record goes")
	assert.False(t, ended(otherDone), "a process whose command line is not the guest's is left alone")
}

func itoa(v int) string { return fmt.Sprint(v) }

func atoi(s string) int {
	var v int
	_, _ = fmt.Sscan(s, &v)
	return v
}
