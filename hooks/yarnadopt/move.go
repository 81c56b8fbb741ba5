package yarnadopt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// Move results (label result of koordlet_yarn_container_cgroup_moves_total).
const (
	ResultMoved    = "moved"    // verified in the container's cgroup afterwards
	ResultGone     = "gone"     // exited before or during the move
	ResultNotOwn   = "not_pod"  // no longer in the NodeManager pod's cgroup, or another process: not moved
	ResultReverted = "reverted" // the number named another process after the write: moved back
	ResultFailed   = "failed"   // the write or the verification failed
)

// procsWriter writes pids into cgroup.procs files. On cgroup v2 the kernel
// lets a process migrate another only when both cgroups are inside the
// writer's cgroup namespace (as the file was opened); koordlet in a
// container runtime's private namespace would be refused, so the writes
// are made from one OS thread that joined the host's cgroup namespace (PID
// 1's) when koordlet's differs.
type procsWriter struct {
	reqs chan writeReq
}

type writeReq struct {
	dir  string
	pid  int
	done chan error
}

// newProcsWriter starts the writer. On cgroup v1 (no namespace check), or
// when koordlet shares PID 1's cgroup namespace, writes go from the calling
// thread; otherwise from one thread in PID 1's, which lives as long as
// koordlet.
func newProcsWriter(procRoot string, v2 bool) (*procsWriter, error) {
	if !v2 || sameNS(filepath.Join(procRoot, "self/ns/cgroup"), filepath.Join(procRoot, "1/ns/cgroup")) {
		return &procsWriter{}, nil
	}
	w := &procsWriter{reqs: make(chan writeReq)}
	ready := make(chan error, 1)
	go func() {
		// The thread stays locked and ends with the goroutine: it is never
		// handed back to the runtime in the host's namespace.
		runtime.LockOSThread()
		f, err := os.Open(filepath.Join(procRoot, "1/ns/cgroup"))
		if err == nil {
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWCGROUP)
			f.Close()
		}
		if err != nil {
			ready <- fmt.Errorf("join the host's cgroup namespace: %w", err)
			return
		}
		ready <- nil
		for r := range w.reqs {
			r.done <- cgroups.WriteProcs(r.dir, r.pid)
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	klog.Infof("yarn: koordlet runs in a private cgroup namespace: YARN container processes are moved from a thread in the host's")
	return w, nil
}

func sameNS(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return true // cannot tell: write directly, the kernel's error says more
	}
	return sa.Ino == sb.Ino && sa.Dev == sb.Dev
}

// Write moves pid into dir.
func (w *procsWriter) Write(dir string, pid int) error {
	if w.reqs == nil {
		return cgroups.WriteProcs(dir, pid)
	}
	done := make(chan error, 1)
	w.reqs <- writeReq{dir: dir, pid: pid, done: done}
	return <-done
}

// pinned is a process pinned by a pidfd: while the pidfd shows it alive,
// its number names it.
type pinned struct {
	pid   int
	fd    int
	start int64
}

// pin pins pid and reads its start time.
func pin(procRoot string, pid int) (*pinned, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, err
	}
	start, ok := cgroups.TaskStartTicks(procRoot, pid)
	if !ok {
		unix.Close(fd)
		return nil, unix.ESRCH
	}
	p := &pinned{pid: pid, fd: fd, start: start}
	if !p.alive() {
		p.release()
		return nil, unix.ESRCH
	}
	return p, nil
}

func (p *pinned) alive() bool { return unix.PidfdSendSignal(p.fd, 0, nil, 0) == nil }

func (p *pinned) release() { _ = unix.Close(p.fd) }

// move moves the pinned process, found in the NodeManager pod's cgroups
// (from, per controller of ctrls), into the container's dirs, and verifies
// it through the pidfd. A process that left the pod's cgroup meanwhile is
// not moved. When the process died around a write, the number may name
// another process: one now in dirs is moved back to where the checked one
// was.
func (a *Adopter) move(h cgroups.Hierarchy, p *pinned, name string, dirs []string, ctrls []cgroups.Controller, from []string) string {
	for i, c := range ctrls {
		if cur, ok := h.PathOf(p.pid, c); !ok || cur != from[i] {
			if !p.alive() {
				return ResultGone
			}
			if cur == h.ContainerRelDir(name) {
				continue // moved already (an earlier pass)
			}
			return ResultNotOwn
		}
	}
	var werr error
	for _, d := range dirs {
		if err := a.writer.Write(d, p.pid); err != nil && werr == nil {
			werr = err
		}
	}
	own := h.ContainerRelDir(name)
	if p.alive() {
		for _, c := range ctrls {
			if cur, ok := h.PathOf(p.pid, c); !ok || cur != own {
				if werr != nil && !errors.Is(werr, unix.ESRCH) {
					klog.V(2).Infof("yarn: move %d of %s into %s: %v", p.pid, name, dirs, werr)
				}
				return ResultFailed
			}
		}
		return ResultMoved
	}
	// The checked process is gone: whatever the number names now is not
	// proven to be the container's. One in our directories goes back.
	start, ok := cgroups.TaskStartTicks(h.ProcRoot, p.pid)
	if !ok || start == p.start {
		return ResultGone
	}
	reverted := false
	for i, c := range ctrls {
		if cur, ok := h.PathOf(p.pid, c); ok && cur == own {
			back := h.AbsDir(c, from[i])
			if err := a.writer.Write(back, p.pid); err != nil {
				klog.Warningf("yarn: pid %d was reused during the move into %s and could not be moved back to %s: %v", p.pid, dirs[i], back, err)
				return ResultFailed
			}
			reverted = true
		}
	}
	if reverted {
		klog.Warningf("yarn: pid %d was reused during the move into the cgroup of %s (its process exited); the new process was moved back", p.pid, name)
		return ResultReverted
	}
	return ResultGone
}
