// Package kill ends one YARN container at a time: the Killer (SIGTERM, a
// grace, SIGKILL passes or cgroup.kill, every signal through a pinned
// process proven in the container's cgroup), the Journal that lets a
// restarted koordlet finish an interrupted kill, the Flights that keep two
// strategies off one container, the Audit of every eviction and relief
// episode, the measure of what a kill released, and the eviction reasons
// with the gates each may run under. It decides nothing about whom to kill.
package kill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// Killer ends a YARN container's processes without telling YARN: SIGTERM, a
// grace period, then SIGKILL of everything left.
//
// It never leaves a state that outlives koordlet harmfully. There is no
// freezer and no SIGSTOP: forks are caught by repeating SIGKILL passes over
// the container's cgroup until it is empty (a process with SIGKILL pending
// cannot fork, so each pass can only find children born before it), and on
// cgroup v2 by the kernel's atomic cgroup.kill. If koordlet dies at any
// instant, every process of the container is running (SIGTERM is the JVM's
// normal shutdown request) or dying; the journal on the container's cgroup
// lets the next koordlet finish a kill that had begun (see Recover).
//
// It signals only processes proven, through a pidfd held across the check,
// to be in the container's own cgroup under the YARN hierarchy, and reports
// success only when those processes are gone or exiting.
type Killer struct {
	H     cgroups.Hierarchy
	Grace time.Duration
	// ExitTimeout bounds the wait for SIGKILLed processes to exit (default
	// 5s); processes neither gone nor exiting by then fail the kill.
	ExitTimeout time.Duration
	// Sleep is time.Sleep; tests may shorten waits.
	Sleep func(time.Duration)
	// Flights coordinates kills across the strategies (nil: none).
	Flights *Flights
	// Journal records kills in progress on the container's cgroup (nil:
	// none kept).
	Journal *Journal
	// Hook, when set, is called after each step of a kill; tests stop the
	// killing process there.
	Hook func(Step)
	// Reason is recorded in the journal by Kill (KillFor takes its own).
	Reason string
	// said keeps a signal failure to one line per Killer (one kill).
	said logonce.Set
}

// Step is a point in a kill.
type Step string

// Steps of a kill, in order.
const (
	StepJournaled Step = "journaled" // intent recorded, nothing sent yet
	StepTermSent  Step = "term-sent" // SIGTERM sent to every process
	StepKillSent  Step = "kill-sent" // the first SIGKILL pass (or cgroup.kill) done
)

// KillResult reports what a kill did.
type KillResult struct {
	Signalled int  // distinct processes that got a signal
	Atomic    bool // cgroup v2 cgroup.kill ended what was left
	Passes    int  // SIGKILL passes over the cgroup
	Remaining int  // processes neither gone nor exiting at the end
}

// Errors of a kill.
var (
	// ErrNotYARN: the container's cgroup is not proven to be its own
	// cgroup under the YARN hierarchy.
	ErrNotYARN = errors.New("not a YARN container cgroup under the configured hierarchy")
	// ErrNothingKilled: no process of the container could be signalled
	// (none left, or none verified to be in its cgroup): nothing released.
	ErrNothingKilled = errors.New("no process of the container was signalled")
	// ErrSurvived: processes are still in the container's cgroup, neither
	// gone nor exiting, after the kill.
	ErrSurvived = errors.New("processes survived the kill")
	// ErrInFlight: another strategy is killing the container now.
	ErrInFlight = errors.New("a kill of this container is in flight")
	// ErrAlreadyEvicted: the container was evicted a moment ago.
	ErrAlreadyEvicted = errors.New("the container was evicted already")
)

// defaultExitTimeout is how long SIGKILLed processes get to exit (a JVM
// with a large heap takes a moment to unmap it).
const defaultExitTimeout = 5 * time.Second

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

// Kill ends every process of container c, journaled with k.Reason. It
// succeeds only when the processes it found are gone or exiting.
func (k *Killer) Kill(c *store.Container) (KillResult, error) {
	return k.KillFor(c, k.Reason)
}

// KillFor is Kill with the reason journaled given here, so that strategies
// (and the kills of one plan, run at once) share the killer without
// writing to it.
func (k *Killer) KillFor(c *store.Container, reason string) (KillResult, error) {
	var res KillResult
	ctrl, dir, err := k.ownDir(c)
	if err != nil {
		return res, err
	}
	if err := k.Flights.begin(c.Name); err != nil {
		return res, err
	}
	ok := false
	defer func() { k.Flights.end(c.Name, ok) }()

	abs := k.H.AbsDir(ctrl, dir)
	pids, err := cgroups.ReadPids(abs)
	if err != nil {
		if os.IsNotExist(err) {
			return res, fmt.Errorf("container %s: cgroup gone: %w", c.Name, ErrNothingKilled)
		}
		return res, fmt.Errorf("list processes of %s: %w", abs, err)
	}
	if len(pids) == 0 {
		return res, fmt.Errorf("container %s has no process: %w", c.Name, ErrNothingKilled)
	}
	signalled := map[int]bool{}

	k.Journal.record(abs, StepJournaled, reason)
	k.hook(StepJournaled)

	// 1. SIGTERM: let the JVM run its shutdown hooks.
	k.signalAll(abs, ctrl, dir, unix.SIGTERM, signalled)
	if len(signalled) > 0 {
		k.Journal.record(abs, StepTermSent, reason)
	}
	k.hook(StepTermSent)
	if len(signalled) > 0 && k.Grace > 0 {
		deadline := time.Now().Add(k.Grace)
		for time.Now().Before(deadline) {
			if left, _ := cgroups.ReadPids(abs); len(left) == 0 {
				break
			}
			k.sleep(20 * time.Millisecond)
		}
	}

	// 2. Everything left dies: cgroup.kill on v2, SIGKILL passes until the
	// cgroup is empty otherwise (and after cgroup.kill, harmlessly).
	k.Journal.record(abs, StepKillSent, reason)
	if k.H.V2 {
		if err := os.WriteFile(filepath.Join(abs, "cgroup.kill"), []byte("1"), 0o644); err == nil {
			res.Atomic = true
		} else if !os.IsNotExist(err) {
			klog.V(4).Infof("yarn: cgroup.kill of %s: %v; signalling each process", c.Name, err)
		}
	}
	res.Passes, res.Remaining = k.killPasses(abs, ctrl, dir, signalled, true)
	res.Signalled = len(signalled)
	switch {
	case res.Signalled == 0 && !res.Atomic:
		if left, _ := cgroups.ReadPids(abs); len(left) == 0 {
			return res, fmt.Errorf("container %s: its processes exited before any signal: %w", c.Name, ErrNothingKilled)
		}
		return res, fmt.Errorf("container %s: %d processes listed, none verified in its cgroup %s (is koordlet in a private cgroup namespace?): %w",
			c.Name, len(pids), dir, ErrNothingKilled)
	case res.Remaining > 0:
		return res, fmt.Errorf("container %s: %d processes still running after %v: %w", c.Name, res.Remaining, k.exitTimeout(), ErrSurvived)
	}
	k.Journal.clear(abs)
	ok = true
	return res, nil
}

