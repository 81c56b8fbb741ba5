// Package yarnevict evicts YARN containers one at a time inside koordlet's
// QoS loops: the YARN-aware BE memory evict strategy, the victim ranking over
// BE pods and YARN containers, the container killer, and the guard that keeps
// koordlet's pod eviction away from the NodeManager pod.
package yarnevict

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// Killer ends a YARN container's processes without telling YARN: SIGTERM,
// a grace period, then SIGKILL of everything left, with the container frozen
// (cgroup v1 freezer) or killed atomically (cgroup v2 cgroup.kill) so that
// no child escapes by forking. It signals only processes proven, through a
// pidfd, to be in the container's own cgroup under the YARN hierarchy.
type Killer struct {
	H     cgroups.Hierarchy
	Grace time.Duration
	// Sleep is time.Sleep; tests may shorten waits.
	Sleep func(time.Duration)
}

// KillResult reports what a kill did.
type KillResult struct {
	Signalled int  // processes that got a signal
	Frozen    bool // the container was frozen before SIGKILL
	Remaining int  // processes still in the cgroup afterwards
}

// ErrNotYARN is returned when a container's cgroup is not proven to be its
// own cgroup under the YARN hierarchy.
var ErrNotYARN = errors.New("not a YARN container cgroup under the configured hierarchy")

// ownDir returns the container's own cgroup dir (relative), checked.
func (k *Killer) ownDir(c *store.Container) (cgroups.Controller, string, error) {
	want := k.H.ContainerRelDir(c.Name)
	for _, ctrl := range []cgroups.Controller{cgroups.CPU, cgroups.Memory, cgroups.CPUAcct} {
		ref := c.Cgroups[ctrl]
		if ref.Owned && ref.Dir == want {
			return ctrl, ref.Dir, nil
		}
	}
	return 0, "", fmt.Errorf("container %s: %w", c.Name, ErrNotYARN)
}

// Kill ends every process of container c.
func (k *Killer) Kill(c *store.Container) (KillResult, error) {
	var res KillResult
	ctrl, dir, err := k.ownDir(c)
	if err != nil {
		return res, err
	}
	procsPath := filepath.Join(k.H.AbsDir(ctrl, dir), "cgroup.procs")
	sleep := k.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}

	// 1. SIGTERM: let the JVM run its shutdown hooks.
	n, err := k.signalAll(procsPath, ctrl, dir, unix.SIGTERM)
	if err != nil {
		return res, err
	}
	res.Signalled = n
	if n > 0 && k.Grace > 0 {
		deadline := time.Now().Add(k.Grace)
		for time.Now().Before(deadline) {
			if pids, _ := readPids(procsPath); len(pids) == 0 {
				return res, nil
			}
			sleep(20 * time.Millisecond)
		}
	}

	// 2. Everything left dies at once.
	if k.H.V2 {
		killFile := filepath.Join(k.H.AbsDir(ctrl, dir), "cgroup.kill")
		if err := os.WriteFile(killFile, []byte("1"), 0o644); err == nil {
			res.Frozen = true // cgroup.kill is atomic against forks
		} else if !os.IsNotExist(err) {
			klog.V(4).Infof("yarn: cgroup.kill of %s: %v; signalling each process", c.Name, err)
		}
	} else {
		thaw, frozen := k.freeze(c.Name, procsPath, ctrl, dir)
		res.Frozen = frozen
		defer thaw()
	}
	n, err = k.signalAll(procsPath, ctrl, dir, unix.SIGKILL)
	if err != nil {
		return res, err
	}
	if n > res.Signalled {
		res.Signalled = n
	}
	return res, nil
}

// WaitGone waits up to timeout for the container's cgroup to hold no process.
func (k *Killer) WaitGone(c *store.Container, timeout time.Duration) int {
	ctrl, dir, err := k.ownDir(c)
	if err != nil {
		return 0
	}
	procsPath := filepath.Join(k.H.AbsDir(ctrl, dir), "cgroup.procs")
	deadline := time.Now().Add(timeout)
	for {
		pids, err := readPids(procsPath)
		if err != nil || len(pids) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			return len(pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// signalAll sends sig to every process listed in procsPath that a pidfd
// proves to be in the container's cgroup.
func (k *Killer) signalAll(procsPath string, ctrl cgroups.Controller, dir string, sig unix.Signal) (int, error) {
	pids, err := readPids(procsPath)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil // the container is gone already
		}
		return 0, fmt.Errorf("list processes of %s: %w", procsPath, err)
	}
	sent := 0
	for _, pid := range pids {
		if k.signal(pid, ctrl, dir, sig) {
			sent++
		}
	}
	return sent, nil
}

// signal sends sig to pid through a pidfd after checking, with the pidfd
// held, that the process is in dir: a pid reused by another process after
// the listing is never signalled.
func (k *Killer) signal(pid int, ctrl cgroups.Controller, dir string, sig unix.Signal) bool {
	if pid <= 1 {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false // exited
	}
	defer unix.Close(fd)
	if !inCgroup(filepath.Join(k.H.ProcRoot, strconv.Itoa(pid), "cgroup"), ctrl, dir, k.H.V2) {
		return false
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		return false
	}
	return true
}

// inCgroup reports whether /proc/<pid>/cgroup puts the process in dir for ctrl.
func inCgroup(procCgroup string, ctrl cgroups.Controller, dir string, v2 bool) bool {
	b, err := os.ReadFile(procCgroup)
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		parts := strings.SplitN(string(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		path := strings.TrimPrefix(parts[2], "/")
		if v2 {
			if parts[0] == "0" && parts[1] == "" {
				return path == dir
			}
			continue
		}
		for _, name := range strings.Split(parts[1], ",") {
			if name == ctrl.String() {
				return path == dir
			}
		}
	}
	return false
}

// freeze moves the container's processes into a freezer cgroup of its own
// (YARN does not manage the freezer controller) and freezes it. It returns a
// function that thaws and removes that cgroup once empty.
func (k *Killer) freeze(name, procsPath string, ctrl cgroups.Controller, dir string) (thaw func(), frozen bool) {
	freezerDir := filepath.Join(k.H.CgroupRoot, "freezer", k.H.Dir, name)
	if err := os.MkdirAll(freezerDir, 0o755); err != nil {
		klog.V(4).Infof("yarn: no freezer for %s (%v); killing without freezing", name, err)
		return func() {}, false
	}
	thaw = func() {
		_ = os.WriteFile(filepath.Join(freezerDir, "freezer.state"), []byte("THAWED"), 0o644)
		for i := 0; i < 100; i++ {
			if err := os.Remove(freezerDir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		klog.Warningf("yarn: could not remove freezer cgroup %s", freezerDir)
	}
	// Move the processes (repeat: a fork may race the first pass).
	for pass := 0; pass < 3; pass++ {
		pids, _ := readPids(procsPath)
		moved := 0
		for _, pid := range pids {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if inCgroup(filepath.Join(k.H.ProcRoot, strconv.Itoa(pid), "cgroup"), ctrl, dir, false) &&
				os.WriteFile(filepath.Join(freezerDir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644) == nil {
				moved++
			}
			unix.Close(fd)
		}
		if moved == 0 {
			break
		}
	}
	if err := os.WriteFile(filepath.Join(freezerDir, "freezer.state"), []byte("FROZEN"), 0o644); err != nil {
		return thaw, false
	}
	for i := 0; i < 100; i++ {
		if b, err := os.ReadFile(filepath.Join(freezerDir, "freezer.state")); err == nil && strings.TrimSpace(string(b)) == "FROZEN" {
			return thaw, true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return thaw, false
}

func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids, nil
}
