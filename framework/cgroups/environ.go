package cgroups

import (
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// EnvironTimeout bounds one read of /proc/<pid>/environ. The read takes
// the target's memory map lock; a process stuck in D state holding it (a
// page fault on a dead NFS mount, a hung FUSE daemon) would block the
// reader, and with it the scan and the informer, indefinitely.
const EnvironTimeout = 250 * time.Millisecond

// maxEnvironReads bounds the reads in flight on a node (each a goroutine,
// blocked in the kernel while its process is stuck). The bound that
// matters is per process: one read at a time, so a process in D state
// holds one goroutine and never stops the reads of the others; this one
// only caps memory on a node with hundreds of stuck processes.
const maxEnvironReads = 256

// ErrEnvironTimeout: the read of an environment did not return in
// EnvironTimeout (the process is likely in D state), or an earlier read of
// the same process has not returned yet; it is tried again at a later
// scan.
var ErrEnvironTimeout = errors.New("reading the process environment timed out")

// ErrEnvironBusy: maxEnvironReads reads are stuck on processes in D state;
// no other environment is read until one returns.
var ErrEnvironBusy = errors.New("too many environment reads stuck on processes in D state")

// ErrEnvironEmpty: the environment read back empty. A process in the
// middle of an exec shows one (the kernel publishes the new image's
// argument address before its environment's end), so it is not an answer
// to keep: read again at the next exec or scan.
var ErrEnvironEmpty = errors.New("the process environment is empty (in the middle of an exec?)")

// environReader reads environments in time-bounded goroutines, at most one
// per process (path) at a time: a caller waits at most timeout, whatever
// the kernel does, and a stuck process stops only the reads of its own
// environment.
type environReader struct {
	timeout time.Duration
	limit   int
	// read reads one environment (readEnviron; tests inject a stuck one).
	read func(path string, buf []byte) (data, grown []byte, truncated bool, err error)

	mu       sync.Mutex
	inflight map[string]bool
}

func newEnvironReader() *environReader {
	return &environReader{timeout: EnvironTimeout, limit: maxEnvironReads, read: readEnviron, inflight: map[string]bool{}}
}

type environResult struct {
	data      []byte
	truncated bool
	err       error
}

// Read reads path within the bound. Each read has its own buffer: an
// abandoned read may still write into it later. A path whose earlier read
// is still in the kernel is not read again until it returns.
func (r *environReader) Read(path string) (data []byte, truncated bool, err error) {
	r.mu.Lock()
	switch {
	case r.inflight[path]:
		r.mu.Unlock()
		return nil, false, ErrEnvironTimeout
	case len(r.inflight) >= r.limit:
		r.mu.Unlock()
		return nil, false, ErrEnvironBusy
	}
	r.inflight[path] = true
	r.mu.Unlock()
	done := make(chan environResult, 1)
	go func() {
		d, _, tr, err := r.read(path, nil)
		r.mu.Lock()
		delete(r.inflight, path)
		r.mu.Unlock()
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
// read bounded in size (MaxEnvironBytes), in time (EnvironTimeout) and to
// one read in flight per process (a process in D state stops only its own).
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
