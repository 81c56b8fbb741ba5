package cgroups

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"k8s.io/klog/v2"
)

// AMEvidence is what a container's process environment says about whether
// the container is the ApplicationMaster of its attempt.
type AMEvidence uint8

const (
	// AMUnknown: not decided from the environment (not read yet, no
	// process could be verified, unreadable, or no environment named the
	// container); the sequence rule applies.
	AMUnknown AMEvidence = iota
	// AMByEnvironment: a process of the container carries the AM markers
	// the ResourceManager's AMLauncher adds.
	AMByEnvironment
	// NotAMByEnvironment: a process of the container carries its
	// CONTAINER_ID and no AM marker.
	NotAMByEnvironment
)

// Environment variables the YARN AM reader looks for. Every container has
// CONTAINER_ID (set by the NodeManager, overriding the launch context); the
// ResourceManager's AMLauncher adds APP_SUBMIT_TIME_ENV and
// APPLICATION_WEB_PROXY_BASE to ApplicationMaster containers only.
const (
	envContainerID   = "CONTAINER_ID"
	envAppSubmitTime = "APP_SUBMIT_TIME_ENV"
	envWebProxyBase  = "APPLICATION_WEB_PROXY_BASE"
)

// MaxEnvironBytes bounds how much of a /proc/<pid>/environ is read.
const MaxEnvironBytes = 256 << 10

// maxAMPids bounds how many of a container's processes are tried per scan;
// maxAMScans bounds the scans that try a container whose environment did
// not decide (after that the sequence rule stays).
const (
	maxAMPids  = 8
	maxAMScans = 30
)

// amState is the scanner's per-container memory of the AM decision.
type amState struct {
	ev    AMEvidence
	scans int
}

// envVerdict is what one process's environment says.
type envVerdict uint8

const (
	envNoID       envVerdict = iota // no CONTAINER_ID: says nothing
	envForeign                      // CONTAINER_ID of another container: not this container's environment
	envIncomplete                   // CONTAINER_ID matches, no marker, but the environment was cut at the cap
	envAM
	envNotAM
)

// parseEnviron reads NUL-separated KEY=VALUE entries. truncated means the
// content was cut at the read cap: its last entry is dropped, and the
// absence of a marker then proves nothing.
func parseEnviron(b []byte, container string, truncated bool) (envVerdict, string) {
	if truncated {
		if i := bytes.LastIndexByte(b, 0); i >= 0 {
			b = b[:i]
		} else {
			b = nil
		}
	}
	var id []byte
	haveID, marker := false, false
	for len(b) > 0 {
		entry := b
		if i := bytes.IndexByte(b, 0); i >= 0 {
			entry, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		key, val, ok := bytes.Cut(entry, []byte("="))
		if !ok {
			continue
		}
		switch string(key) {
		case envContainerID:
			id, haveID = val, true
		case envAppSubmitTime, envWebProxyBase:
			marker = true
		}
	}
	switch {
	case !haveID:
		return envNoID, ""
	case string(id) != container:
		return envForeign, string(id)
	case marker:
		return envAM, ""
	case truncated:
		return envIncomplete, ""
	}
	return envNotAM, ""
}

// readEnviron reads up to MaxEnvironBytes of path into buf (allocated at
// the cap on first use); truncated says more was there.
func readEnviron(path string, buf []byte) (data, grown []byte, truncated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, buf, false, err // no buffer made for a process gone
	}
	defer f.Close()
	if cap(buf) < MaxEnvironBytes+1 {
		buf = make([]byte, MaxEnvironBytes+1)
	}
	buf = buf[:MaxEnvironBytes+1]
	n, err := io.ReadFull(f, buf)
	switch {
	case err == nil:
		return buf[:MaxEnvironBytes], buf, true, nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return buf[:n], buf, false, nil
	}
	return nil, buf, false, err
}

