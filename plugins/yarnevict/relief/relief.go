// Package relief is the memory relief ladder's rungs before the kill
// (YARNMemoryRelief), which the YARN-aware BE memory evict strategy runs at
// each check: the throttle on the YARN root's memory.high (cgroup v2) or
// its soft limit (v1), the release asked of the ResourceManager for a slow
// pressure, and the bound on a throttle held at its floor, past which it
// asks the strategy for a kill (Escalation). Its decisions are pure
// (ThrottlePlan, RMAskPlan, FloorHold.Next); Relief does the I/O, and
// ReliefRestorer gives the root its own values back when relief is off.
package relief

import (
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/logonce"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/growth"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// Relief is the memory relief ladder's rungs before the kill
// (YARNMemoryRelief), run by the YARN-aware BE memory evict strategy at
// each check:
//   - cgroup v2: the throttle (ThrottlePlan) on the YARN root's
//     memory.high, whose write reclaims the root's page cache first;
//   - cgroup v1 (no memory.high): the YARN root's memory soft limit set
//     to 0 (once the root exists, and again on a root made anew), so that
//     the kernel's global reclaim prefers batch's page cache — a shift, not
//     an order: the kernel's LRU still weighs how recently each was used
//     (TestV1Guest).
//
// Every value goes through a RootFile (recorded, given back). A root whose
// memory.high another writer changes is left to it from then on (the band
// still frames the episode and the RM rung). A throttle that holds the
// root at its floor while the root presses against it is bounded
// (FloorHold): then the RM is asked, or the strategy kills (Check's
// Escalation).
//
// The rungs run only inside koordlet's BE memory evict (see Enabled).
type Relief struct {
	// High and Soft write the root's memory.high (v2) and soft limit (v1).
	High, Soft *cgroups.RootFile
	// BandPercent is the throttle's band, in percent of node memory
	// (--yarn-memory-throttle-band-percent, read after the flags are
	// parsed).
	BandPercent func() int64
	Metrics     *Metrics
	NodeName    string
	// RM is where a release is asked of the ResourceManager for a slow
	// pressure (the RM rung; nil: none); RMReady says whether the RM
	// sync runs with YARNRMPreemption (it pushes the ask); RMDelay is how
	// long the RM takes to release once asked; Allocated is YARN's
	// memory allocation on the node, MiB (the ledger's).
	RM        *rmrelease.Window
	RMReady   func() bool
	RMDelay   func() time.Duration
	Allocated func() int64
	// FloorHoldLimit bounds the throttle's hold at its floor (0:
	// DefaultFloorHoldLimit).
	FloorHoldLimit time.Duration
	// Audit keeps each episode's decision (a record of kind relief).
	Audit *kill.Audit
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu sync.Mutex
	// rel is the root last acted on ("": none).
	rel string
	// foreign: another writer changed the root's memory.high; the
	// throttle stays off on it.
	foreign bool
	// soft: the soft limit is set on rel, whose directory had inode
	// softIno then (a directory made anew, by a NodeManager's restart,
	// has the root's own soft limit again).
	soft    bool
	softIno uint64
	// episode is the pressure episode under way (nil: none).
	episode *reliefEpisode
	// said holds the failures already warned of (later ones at V(4)).
	said logonce.Set
	// growth follows node memory at the checks (the RM rung).
	growth growth.Tracker
	// hold is the throttle's hold at its floor.
	hold FloorHold
}

// Escalation is a kill the rungs ask of the memory strategy although node
// memory is below the threshold: the throttle held the YARN root at its
// floor past its bound (FloorHold).
type Escalation struct {
	// Release is the node memory to release by killing YARN containers,
	// in bytes (0: none).
	Release int64
	// Why says why, for the decision line, the audit and the Event.
	Why string
}

// reliefEpisode is one stay of node memory in the throttle band or above.
type reliefEpisode struct {
	crossed, floored bool
	// floorKill: YARN containers were killed for the throttle's hold at
	// its floor.
	floorKill bool
	// askedMB is the release asked of the RM (0: none).
	askedMB int64
	start   time.Time
	// peak and threshold: node memory's highest use at a check and the
	// threshold then; lowestHigh the lowest memory.high written (0: none).
	peak, threshold, lowestHigh int64
}

// Levels are one check's node memory figures, in bytes.
type Levels struct {
	// Used is node memory used (koordlet's: MemTotal − MemAvailable);
	// Threshold and Lower the levels of memoryEvictThresholdPercent and
	// memoryEvictLowerPercent (0: no threshold); Capacity the node's.
	Used, Threshold, Lower, Capacity int64
}

// Enabled is the gate, with what runs the rungs: the YARN-aware BE memory
// evict, which koordlet's memory slot runs only with koordlet's own
// BEMemoryEvict. With either off nothing of relief runs: what an earlier
// koordlet left is given back at the start (ReliefRestorer) and counted
// as pending (/yarn/restore).
func (r *Relief) Enabled() bool {
	return r != nil && features.Enabled(features.YARNMemoryRelief) && features.Enabled(features.YARNBEMemoryEvict) &&
		koordfeatures.DefaultKoordletFeatureGate.Enabled(koordfeatures.BEMemoryEvict)
}

// v2 reports whether the node's cgroups are v2.
func v2Cgroups() bool { return system.GetCurrentCgroupVersion() == system.CgroupVersionV2 }

// Check runs the rungs for the YARN root rel at the check's levels. It
// returns the kill the strategy is to make below the threshold (none
// mostly; see FloorHold): the strategy reports what it evicted with
// Evicted.
func (r *Relief) Check(rel string, lv Levels) Escalation {
	if !r.Enabled() || rel == "" {
		return Escalation{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rel != "" && r.rel != rel {
		r.releaseLocked("the YARN hierarchy moved")
		if r.soft && r.Soft != nil {
			if _, _, err := r.Soft.Restore(r.rel); err != nil {
				klog.Warningf("yarn: memory relief: give the soft limit of %s back: %v", r.rel, err)
			}
		}
		r.soft, r.foreign = false, false
	}
	r.rel = rel
	var d ThrottleDecision
	throttled := false
	if v2Cgroups() {
		d, throttled = r.throttleLocked(rel, lv.Used, lv.Threshold, lv.Capacity)
	} else {
		r.softLimitLocked(rel)
	}
	if !throttled {
		// No throttle (v1, another writer's memory.high, a root that
		// cannot be read or written): the band still frames the
		// episode, and the RM rung.
		d = r.bandLocked(lv)
	}
	r.askRMLocked(lv, d)
	esc := r.holdLocked(lv, d)
	r.noteEpisodeLocked(lv.Used, lv.Threshold, d)
	return esc
}

// bandLocked is the throttle band's frame of an episode without a
// throttle: in it or not (Release), nothing written, never at a floor.
func (r *Relief) bandLocked(lv Levels) ThrottleDecision {
	d := ThrottlePlan(ThrottleInput{Used: lv.Used, Threshold: lv.Threshold, Band: lv.Capacity * r.BandPercent() / 100,
		Throttled: r.episode != nil, Own: cgroups.MemoryUnlimited})
	return ThrottleDecision{Release: d.Release, Start: d.Start}
}

// holdLocked bounds the throttle's hold at its floor (FloorHold): past the
// bound it asks the RM (its rung on) or returns the kill, down to the
// throttle's start (where it gives the root half the band to grow in).
func (r *Relief) holdLocked(lv Levels, d ThrottleDecision) Escalation {
	now := r.clock()
	alloc := r.allocatedMB()
	h, step := r.hold.Next(HoldInput{AtFloor: d.Floor && !d.Release, Held: d.Held, Now: now, Limit: r.FloorHoldLimit,
		RM: r.rmReady() && alloc > 0, RMDelay: r.rmDelay()})
	r.hold = h
	if step == HoldWait {
		return Escalation{}
	}
	need := max(lv.Used-d.Start, 0)
	why := fmt.Sprintf("the memory throttle held the YARN hierarchy at its floor (memory.high %dMi, its memory pressing against it) for %v over %d checks, node memory staying in the band under the threshold (%dMi, threshold %dMi): its allocations stall",
		d.High>>20, now.Sub(h.Since).Round(time.Second), h.Checks, lv.Used>>20, lv.Threshold>>20)
	if step == HoldAskRM {
		releaseMB := min((need+1<<20-1)>>20, alloc)
		r.RM.AskUsage(alloc - releaseMB)
		if r.episode != nil {
			r.episode.askedMB = max(r.episode.askedMB, releaseMB)
		}
		klog.Infof("yarn: memory relief: %s; asking the ResourceManager to release %d MB of YARN's %d MB on the node (capacity at most %d MB)", why, releaseMB, alloc, alloc-releaseMB)
		return Escalation{}
	}
	if !h.AskedAt.IsZero() {
		why += fmt.Sprintf("; the ResourceManager, asked %v ago, has not released", now.Sub(h.AskedAt).Round(time.Second))
	}
	return Escalation{Release: need, Why: why}
}

// Evicted records that the strategy acted on node memory: for the
// Escalation Check returned (forHold; also when it found nothing to kill,
// so that it is not asked again at every check), or at the threshold. The
// hold is measured anew from now.
func (r *Relief) Evicted(forHold bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold.Since.IsZero() {
		return // no hold under way
	}
	r.hold = r.hold.Killed(r.clock())
	if forHold && r.episode != nil {
		r.episode.floorKill = true
	}
}

// rmReady reports whether the RM rung can ask.
func (r *Relief) rmReady() bool { return r.RM != nil && r.RMReady != nil && r.RMReady() }

// rmDelay is how long the RM takes to release once asked (0: unknown).
func (r *Relief) rmDelay() time.Duration {
	if r.RMDelay == nil {
		return 0
	}
	return r.RMDelay()
}

// allocatedMB is YARN's memory allocation on the node, MiB (0: unknown).
func (r *Relief) allocatedMB() int64 {
	if r.Allocated == nil {
		return 0
	}
	return r.Allocated()
}

// clock is r.Now, or time.Now.
func (r *Relief) clock() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// askRMLocked is the RM rung: in an episode, a growth slow enough for the
// ResourceManager to release before the threshold is asked of it
// (RMAskPlan); the ask is withdrawn when the episode ends.
func (r *Relief) askRMLocked(lv Levels, d ThrottleDecision) {
	if !r.rmReady() {
		return
	}
	now := r.clock()
	if d.Release || lv.Threshold <= 0 {
		r.growth.Reset()
		if _, ok := r.RM.UsageAsk(); ok {
			r.RM.EndUsage()
			klog.Infof("yarn: memory relief: pressure over, the release asked of the ResourceManager is withdrawn")
		}
		return
	}
	if r.growth.Window == 0 {
		r.growth.Window = growth.Window
	}
	r.growth.Add(now, lv.Used)
	rate, ok := r.growth.Rate()
	if !ok {
		return
	}
	delay, alloc := r.rmDelay(), r.allocatedMB()
	a := RMAskPlan(RMAskInput{Used: lv.Used, Start: d.Start, Threshold: lv.Threshold, Lower: lv.Lower, Rate: rate, RMDelay: delay, AllocatedMB: alloc})
	if !a.Ask {
		return
	}
	prev, asked := r.RM.UsageAsk()
	capMB := alloc - a.ReleaseMB
	r.RM.AskUsage(capMB)
	if r.episode != nil {
		r.episode.askedMB = max(r.episode.askedMB, a.ReleaseMB)
	}
	if !asked || capMB < prev {
		klog.Infof("yarn: memory relief: node memory %dMi grows %.1fMi/s, the threshold %dMi in %v, later than the ResourceManager can release (%v): asking it to release %d MB of YARN's %d MB on the node (capacity at most %d MB)",
			lv.Used>>20, rate/(1<<20), lv.Threshold>>20, a.TimeToThreshold.Round(time.Second), delay.Round(time.Second), a.ReleaseMB, alloc, capMB)
	}
}

// softLimitLocked sets the root's v1 soft limit to 0, and again when the
// root's directory is made anew (the NodeManager's restart); a root that
// does not exist yet is tried again at the next check.
func (r *Relief) softLimitLocked(rel string) {
	if r.Soft == nil {
		return
	}
	ino, ok := dirInode(r.Soft.Dir(rel))
	if r.soft {
		if !ok || ino == r.softIno {
			return
		}
		klog.Infof("yarn: memory relief: the YARN hierarchy %s was made anew: its memory soft limit is set again", rel)
		r.soft = false
	}
	if err := r.Soft.Set(rel, 0); err != nil {
		r.sayOnce("soft", "yarn: memory relief: cannot set the soft limit of the YARN hierarchy %s (%v); the kernel's global reclaim does not prefer batch until it can (tried at every check)", rel, err)
		return
	}
	r.soft, r.softIno = true, ino
	klog.Infof("yarn: memory relief: the YARN hierarchy %s has memory soft limit 0: under global memory pressure the kernel's reclaim prefers batch's page cache (cgroup v1 has no memory.high: no throttle)", rel)
}

// dirInode is dir's inode number (ok false: no such directory).
func dirInode(dir string) (uint64, bool) {
	if dir == "" {
		return 0, false
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// throttleLocked decides and writes the root's memory.high; throttled is
// false when the throttle does not act on the root (another writer's
// memory.high, a root that cannot be read or written).
func (r *Relief) throttleLocked(rel string, used, threshold, capacity int64) (d ThrottleDecision, throttled bool) {
	if r.foreign || r.High == nil {
		return d, false
	}
	reader := resourceexecutor.NewCgroupReader()
	written, wrote := r.High.Written(rel)
	// A record left by an earlier koordlet is a throttle of koordlet's
	// too: released or taken over by this one.
	ours := wrote || r.High.Recorded(rel)
	if wrote {
		// The kernel keeps memory.high in pages: what it reads back
		// may be up to a page below what was written.
		now, err := r.High.Read(rel)
		if err == nil && (now > written || written-now >= int64(os.Getpagesize())) {
			r.foreign = true
			r.High.Forget(rel) // its value now: a restore would overwrite it
			klog.Warningf("yarn: memory relief: the memory.high of the YARN hierarchy %s is %d, not the %d koordlet wrote: another writer owns it; koordlet's throttle stays off on it (the ResourceManager rung and the kill go on)", rel, now, written)
			return d, false
		}
	}
	in := ThrottleInput{Used: used, Threshold: threshold, Band: capacity * r.BandPercent() / 100, Throttled: ours, Own: cgroups.MemoryUnlimited}
	switch {
	case wrote:
		in.Written = written
	case ours:
		// An earlier koordlet's throttle (its record is there): the
		// value on the file is the one to hold, not to chase past.
		if now, err := r.High.Read(rel); err == nil && now < cgroups.MemoryUnlimited {
			in.Written = now
		}
	}
	if own, err := r.High.Own(rel); err == nil {
		in.Own = own
	}
	cur, err := reader.ReadMemoryUsage(rel)
	if err != nil {
		r.sayOnce("read", "yarn: memory relief: cannot read the memory of the YARN hierarchy %s (%v); no throttle", rel, err)
		return d, false
	}
	st, err := reader.ReadMemoryStat(rel)
	if err != nil {
		r.sayOnce("read", "yarn: memory relief: cannot read the memory of the YARN hierarchy %s (%v); no throttle", rel, err)
		return d, false
	}
	in.Current, in.Reclaimable = int64(cur), st.ActiveFile+st.InactiveFile
	d = ThrottlePlan(in)
	d.High &^= int64(os.Getpagesize()) - 1 // as the kernel keeps it
	switch {
	case d.Release && ours:
		if restored, v, err := r.High.Restore(rel); err != nil {
			klog.Warningf("yarn: memory relief: release the throttle of %s: %v", rel, err)
		} else if restored {
			klog.Infof("yarn: memory relief: node memory %dMi below the throttle's start %dMi: the YARN hierarchy's memory.high is back to %s", used>>20, d.Start>>20, highString(v))
		}
		r.setGauge(0)
	case !d.Release && (!wrote || written != d.High) && d.High > 0:
		if err := r.High.Set(rel, d.High); err != nil {
			r.sayOnce("write", "yarn: memory relief: cannot throttle the YARN hierarchy %s (%v)", rel, err)
			return ThrottleDecision{}, false
		}
		if !ours {
			klog.Infof("yarn: memory relief: node memory %dMi at the throttle's start %dMi (threshold %dMi): the YARN hierarchy's memory.high %dMi (charged %dMi, %dMi page cache)",
				used>>20, d.Start>>20, threshold>>20, d.High>>20, in.Current>>20, in.Reclaimable>>20)
		} else {
			klog.V(2).Infof("yarn: memory relief: memory.high of the YARN hierarchy %dMi (node %dMi, floor %t)", d.High>>20, used>>20, d.Floor)
		}
		r.setGauge(d.High)
	}
	return d, true
}

// noteEpisodeLocked follows the pressure episode and counts, at its end,
// which rung relieved it: the throttle (the threshold never crossed) or
// the next rungs.
func (r *Relief) noteEpisodeLocked(used, threshold int64, d ThrottleDecision) {
	in := !d.Release
	if r.episode == nil {
		if !in {
			return
		}
		r.episode = &reliefEpisode{start: r.clock()}
	}
	e := r.episode
	e.crossed = e.crossed || (threshold > 0 && used >= threshold)
	e.floored = e.floored || (in && d.Floor)
	if !in {
		r.endEpisodeLocked(false)
		return
	}
	if used > e.peak {
		e.peak, e.threshold = used, threshold
	}
	// The throttle's value (v2 only: on v1 the plan frames the episode
	// and nothing is written).
	if v2Cgroups() && d.High > 0 && d.High != cgroups.MemoryUnlimited && (e.lowestHigh == 0 || d.High < e.lowestHigh) {
		e.lowestHigh = d.High
	}
}

// endEpisodeLocked counts the episode under way by the rung that relieved
// it and keeps its record in the audit; interrupted: koordlet stops (or
// the rungs are turned off) before it is over.
func (r *Relief) endEpisodeLocked(interrupted bool) {
	e := r.episode
	if e == nil {
		return
	}
	r.episode = nil
	by := "throttle"
	switch {
	case e.crossed || e.floorKill:
		by = "evict"
	case e.askedMB > 0:
		by = "resourcemanager"
	case e.lowestHigh == 0:
		by = "none" // no throttle written (v1, another writer's memory.high): nothing of relief acted
	}
	now := r.clock()
	rec := &kill.ReliefEpisodeRecord{Start: e.start, Duration: now.Sub(e.start).Round(time.Millisecond).String(),
		PeakUsedBytes: e.peak, ThresholdBytes: e.threshold, LowestHighBytes: e.lowestHigh, AskedMB: e.askedMB,
		Crossed: e.crossed, Floored: e.floored, FloorKill: e.floorKill, Interrupted: interrupted}
	why := fmt.Sprintf("node memory peaked at %dMi (threshold %dMi) over %s", e.peak>>20, e.threshold>>20, rec.Duration)
	if e.lowestHigh > 0 {
		why += fmt.Sprintf("; the YARN hierarchy's memory.high down to %dMi", e.lowestHigh>>20)
	}
	if e.askedMB > 0 {
		why += fmt.Sprintf("; the ResourceManager asked to release %d MB", e.askedMB)
	}
	if interrupted {
		klog.Infof("yarn: memory relief: koordlet stops during a pressure episode (%s); relieved so far by the %s", why, by)
	} else {
		klog.Infof("yarn: memory relief: pressure episode over, relieved by the %s (threshold crossed %t, throttle at its floor %t): %s", by, e.crossed, e.floored, why)
		if r.Metrics != nil {
			r.Metrics.ReliefEpisodes.WithLabelValues(r.NodeName, by).Inc()
		}
	}
	r.Audit.Record(kill.AuditRecord{Time: now, Kind: kill.AuditRelief, Node: r.NodeName, Reason: "memory", Outcome: by,
		Resource: "memory", Why: why, Relief: rec})
}

// Release gives the root's memory.high back (koordlet stopping, or the
// gate off); the soft limit too when all is true.
func (r *Relief) Release(why string, all bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endEpisodeLocked(true)
	r.releaseLocked(why)
	if all && r.rel != "" && r.Soft != nil {
		if restored, _, err := r.Soft.Restore(r.rel); err != nil {
			klog.Warningf("yarn: memory relief: give the soft limit of %s back: %v", r.rel, err)
		} else if restored {
			klog.Infof("yarn: memory relief: the soft limit of the YARN hierarchy %s is back (%s)", r.rel, why)
		}
		r.soft = false
	}
}

func (r *Relief) releaseLocked(why string) {
	if r.rel == "" || r.High == nil {
		return
	}
	if restored, v, err := r.High.Restore(r.rel); err != nil {
		klog.Warningf("yarn: memory relief: give the memory.high of %s back: %v", r.rel, err)
	} else if restored {
		klog.Infof("yarn: memory relief: the memory.high of the YARN hierarchy %s is back to %s (%s)", r.rel, highString(v), why)
	}
	r.setGauge(0)
}

func (r *Relief) setGauge(v int64) {
	if r.Metrics != nil {
		r.Metrics.ThrottleBytes.WithLabelValues(r.NodeName).Set(float64(v))
	}
}

// sayOnce warns of a failure the first time key fails, at V(4) after.
func (r *Relief) sayOnce(key, format string, args ...any) {
	if !r.said.First(key) {
		klog.V(4).Infof(format, args...)
		return
	}
	klog.Warningf(format, args...)
}

func highString(v int64) string {
	if v >= cgroups.MemoryUnlimited {
		return "max"
	}
	return fmt.Sprintf("%dMi", v>>20)
}

// ReliefRestorer gives the YARN root its own memory.high and soft limit
// back when koordlet runs without memory relief after one that had it (a
// framework loop that is never enabled; see the framework's Restorer).
type ReliefRestorer struct {
	Relief *Relief
	// Hierarchy returns the YARN hierarchy dir ("" when unknown).
	Hierarchy func() string
}

// Name names the loop.
func (r *ReliefRestorer) Name() string { return "YARN memory relief restore" }

// Enabled is always false: it only restores.
func (r *ReliefRestorer) Enabled() bool { return false }

// Run does nothing.
func (r *ReliefRestorer) Run(<-chan struct{}) {}

// RestoreDisabled gives back what an earlier koordlet's relief left on the
// root (its records), unless relief runs now; it returns how many values
// it gave back.
func (r *ReliefRestorer) RestoreDisabled() int {
	if r.Relief == nil || r.Relief.Enabled() || r.Hierarchy == nil {
		return 0
	}
	h := r.Hierarchy()
	if h == "" {
		return 0
	}
	n := 0
	for _, f := range []*cgroups.RootFile{r.Relief.High, r.Relief.Soft} {
		if f == nil || !f.Recorded(h) {
			continue
		}
		if restored, _, err := f.Restore(h); err != nil {
			klog.Warningf("yarn: memory relief is off: give the YARN hierarchy %s its own value back: %v", h, err)
		} else if restored {
			n++
		}
	}
	if n > 0 {
		klog.Infof("yarn: memory relief is off: the YARN hierarchy %s has its own memory.high / soft limit back", h)
	}
	return n
}

// Pending counts the values relief left on the root rel (records): -1
// while rel is not known.
func (r *Relief) Pending(rel string) int {
	if rel == "" {
		return -1
	}
	n := 0
	for _, f := range []*cgroups.RootFile{r.High, r.Soft} {
		if f != nil && f.Recorded(rel) {
			n++
		}
	}
	return n
}
