package v2guest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// recordsDir holds one directory per running guest: the runner that owns
// it (pid and start time) and qemu's pid file. A guest whose runner is
// gone (a killed test) is an orphan that ReapOrphans ends.
const recordsDir = "/run/koordlet-yarn-v2guest"

// namePrefix starts every guest's qemu -name: with the record's name it
// proves that a pid is that guest's qemu.
const namePrefix = "koordlet-yarn-v2guest-"

type record struct {
	dir  string
	name string
}

func newRecord() (*record, error) {
	name := fmt.Sprintf("%s%d-%d", namePrefix, os.Getpid(), time.Now().UnixNano())
	dir := filepath.Join(recordsDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("guest ownership record: %w", err)
	}
	return &record{dir: dir, name: name}, nil
}

func (r *record) pidfile() string { return filepath.Join(r.dir, "qemu.pid") }

// writeOwner records this process (pid and start time) as the guest's
// runner, and qemu's pid (qemu writes its pid file too, once it is up).
func (r *record) writeOwner(qemuPid int) error {
	st, err := startTime(os.Getpid())
	if err != nil {
		return err
	}
	owner := fmt.Sprintf("%d %d %d\n", os.Getpid(), st, qemuPid)
	return os.WriteFile(filepath.Join(r.dir, "owner"), []byte(owner), 0o644)
}

func (r *record) remove() { _ = os.RemoveAll(r.dir) }

func startTime(pid int) (uint64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat of pid %d: %w", pid, err)
	}
	return st.Starttime, nil
}

// ReapOrphans ends the guests of earlier runs whose runner is gone: for
// each record whose owner (pid and start time) no longer runs, the qemu it
// names is killed through a pidfd, after its command line is checked to
// carry the record's -name (a reused pid is left alone), and the record is
// removed. Guests of live runners are not touched.
func ReapOrphans(log io.Writer) error { return reapOrphans(recordsDir, log) }

func reapOrphans(recordsDir string, log io.Writer) error {
	entries, err := os.ReadDir(recordsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), namePrefix) {
			continue
		}
		dir := filepath.Join(recordsDir, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			// A record being written, or one whose qemu never started:
			// reaped by age.
			if fi, serr := os.Stat(dir); serr == nil && time.Since(fi.ModTime()) > time.Hour {
				_ = os.RemoveAll(dir)
			}
			continue
		}
		var ownerPid, qemuPid int
		var ownerStart uint64
		if _, err := fmt.Sscanf(string(b), "%d %d %d", &ownerPid, &ownerStart, &qemuPid); err != nil {
			return fmt.Errorf("guest record %s: %w", dir, err)
		}
		if st, err := startTime(ownerPid); err == nil && st == ownerStart {
			continue // its runner is alive
		}
		killed, err := killGuest(qemuPid, e.Name())
		if err != nil {
			return fmt.Errorf("reap the orphaned guest %s: %w", e.Name(), err)
		}
		if killed {
			fmt.Fprintf(log, "v2guest: killed guest %s (qemu pid %d), left by a runner that is gone\n", e.Name(), qemuPid)
		} else {
			fmt.Fprintf(log, "v2guest: removed the record of guest %s, whose runner and qemu are gone\n", e.Name())
		}
		_ = os.RemoveAll(dir)
	}
	return nil
}

// killGuest kills pid if, through a pidfd taken first, it is still the
// qemu named name, and says whether it did; a pid that is gone or now
// someone else's is left.
func killGuest(pid int, name string) (bool, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	// The pidfd pins the process: the command line read now is its own.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false, nil // gone meanwhile
	}
	if !bytes.Contains(cmdline, []byte("\x00-name\x00"+name+"\x00")) {
		return false, nil // the pid was reused
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("kill qemu %d: %w", pid, err)
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	_, _ = unix.Poll(fds, 10000)
	return true, nil
}