// fillAM decides, once per container, whether c is an ApplicationMaster
// from its processes' environment. Each process tried is pinned first (a
// pidfd, or its start time on kernels without pidfd_open); its environ is
// read; then it must still be in the container's own cgroup and the pinned
// process still alive, so the environ read was that process's and a pid
// reused meanwhile never decides. An environment naming another
// CONTAINER_ID is ignored. A decision from the environment is kept for
// the container's life; an undecided container is tried again at later
// scans, up to maxAMScans.
func (s *Scanner) fillAM(c *Container) {
	st := s.am[c.Name]
	if st.ev != AMUnknown || st.scans >= maxAMScans || len(c.Pids) == 0 {
		c.AM = st.ev
		return
	}
	ctrl, dir, ok := s.ownCgroup(c)
	if !ok {
		return
	}
	st.scans++
	for i, pid := range c.Pids {
		if i == maxAMPids {
			break
		}
		if ev := s.amFromProcess(c, pid, ctrl, dir); ev != AMUnknown {
			st.ev = ev
			break
		}
	}
	if st.ev == AMUnknown && st.scans == maxAMScans {
		klog.V(2).Infof("yarn: the environment of %s's processes did not tell whether it is an ApplicationMaster after %d scans; the sequence rule decides", c.Name, maxAMScans)
	}
	s.am[c.Name] = st
	c.AM = st.ev
}

// ownCgroup returns a controller in which c has its own cgroup, and that
// cgroup's dir.
func (s *Scanner) ownCgroup(c *Container) (Controller, string, bool) {
	for _, ctrl := range [...]Controller{CPU, Memory, CPUAcct, CPUSet, Blkio} {
		if r := c.Cgroups[ctrl]; r.Owned {
			return ctrl, r.Dir, true
		}
	}
	return 0, "", false
}

// amFromProcess reads the environment of one verified process of c.
func (s *Scanner) amFromProcess(c *Container, pid int, ctrl Controller, dir string) AMEvidence {
	p, err := Pin(s.h.ProcRoot, pid) // a pidfd, else the start time
	if err != nil {
		return AMUnknown // gone
	}
	defer p.Release()
	data, truncated, err := s.env.Read(filepath.Join(s.h.ProcRoot, strconv.Itoa(pid), "environ"))
	if errors.Is(err, ErrEnvironTimeout) || errors.Is(err, ErrEnvironBusy) {
		klog.V(4).Infof("yarn: environment of process %d of %s: %v; tried again at a later scan", pid, c.Name, err)
		return AMUnknown
	}
	if err != nil {
		if !isGone(err) && !s.environDenied && (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)) {
			s.environDenied = true
			klog.Warningf("yarn: cannot read the environment of YARN container processes (%v): the ApplicationMaster is told by container sequence 1, which misses the AM of an attempt whose ids carry an RM epoch", err)
		}
		return AMUnknown
	}
	// The process must still be the container's and the one pinned.
	if !s.h.Contains(pid, ctrl, dir) {
		return AMUnknown
	}
	if !p.Alive() {
		return AMUnknown
	}
	switch v, other := parseEnviron(data, c.Name, truncated); v {
	case envAM:
		klog.V(3).Infof("yarn: %s is an ApplicationMaster (environment of process %d)", c.Name, pid)
		return AMByEnvironment
	case envNotAM:
		return NotAMByEnvironment
	case envForeign:
		klog.V(2).Infof("yarn: process %d in %s carries CONTAINER_ID %q: not this container's environment, ignored", pid, c.Name, other)
	}
	return AMUnknown
}

// oneAMPerAttempt keeps at most one ApplicationMaster by environment per
// application attempt: the lowest container id (epoch, then sequence), the
// attempt's first container. The markers are plain environment variables
// an application could also hand its other containers; this bounds what
// such a claim gains to what the sequence rule gives (one per attempt).
func oneAMPerAttempt(cs []Container) {
	type attempt struct{ ts, app, att int64 }
	var first map[attempt]int
	for i := range cs {
		if cs[i].AM != AMByEnvironment {
			continue
		}
		id := cs[i].ID
		k := attempt{id.ClusterTimestamp, id.AppID, id.AttemptID}
		j, ok := first[k]
		if !ok {
			if first == nil {
				first = map[attempt]int{}
			}
			first[k] = i
			continue
		}
		o := cs[j].ID
		if id.Epoch < o.Epoch || (id.Epoch == o.Epoch && id.Sequence < o.Sequence) {
			cs[j].AM = NotAMByEnvironment
			first[k] = i
		} else {
			cs[i].AM = NotAMByEnvironment
		}
	}
}
