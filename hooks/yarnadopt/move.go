package yarnadopt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// Move results (label result of koordlet_yarn_container_cgroup_moves_total):
// cgroups.Move's.
const (
	ResultMoved    = string(cgroups.MoveMoved)
	ResultGone     = string(cgroups.MoveGone)
	ResultNotOwn   = string(cgroups.MoveNotOwn)
	ResultReverted = string(cgroups.MoveReverted)
	ResultFailed   = string(cgroups.MoveFailed)
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

// halfMoved reports whether the relative cgroup dir is the own cgroup of a
// container below the YARN hierarchy that koordlet made (marked): a
// process found there in one controller and in the NodeManager pod's in
// another is half moved (a failed undo, or a koordlet that died between
// two writes), and the next move finishes it.
func halfMoved(h cgroups.Hierarchy, ctrl cgroups.Controller, dir string) bool {
	name := strings.TrimPrefix(dir, h.Dir+"/")
	if name == dir || !strings.HasPrefix(name, "container_") || strings.ContainsAny(name, "/.") {
		return false
	}
	m, err := marked(h.AbsDir(ctrl, dir))
	return err == nil && m
}

// podPaths returns the process's cgroup per controller of ctrls: each in
// the NodeManager pod's cgroup, or (a half move) in a container cgroup
// koordlet made, as long as one is still the pod's; false otherwise.
func (a *Adopter) podPaths(h cgroups.Hierarchy, pid int, ctrls []cgroups.Controller) ([]string, bool) {
	from := make([]string, len(ctrls))
	inPod := false
	for i, c := range ctrls {
		d, ok := h.PathOf(pid, c)
		switch {
		case !ok:
			return nil, false
		case a.inPod(d):
			inPod = true
		case !halfMoved(h, c, d):
			return nil, false
		}
		from[i] = d
	}
	return from, inPod
}

// move moves the pinned process, found in the NodeManager pod's cgroups
// (from, per controller of ctrls), into the container's own cgroup with
// cgroups.Move through the adopter's writer. A process half moved into
// another container's cgroup is not moved.
// (The container's directories, made by ensureLeaf, are
// h.ContainerRelDir(name) in each of ctrls.)
func (a *Adopter) move(h cgroups.Hierarchy, p *cgroups.Pinned, name string, _ []string, ctrls []cgroups.Controller, from []string) string {
	own := h.ContainerRelDir(name)
	steps := make([]cgroups.Step, len(ctrls))
	for i, c := range ctrls {
		if !a.inPod(from[i]) && from[i] != own {
			return ResultNotOwn // half moved into another container's cgroup
		}
		steps[i] = cgroups.Step{Ctrl: c, From: from[i], To: own}
	}
	r, err := cgroups.Move(h, p, steps, a.writer.Write)
	switch {
	case errors.Is(err, cgroups.ErrNotMovedBack):
		klog.Warningf("yarn: move %d of %s: %v", p.ID, name, err)
	case err != nil:
		klog.V(2).Infof("yarn: move %d of %s: %v", p.ID, name, err)
	}
	return string(r)
}
