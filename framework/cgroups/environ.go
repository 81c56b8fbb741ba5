package cgroups

import (
	"errors"
	"path/filepath"
	"strconv"
	"time"
)

// EnvironTimeout bounds one read of /proc/<pid>/environ. The read takes
// the target's memory map lock; a process stuck in D state holding it (a
// page fault on a dead NFS mount, a hung FUSE daemon) would block the
// reader, and with it the scan and the informer, indefinitely.
const EnvironTimeout = 250 * time.Millisecond

// maxStuckEnvironReads bounds the reads abandoned to a stuck process (each
// a goroutine blocked in the kernel until the process moves on): past it,
// environments are not read until one returns.
const maxStuckEnvironReads = 4

// ErrEnvironTimeout: the read of an environment did not return in
// EnvironTimeout (the process is likely in D state); it is tried again at
// a later scan.
var ErrEnvironTimeout = errors.New("reading the process environment timed out")

// ErrEnvironBusy: too many reads are stuck on processes in D state; no
// environment is read until one returns.
var ErrEnvironBusy = errors.New("too many environment reads stuck on processes in D state")

// ErrEnvironEmpty: the environment read back empty. A process in the
// middle of an exec shows one (the kernel publishes the new image's
// argument address before its environment's end), so it is not an answer
// to keep: read again at the next exec or scan.
var ErrEnvironEmpty = errors.New("the process environment is empty (in the middle of an exec?)")

// environReader reads environments in time-bounded, concurrency-bounded
// goroutines: a caller waits at most timeout, whatever the kernel does.
type environReader struct {
	slots   chan struct{}
	timeout time.Duration
	// read reads one environment (readEnviron; tests inject a stuck one).
	read func(path string, buf []byte) (data, grown []byte, truncated bool, err error)
}

func newEnvironReader() *environReader {
	return &environReader{slots: make(chan struct{}, maxStuckEnvironReads), timeout: EnvironTimeout, read: readEnviron}
}

type environResult struct {
	data      []byte
	truncated bool
	err       error
}

// Read reads path within the bound. Each read has its own buffer: an
// abandoned read may still write into it later.
func (r *environReader) Read(path string) (data []byte, truncated bool, err error) {
	select {
	case r.slots <- struct{}{}:
	default:
		return nil, false, ErrEnvironBusy
	}
	done := make(chan environResult, 1)
	go func() {
		defer func() { <-r.slots }()
		d, _, tr, err := r.read(path, nil)
		done <- environResult{d, tr, err}
	}()
	t := time.NewTimer(r.timeout)
	defer t.Stop()
	select {
	case res := <-done:
		return res.data, res.truncated, res.err
	case <-t.C:
		return nil, false, ErrEnvironTimeout
	}
}

// EnvironReader reads the CONTAINER_ID of processes' environments, each
// read bounded in size (MaxEnvironBytes), in time (EnvironTimeout) and in
// the reads left stuck on processes in D state.
type EnvironReader struct{ r *environReader }

// NewEnvironReader returns a reader.
func NewEnvironReader() *EnvironReader { return &EnvironReader{r: newEnvironReader()} }

// ContainerID returns the CONTAINER_ID in the environment of process pid
// ("" when it has none; an environment cut at the cap without it says
// none too: the NodeManager puts it among the first entries). The error is
// the read's (ErrEnvironTimeout, ErrEnvironBusy, ErrEnvironEmpty, a gone
// process).
func (e *EnvironReader) ContainerID(procRoot string, pid int) (string, error) {
	b, truncated, err := e.r.Read(filepath.Join(procRoot, strconv.Itoa(pid), "environ"))
	if err != nil {
		return "", err
	}
	if len(b) == 0 {
		return "", ErrEnvironEmpty
	}
	switch v, id := parseEnviron(b, "", truncated); v {
	case envForeign:
		return id, nil
	}
	return "", nil
}