// killPasses SIGKILLs every verified process in the cgroup, pass after
// pass, until the cgroup holds no process that is not exiting, or the exit
// timeout. It returns the passes made and the processes left that are
// neither gone nor exiting. hookFirst calls the hook after the first pass.
func (k *Killer) killPasses(abs string, ctrl cgroups.Controller, dir string, signalled map[int]bool, hookFirst bool) (passes, remaining int) {
	deadline := time.Now().Add(k.exitTimeout())
	for {
		pids, err := cgroups.ReadPids(abs)
		if err != nil || len(pids) == 0 {
			return passes, 0
		}
		if passes > 0 && time.Now().After(deadline) {
			for _, pid := range pids {
				if !exiting(k.H.ProcRoot, pid) {
					remaining++
				}
			}
			return passes, remaining
		}
		for _, pid := range pids {
			if k.signal(pid, ctrl, dir, unix.SIGKILL) {
				signalled[pid] = true
			}
		}
		passes++
		if passes == 1 && hookFirst {
			k.hook(StepKillSent)
		}
		k.sleep(10 * time.Millisecond)
	}
}

// WaitGone waits up to timeout for the container's cgroup to hold no process.
func (k *Killer) WaitGone(c *store.Container, timeout time.Duration) int {
	ctrl, dir, err := k.ownDir(c)
	if err != nil {
		return 0
	}
	abs := k.H.AbsDir(ctrl, dir)
	deadline := time.Now().Add(timeout)
	for {
		pids, err := cgroups.ReadPids(abs)
		if err != nil || len(pids) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			return len(pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (k *Killer) hook(s Step) {
	if k.Hook != nil {
		k.Hook(s)
	}
}

func (k *Killer) sleep(d time.Duration) {
	if k.Sleep != nil {
		k.Sleep(d)
		return
	}
	time.Sleep(d)
}

func (k *Killer) exitTimeout() time.Duration {
	if k.ExitTimeout > 0 {
		return k.ExitTimeout
	}
	return defaultExitTimeout
}

// signalAll sends sig to every process of cgroup directory abs that a pidfd
// proves to be in the container's cgroup, recording them in signalled.
func (k *Killer) signalAll(abs string, ctrl cgroups.Controller, dir string, sig unix.Signal, signalled map[int]bool) {
	pids, _ := cgroups.ReadPids(abs)
	for _, pid := range pids {
		if k.signal(pid, ctrl, dir, sig) {
			signalled[pid] = true
		}
	}
}

// signal sends sig to pid through a pidfd (cgroups.Pin) after checking,
// with the pidfd held, that the process is in dir: the signal goes to the
// process the pidfd names, which fails if that process is gone, so a pid
// reused by another process after the listing is never signalled. A
// process no pidfd holds is not signalled.
func (k *Killer) signal(pid int, ctrl cgroups.Controller, dir string, sig unix.Signal) bool {
	if pid <= 1 {
		return false
	}
	p, err := cgroups.Pin(k.H.ProcRoot, pid)
	if err != nil {
		return false // exited
	}
	defer p.Release()
	if !p.ByPidfd() {
		if k.said.First("no-pidfd") {
			klog.Warningf("yarn: kill in %s: no pidfd for process %d (kernel before Linux 5.3, or pidfd_open refused): a process no pidfd holds is never signalled", dir, pid)
		}
		return false
	}
	if !k.H.Contains(pid, ctrl, dir) {
		return false
	}
	if err := p.Signal(sig); err != nil {
		if !errors.Is(err, unix.ESRCH) && k.said.First("signal") {
			klog.Warningf("yarn: kill in %s: signal %v to process %d: %v", dir, sig, pid, err)
		}
		return false
	}
	return true
}

// pfExiting is the kernel's PF_EXITING task flag (/proc/<pid>/stat field 9).
const pfExiting = 0x4

// exiting reports whether pid is gone, a zombie, or already in exit
// (procfs's ProcStat: state and flags).
func exiting(procRoot string, pid int) bool {
	st, err := cgroups.TaskStat(procRoot, pid)
	if err != nil {
		// Gone only when the kernel says so; a record that does not parse
		// proves nothing.
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
	}
	return st.State == "Z" || st.State == "X" || st.State == "x" || st.Flags&pfExiting != 0
}
