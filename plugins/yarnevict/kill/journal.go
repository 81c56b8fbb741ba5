package kill

import (
	"encoding/json"
	"errors"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// journalXattr is the extended attribute that records a kill in progress on
// the container's own cgroup directory. The record lives exactly as long as
// the thing it is about: it survives koordlet's restart or replacement (no
// host mount needed) and disappears with the cgroup when the NodeManager
// removes it.
const journalXattr = "trusted.koordlet-yarn.evict"

// JournalEntry is the recorded state of a kill (the journal's value on a
// container's cgroup).
type JournalEntry struct {
	Step   Step      `json:"step"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Journal records the steps of kills on the containers' cgroups, so that a
// koordlet that died mid-kill finishes it when it starts again (Recover). A
// kernel or filesystem without trusted extended attributes on cgroups turns
// it off with one log line: kills then still leave nothing harmful behind
// (see Killer), only an interrupted kill is not finished. A nil *Journal
// records nothing.
type Journal struct {
	mu       sync.Mutex
	disabled bool
	now      func() time.Time
}

// NewJournal returns a journal.
func NewJournal() *Journal { return &Journal{now: time.Now} }

func (j *Journal) record(dir string, step Step, reason string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.disabled {
		return
	}
	b, _ := json.Marshal(JournalEntry{Step: step, Reason: reason, At: j.now()})
	if err := unix.Setxattr(dir, journalXattr, b, 0); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return // the cgroup is gone: nothing to record
		}
		j.disabled = true
		klog.Warningf("yarn: cannot record kills on cgroup %s (%v): a kill interrupted by a koordlet restart will not be finished by the next koordlet", dir, err)
	}
}

func (j *Journal) clear(dir string) {
	if j == nil {
		return
	}
	_ = unix.Removexattr(dir, journalXattr)
}

// read returns the recorded kill on dir.
func (j *Journal) read(dir string) (JournalEntry, bool) {
	var e JournalEntry
	if j == nil {
		return e, false
	}
	buf := make([]byte, 512)
	n, err := unix.Getxattr(dir, journalXattr, buf)
	if err != nil || n <= 0 || json.Unmarshal(buf[:n], &e) != nil {
		return e, false
	}
	return e, true
}

// Recovered is a kill found in the journal at start-up.
type Recovered struct {
	Container string
	Entry     JournalEntry
	// Action is what was done with it (see RecoverAction).
	Action RecoverAction
	// Finished is true when the kill had begun and was finished now;
	// false when nothing had been sent and the container was left alone.
	Finished  bool
	Signalled int
	Remaining int
}

// RecoverAction is what recovery does with a journaled kill.
type RecoverAction string

// The recovery actions.
const (
	// RecoverFinish: the kill had sent a signal; it is finished.
	RecoverFinish RecoverAction = "finished"
	// RecoverNotStarted: nothing had been sent; the container is left
	// running.
	RecoverNotStarted RecoverAction = "not-started"
	// RecoverGateOff: the gate of the strategy that began the kill is off
	// now (a rollback): the container is left running.
	RecoverGateOff RecoverAction = "gate-off"
	// RecoverStale: the kill was begun longer ago than MaxRecoverAge: the
	// pressure it answered is long gone; the container is left running.
	RecoverStale RecoverAction = "stale"
	// RecoverLater: the recovery's time bound ran out first; the entry
	// stays for the next start.
	RecoverLater RecoverAction = "later"
)

// MaxRecoverAge is the oldest journaled kill recovery finishes.
const MaxRecoverAge = 10 * time.Minute

// MaxRecoverTime bounds the whole recovery (it runs in the background,
// after discovery): entries left when it runs out stay for the next start.
const MaxRecoverTime = time.Minute

// DecideRecovery decides what recovery does with a journaled kill: nothing
// sent, left running; begun longer than MaxRecoverAge ago, or under a gate
// that is off now, dropped (left running); else finished.
func DecideRecovery(e JournalEntry, now time.Time, enabled func(featuregate.Feature) bool) RecoverAction {
	if e.Step == StepJournaled {
		return RecoverNotStarted
	}
	if !e.At.IsZero() && now.Sub(e.At) > MaxRecoverAge {
		return RecoverStale
	}
	for _, g := range GatesOfReason(e.Reason) {
		if enabled(g) {
			return RecoverFinish
		}
	}
	return RecoverGateOff
}

// Recover finishes the kills the journal records on the containers' own
// cgroups, left by a koordlet that died mid-kill (see DecideRecovery): a
// kill that had sent a signal under a gate still on, and begun less than
// MaxRecoverAge ago, is finished (SIGKILL passes until the cgroup is
// empty); any other is dropped and the container left running. It stops at
// deadline (zero: none), leaving the remaining entries for the next start.
// Call it once, after the store has been filled, off the
// start-up path.
func (k *Killer) Recover(containers []*store.Container, deadline time.Time) []Recovered {
	var out []Recovered
	if k.Journal != nil {
		for _, c := range containers {
			ctrl, dir, abs, e, ok := k.journaled(c)
			if !ok {
				continue
			}
			r := Recovered{Container: c.Name, Entry: e}
			if !deadline.IsZero() && time.Now().After(deadline) {
				r.Action = RecoverLater
				klog.Warningf("yarn: the recovery of interrupted kills ran out of time; the kill of container %s stays journaled for the next start", c.Name)
				out = append(out, r)
				continue
			}
			r.Action = DecideRecovery(e, time.Now(), features.Enabled)
			switch r.Action {
			case RecoverFinish:
				signalled := map[int]bool{}
				_, r.Remaining = k.killPasses(abs, ctrl, dir, signalled, false)
				r.Signalled, r.Finished = len(signalled), true
				klog.Infof("yarn: finished the kill of container %s (%s, interrupted at %s on %s): signalled %d processes, %d left",
					c.Name, e.Reason, e.Step, e.At.Format(time.RFC3339), r.Signalled, r.Remaining)
			case RecoverNotStarted:
				klog.Infof("yarn: the kill of container %s (%s) was interrupted before any signal; the container is left running", c.Name, e.Reason)
			case RecoverGateOff:
				klog.Infof("yarn: the interrupted kill of container %s (%s) is not finished: its gate is off now; the container is left running", c.Name, e.Reason)
			case RecoverStale:
				klog.Infof("yarn: the interrupted kill of container %s (%s, begun %s) is older than %v and is not finished; the container is left running",
					c.Name, e.Reason, e.At.Format(time.RFC3339), MaxRecoverAge)
			}
			k.Journal.clear(abs)
			out = append(out, r)
		}
	}
	return out
}

// journaled finds the journal entry on any of the container's own cgroups.
func (k *Killer) journaled(c *store.Container) (cgroups.Controller, string, string, JournalEntry, bool) {
	want := k.H.ContainerRelDir(c.Name)
	for _, ctrl := range []cgroups.Controller{cgroups.CPU, cgroups.Memory, cgroups.CPUAcct} {
		ref := c.Cgroups[ctrl]
		if !ref.Owned || ref.Dir != want {
			continue
		}
		abs := k.H.AbsDir(ctrl, ref.Dir)
		if e, ok := k.Journal.read(abs); ok {
			return ctrl, ref.Dir, abs, e, true
		}
	}
	return 0, "", "", JournalEntry{}, false
}
