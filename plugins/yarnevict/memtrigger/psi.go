package memtrigger

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of the PSI trigger: wake when tasks stalled on memory for 100 ms
// within a second (some).
const (
	DefaultPSIStall  = 100 * time.Millisecond
	DefaultPSIWindow = time.Second
)

// PSI is a pressure stall trigger (Documentation/accounting/psi.rst): the
// kernel raises POLLPRI on the file when stalls exceed the threshold within
// the window.
type PSI struct {
	fd   int
	stop [2]int // a pipe: closing the write end ends the waiter
	done chan struct{}
}

// NewPSI registers "some <stall> <window>" on path (/proc/pressure/memory
// or a cgroup's memory.pressure) and calls fire each time it triggers.
// Kernels without PSI, or without trigger support, fail here.
func NewPSI(path string, stall, window time.Duration, fire func()) (*PSI, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("PSI trigger on %s: %w", path, err)
	}
	spec := fmt.Sprintf("some %d %d", stall.Microseconds(), window.Microseconds())
	if _, err := unix.Write(fd, append([]byte(spec), 0)); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("PSI trigger %q on %s not accepted by this kernel: %w", spec, path, err)
	}
	p := &PSI{fd: fd, done: make(chan struct{})}
	if err := unix.Pipe2(p.stop[:], unix.O_CLOEXEC); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("pipe: %w", err)
	}
	go p.wait(fire)
	return p, nil
}

func (p *PSI) wait(fire func()) {
	defer close(p.done)
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLPRI}, {Fd: int32(p.stop[0]), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
			return
		}
		if fds[0].Revents&unix.POLLPRI != 0 {
			fire()
		}
	}
}

// Close removes the trigger.
func (p *PSI) Close() error {
	_ = unix.Close(p.stop[1])
	<-p.done
	_ = unix.Close(p.stop[0])
	return unix.Close(p.fd)
}
