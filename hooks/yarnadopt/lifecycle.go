package yarnadopt

import (
	"errors"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// What outlives the NodeManager. An adopted process is outside the NM
// pod's cgroup, so the container runtime no longer ends it with the pod
// (or with the NM's container, restarted in its pod). A NodeManager that
// stops cleanly ends its containers itself (the LCE and the
// DefaultContainerExecutor signal each container's session), unless it
// keeps them for a work-preserving restart (yarn.nodemanager.recovery):
// the next NM recovers them and lists them again. A crashed, OOM-killed or
// deleted NM ends nothing: its containers' processes run on in the cgroups
// koordlet made. koordlet ends them (only the processes in that cgroup,
// each verified by a pidfd: the eviction killer) and then removes the
// cgroup, once it has had evidence that no NodeManager runs the container
// for orphanGrace: the ResourceManager's default NM liveness expiry, after
// which it has declared such containers lost and asked for replacements.
//
// Evidence is only ever one of: no NodeManager pod on the node, or the
// NodeManager's latest answer, asked after koordlet knew the container,
// without it or with it finished (store.NMGone). A NodeManager back before
// the grace that lists the container keeps it. One that cannot be asked
// is no evidence, however long: after a koordlet restart the store is
// rebuilt from the cgroup scan, and a container the NodeManager has not
// been asked about is not gone (store.NMNoWord). Nor is a stale omission:
// while the NodeManager cannot be asked the count is held (it neither
// starts, restarts nor ends anything), and only an answer that still
// leaves the container out, or the pod gone, lets it end the container.
// (YARN lists again only the containers a work-preserving restart
// recovers, so an omission on both sides of the gap means the NodeManager
// did not run the container in it; the RM's expiry ran on meanwhile.)

// orphanGrace is how long a container must have been orphaned (see above)
// before koordlet kills what runs on in its cgroup: the RM's default
// yarn.nm.liveness-monitor.expiry-interval-ms.
const orphanGrace = 10 * time.Minute

// leafState is what a sweep knows of one cgroup koordlet made.
type leafState struct {
	// NM is what the NodeManager's answers say of the container (the
	// store's word; with no NM pod on the node it is not read).
	NM store.NMWord
	// Busy: it holds processes.
	Busy bool
	// OrphanFor is how long it has been orphaned before this sweep.
	OrphanFor time.Duration
}

// leafAction is what becomes of a container cgroup koordlet made.
type leafAction int

const (
	leafKeep   leafAction = iota
	leafRemove            // empty: rmdir
	leafOrphan            // orphaned: count the time, keep for now
	leafKill              // orphaned for orphanGrace: kill what runs there
	leafHold              // running, nothing to go by: keep, the count as it is
)

// decideLeaf decides, from data, about one cgroup koordlet made.
// podKnown is false when no NodeManager pod runs on the node; adopting is
// false with the gate off (nothing refills an empty cgroup then).
func decideLeaf(s leafState, podKnown, adopting bool) leafAction {
	// With no NM pod the store's NM view is stale: nothing is listed, and
	// that is evidence.
	listed := podKnown && s.NM == store.NMRuns
	gone := !podKnown || s.NM == store.NMGone
	switch {
	case listed && (s.Busy || adopting):
		return leafKeep // an empty one is refilled at its next process
	case !s.Busy:
		return leafRemove
	case !gone:
		return leafHold // no word from a NodeManager that cannot be asked
	case s.OrphanFor >= orphanGrace:
		return leafKill
	}
	return leafOrphan
}

// lifecycle is the sweep's state (the sweep's goroutine's: the loop's,
// or with the gate off sweepDisabled's): when each container became
// orphaned; and the kills in flight (each in its own goroutine, the killer
// waits its grace), whose map alone mu guards.
type lifecycle struct {
	since   map[string]time.Time
	mu      sync.Mutex
	killing map[string]bool
}

// sweep decides about every cgroup koordlet made (see decideLeaf) and
// acts: removes the empty ones, kills what runs on in orphaned ones.
func (a *Adopter) sweep(h cgroups.Hierarchy, adopting bool) {
	podKnown := false
	if a.opts.NMPodCgroup != nil {
		_, _, podKnown = a.opts.NMPodCgroup()
	}
	now := a.opts.Now()
	lc := &a.life
	if lc.since == nil {
		lc.since = map[string]time.Time{}
	}
	live := map[string]bool{}
	for _, name := range ourLeaves(h) {
		live[name] = true
		_, word := a.opts.Store.NMSays(name)
		s := leafState{NM: word, Busy: leafBusy(h, name)}
		if t, ok := lc.since[name]; ok {
			s.OrphanFor = now.Sub(t)
		}
		switch decideLeaf(s, podKnown, adopting) {
		case leafHold:
		case leafKeep:
			delete(lc.since, name)
		case leafRemove:
			delete(lc.since, name)
			a.removeLeaf(h, name)
		case leafOrphan:
			if _, ok := lc.since[name]; !ok {
				lc.since[name] = now
				klog.Infof("yarn: YARN container %s runs on in the cgroup koordlet made for it, but no NodeManager runs it (%s); its processes are ended in %v unless a NodeManager lists it again", name, orphanReason(podKnown), orphanGrace)
			}
		case leafKill:
			a.killOrphan(name)
		}
	}
	for name := range lc.since {
		if !live[name] {
			delete(lc.since, name)
		}
	}
}

// orphanReason says what the evidence is.
func orphanReason(podKnown bool) string {
	if !podKnown {
		return "no NodeManager pod on the node"
	}
	return "the NodeManager answers without it, or with it finished"
}

// killOrphan ends the processes of an orphaned container, in its own
// goroutine.
func (a *Adopter) killOrphan(name string) {
	lc := &a.life
	if a.opts.Kill == nil {
		a.said.Do("no-killer", func() {
			klog.Warningf("yarn: YARN container %s runs on, listed by no NodeManager: no killer wired, it is left running", name)
		})
		return
	}
	lc.mu.Lock()
	if lc.killing == nil {
		lc.killing = map[string]bool{}
	}
	busy := lc.killing[name]
	lc.killing[name] = true
	lc.mu.Unlock()
	if busy {
		return
	}
	go func() {
		err := a.opts.Kill(name)
		lc.mu.Lock()
		delete(lc.killing, name)
		lc.mu.Unlock()
		if err != nil {
			klog.Warningf("yarn: end the processes of YARN container %s, listed by no NodeManager for %v: %v", name, orphanGrace, err)
			return
		}
		klog.Infof("yarn: ended the processes of YARN container %s, listed by no NodeManager for %v; its cgroup goes once empty", name, orphanGrace)
	}()
}

// removeLeaf removes the cgroup koordlet made for container name once it
// is empty, and forgets its adoption (a.mu held).
func (a *Adopter) removeLeaf(h cgroups.Hierarchy, name string) {
	gone, err := removeLeaf(h, name)
	if err != nil {
		klog.V(4).Infof("yarn: cgroup of the finished container %s not removed yet: %v", name, err)
		return
	}
	if gone {
		if _, ok := a.adoptions[name]; ok {
			klog.V(2).Infof("yarn: removed the cgroup koordlet made for the finished YARN container %s", name)
		}
		delete(a.adoptions, name)
		a.opts.Charges.Forget(name)
	}
}

// leafBusy reports whether any of the container's cgroups holds a process
// (an unreadable one counts as busy).
func leafBusy(h cgroups.Hierarchy, name string) bool {
	dirs, _ := leafDirs(h, name)
	for _, d := range dirs {
		pids, err := cgroups.ReadPids(d)
		if (err != nil && !errors.Is(err, os.ErrNotExist)) || len(pids) > 0 {
			return true
		}
	}
	return false
}

// sweepDisabled runs with the gate off (gates are set at start), every scan interval until no
// cgroup koordlet made is left: the cgroups of containers that finish
// later are removed as they empty, and orphans are ended as with the gate
// on.
func (a *Adopter) sweepDisabled(h cgroups.Hierarchy, stop <-chan struct{}) {
	t := time.NewTicker(a.opts.ScanInterval)
	defer t.Stop()
	for len(ourLeaves(h)) > 0 {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		a.mu.Lock()
		a.sweep(h, false)
		a.mu.Unlock()
	}
}

// removeIfDone removes the cgroup koordlet made for container name once
// the container is gone (not listed, or finished) and the cgroup empty.
func (a *Adopter) removeIfDone(h cgroups.Hierarchy, name string) {
	if !yarn.IsCanonical(name) {
		return
	}
	if _, word := a.opts.Store.NMSays(name); word == store.NMRuns {
		return // the NodeManager still lists it running (an empty cgroup is refilled at its next process)
	}
	a.removeLeaf(h, name)
}

// RestoreDisabled runs with the gate off: it removes the empty cgroups an
// earlier koordlet made, and the others as they empty (sweepDisabled).
// Containers still in theirs run on there: nothing is moved back or
// frozen; only orphans (see lifecycle.go) are ended.
func (a *Adopter) RestoreDisabled() int {
	if a.opts.Hierarchy == nil {
		return 0
	}
	h, ok := a.opts.Hierarchy()
	if !ok {
		return 0
	}
	n, kept := 0, 0
	for _, name := range ourLeaves(h) {
		if gone, err := removeLeaf(h, name); err == nil && gone {
			n++
		} else {
			kept++
		}
	}
	if kept > 0 {
		klog.Infof("yarn: YARNContainerCgroups is off: %d container(s) still run in the cgroups an earlier koordlet made for them; they stay there, and each cgroup goes once it is empty", kept)
		go a.sweepDisabled(h, a.quit)
	}
	return n
}
