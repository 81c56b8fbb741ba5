package cgroups

import (
	"errors"
	"fmt"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// pidfdThread is the kernel's PIDFD_THREAD flag (Linux 6.9): a pidfd for a
// thread rather than a thread-group leader.
const pidfdThread = unix.O_EXCL

// pidfdSignalThreadGroup is pidfd_send_signal's PIDFD_SIGNAL_THREAD_GROUP
// (Linux 6.9): the signal goes to the thread group of the task a thread
// pidfd names, as it does through a process pidfd.
const pidfdSignalThreadGroup = 1 << 1

// pidfdOpen opens a pidfd; tests replace it (SetPidfdOpen) to take the
// start-time path of a kernel without pidfd_open.
var pidfdOpen = unix.PidfdOpen

// SetPidfdOpen replaces pidfd_open for tests (nil: a kernel without it,
// ENOSYS) and returns the function that puts the real one back.
func SetPidfdOpen(f func(pid, flags int) (int, error)) (restore func()) {
	if f == nil {
		f = func(int, int) (int, error) { return -1, unix.ENOSYS }
	}
	old := pidfdOpen
	pidfdOpen = f
	return func() { pidfdOpen = old }
}

// Pinned is a task held across a write or a read by number: while Alive,
// its number names it. Pinned by a pidfd (a thread pidfd where the kernel
// has PIDFD_THREAD, else a process pidfd, which only leaders have); where
// the kernel has no pidfd_open (before Linux 5.3) or refuses one for this
// task, by its start time, which tells a reused number afterwards but does
// not hold it.
type Pinned struct {
	ID int
	// Start is the task's start time in clock ticks since boot.
	Start    int64
	fd       int  // -1: start time only
	thread   bool // fd is a thread pidfd (PIDFD_THREAD)
	procRoot string
	released bool
}

// Pin pins task id (a process or a thread) of the proc root procRoot. The
// error wraps unix.ESRCH when the task is gone.
func Pin(procRoot string, id int) (*Pinned, error) {
	if id <= 0 {
		return nil, unix.ESRCH
	}
	fd, err := pidfdOpen(id, pidfdThread)
	thread := err == nil
	if errors.Is(err, unix.EINVAL) {
		fd, err = pidfdOpen(id, 0) // before Linux 6.9: leaders only
	}
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, err
		}
		fd = -1 // no pidfd for this task: start time only
	}
	p := &Pinned{ID: id, fd: fd, thread: thread, procRoot: procRoot}
	start, ok := TaskStartTicks(procRoot, id)
	if !ok {
		p.Release()
		return nil, unix.ESRCH
	}
	p.Start = start
	// Alive after the read: the start time read is the pinned task's.
	if p.fd >= 0 && !p.Alive() {
		p.Release()
		return nil, unix.ESRCH
	}
	return p, nil
}

// ByPidfd reports whether a pidfd holds the task (false: start time only).
func (p *Pinned) ByPidfd() bool { return p.fd >= 0 && !p.released }

// Signal sends sig to the pinned task's thread group through its pidfd:
// it fails (ESRCH) once the task is gone, so a reused number is never
// signalled. A task no pidfd holds is not signalled (ENOSYS).
func (p *Pinned) Signal(sig unix.Signal) error {
	if !p.ByPidfd() {
		return unix.ENOSYS
	}
	if !p.thread {
		return unix.PidfdSendSignal(p.fd, sig, nil, 0)
	}
	err := unix.PidfdSendSignal(p.fd, sig, nil, pidfdSignalThreadGroup)
	if !errors.Is(err, unix.EINVAL) {
		return err
	}
	// A kernel with PIDFD_THREAD but without the thread-group flag (a
	// partial backport): a process pidfd, opened by number while the
	// thread pidfd proves the number still names the pinned task.
	fd, oerr := pidfdOpen(p.ID, 0)
	if oerr != nil {
		return fmt.Errorf("signal task %d: thread-group signal refused (%v), no process pidfd: %w", p.ID, err, oerr)
	}
	defer unix.Close(fd)
	if !p.Alive() {
		return unix.ESRCH
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

// Alive reports whether the pinned task still runs (or is a zombie not yet
// reaped), so that its number still names it.
func (p *Pinned) Alive() bool {
	if p.released {
		return false
	}
	if p.fd >= 0 {
		return unix.PidfdSendSignal(p.fd, 0, nil, 0) == nil
	}
	now, ok := TaskStartTicks(p.procRoot, p.ID)
	return ok && now == p.Start
}

// Reused reports whether the number now names another task than the one
// pinned: the pinned one is gone and a task with another start time holds
// the number.
func (p *Pinned) Reused() bool {
	if p.Alive() {
		return false
	}
	now, ok := TaskStartTicks(p.procRoot, p.ID)
	return ok && now != p.Start
}

// Release unpins (closes the pidfd). It may be called more than once.
func (p *Pinned) Release() {
	if p == nil || p.released {
		return
	}
	p.released = true // no longer pinned: Alive is false from now on
	if p.fd >= 0 {
		_ = unix.Close(p.fd)
	}
}

// Creator returns the task that task id took its cgroups from when it was
// made: its thread group's leader for a thread, its parent for a process (0
// if unknown).
func Creator(procRoot string, id int) int {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return 0
	}
	p, err := fs.Proc(id)
	if err != nil {
		return 0
	}
	if st, err := p.NewStatus(); err == nil && st.TGID > 0 && st.TGID != id {
		return st.TGID // a thread: its leader
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return st.PPID
}
