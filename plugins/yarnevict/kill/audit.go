package kill

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
	"k8s.io/klog/v2"
)

// AuditRecord is one eviction of a YARN container (Kind eviction), or one
// memory pressure episode's decision (Kind relief: YARNMemoryRelief), as
// the audit keeps it.
type AuditRecord struct {
	Time time.Time `json:"time"`
	// Kind is AuditEviction or AuditRelief; a record without one (written
	// before relief existed) is an eviction.
	Kind        string `json:"kind,omitempty"`
	Node        string `json:"node,omitempty"`
	Reason      string `json:"reason"`
	Container   string `json:"container"`
	Application string `json:"application,omitempty"`
	User        string `json:"user,omitempty"`
	AM          bool   `json:"am"`
	// Outcome is succeeded or failed.
	Outcome string `json:"outcome"`
	// Resource and Released: what the eviction released, in the unit of
	// the reason's need (memory bytes, CPU milli-cores); 0 when it failed.
	Resource string `json:"resource"`
	Released int64  `json:"released"`
	// Holding is memory its exiting processes still held when reported.
	Holding int64 `json:"holding,omitempty"`
	// Why the plan chose it; Error why it failed.
	Why   string `json:"why,omitempty"`
	Error string `json:"error,omitempty"`
	// Relief is the episode's account (Kind relief only).
	Relief *ReliefEpisodeRecord `json:"relief,omitempty"`
}

// The kinds of audit records.
const (
	// AuditEviction: a YARN container killed (Container names it).
	AuditEviction = "eviction"
	// AuditRelief: a memory pressure episode over, Outcome the rung that
	// relieved it (throttle, resourcemanager, evict, none); no container
	// was killed for it unless Outcome is evict.
	AuditRelief = "relief"
)

// IsEviction reports whether r is a container's eviction (not an
// episode's record).
func (r AuditRecord) IsEviction() bool { return r.Kind != AuditRelief }

// ReliefEpisodeRecord is one memory pressure episode as the audit keeps
// it: from node memory's entry into the throttle band to its release.
type ReliefEpisodeRecord struct {
	Start    time.Time `json:"start"`
	Duration string    `json:"duration"`
	// PeakUsedBytes is the highest node memory used at a check;
	// ThresholdBytes the BE memory evict threshold at that check.
	PeakUsedBytes  int64 `json:"peakUsedBytes"`
	ThresholdBytes int64 `json:"thresholdBytes"`
	// LowestHighBytes is the lowest memory.high the throttle wrote on the
	// YARN root (0: none, as on cgroup v1).
	LowestHighBytes int64 `json:"lowestHighBytes,omitempty"`
	// AskedMB is the most the ResourceManager was asked to release.
	AskedMB int64 `json:"askedMB,omitempty"`
	// Crossed: node memory reached the threshold (the kill's rung acted);
	// Floored: the throttle reached its floor.
	Crossed bool `json:"crossed"`
	Floored bool `json:"floored"`
	// FloorKill: YARN containers were killed because the throttle held
	// the YARN root at its floor past its bound (FloorHold).
	FloorKill bool `json:"floorKill,omitempty"`
	// Interrupted: koordlet stopped (or the rungs were turned off) during
	// the episode; Outcome is what relieved it so far.
	Interrupted bool `json:"interrupted,omitempty"`
}

// DefaultAuditKeep is how many records the audit serves (/yarn/evictions).
const DefaultAuditKeep = 500

// DefaultAuditMaxMiB is the size, in MiB, at which the audit file is
// rotated (lumberjack: one old file kept, named with the rotation's UTC
// time, yarn-evictions-2006-01-02T15-04-05.000.jsonl).
const DefaultAuditMaxMiB = 10

// Audit keeps a record of every eviction where Kubernetes Events cannot:
// the event correlator merges, then drops, similar Events on one object
// (the NodeManager pod) after about ten in ten minutes. The recent records
// are served at /yarn/evictions; with a file, each is also appended as one
// JSON line (rotated by lumberjack at maxMiB, one old file kept), which
// survives koordlet restarts. A nil *Audit records nothing.
type Audit struct {
	mu sync.Mutex
	// pathOf gives the file (read at the first record: koordlet parses
	// its flags after the framework is built); path is what it gave.
	pathOf   func() string
	resolved bool
	path     string
	maxMiB   int
	// file writes and rotates the audit file; made at the first record.
	file   *lumberjack.Logger
	keep   int
	ring   []AuditRecord
	next   int
	total  int
	failed bool
}

// NewAudit returns an audit keeping keep records in memory and, when path
// gives a file, appending to it, rotated at maxMiB MiB.
func NewAudit(path func() string, keep int, maxMiB int) *Audit {
	if keep <= 0 {
		keep = DefaultAuditKeep
	}
	if maxMiB <= 0 {
		maxMiB = DefaultAuditMaxMiB
	}
	if path == nil {
		path = func() string { return "" }
	}
	return &Audit{pathOf: path, keep: keep, maxMiB: maxMiB}
}

// Record keeps r.
func (a *Audit) Record(r AuditRecord) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ring) < a.keep {
		a.ring = append(a.ring, r)
	} else {
		a.ring[a.next] = r
	}
	a.next = (a.next + 1) % a.keep
	a.total++
	a.resolve()
	if a.path != "" && !a.failed {
		if err := a.append(r); err != nil {
			a.failed = true
			klog.Warningf("yarn: cannot write the eviction audit file %s (%v): evictions are kept in memory only (the last %d, at /yarn/evictions) and in koordlet's log", a.path, err, a.keep)
		}
	}
}

func (a *Audit) append(r AuditRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if a.file == nil {
		// The file is made here, not by lumberjack, which would make its
		// directory: a missing one (a host path not mounted) means memory
		// only, said once, never a new directory on the host. Made 0644,
		// a mode lumberjack's rotations keep (its own new files are 0600).
		f, err := os.OpenFile(a.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", a.path, err)
		}
		a.file = &lumberjack.Logger{Filename: a.path, MaxSize: a.maxMiB, MaxBackups: 1}
	}
	_, err = a.file.Write(append(b, '\n'))
	return err
}

// Recent returns the records kept in memory, oldest first, and how many
// were recorded since koordlet started.
func (a *Audit) Recent() (records []AuditRecord, total int) {
	if a == nil {
		return nil, 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ring) < a.keep {
		return append([]AuditRecord(nil), a.ring...), a.total
	}
	out := append([]AuditRecord(nil), a.ring[a.next:]...)
	return append(out, a.ring[:a.next]...), a.total
}

// Path is the audit file ("" when none).
func (a *Audit) Path() string {
	if a == nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.resolve()
	return a.path
}

// resolve reads the path once. The caller holds a.mu.
func (a *Audit) resolve() {
	if !a.resolved {
		a.resolved, a.path = true, a.pathOf()
	}
}
