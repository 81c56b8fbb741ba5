package yarnevict

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// execute evicts from the ranked victims what they release (by measure)
// toward need: it plans with PlanProtectingAMs and carries the plan out —
// pods through koordlet's executor, YARN containers with the killer, each
// reported on the NodeManager pod. When an eviction fails it plans again
// over the victims not yet tried, never turning to an ApplicationMaster
// because another victim failed. When the plan is carried out but falls
// short of the need it stops: ApplicationMasters are taken only when the
// cycle began with no other victim, never in the same cycle after their
// executors (the next check sees what those released). A container another
// strategy is killing (or has just evicted) is skipped without a report.
// The first plan is the decision: planned (nil: none) is told what it
// covers before any eviction, for the strategy's decision line. It
// returns the victims evicted, what they released, and whether any
// eviction was attempted.
func execute(deps Deps, executor qmutil.EvictionExecutor, rec record.EventRecorder, pods []*statesinformer.PodMeta,
	node *corev1.Node, ranked []Victim, need int64, measure func(*Victim) int64, o order,
	planned func(covered int64)) (done []Victim, released int64, attempted bool) {
	var nmPod *corev1.Pod
	for _, pm := range pods {
		if deps.IsNodeManagerPod(pm.Pod) {
			nmPod = pm.Pod
		}
	}
	tried := map[string]bool{}
	allowAM := true
	for round := 0; released < need; round++ {
		var left []Victim
		for _, v := range ranked {
			if !tried[v.Name()] && (allowAM || !v.IsAM) {
				left = append(left, v)
			}
		}
		chosen, covered := PlanProtectingAMs(left, need-released, measure)
		if round == 0 && planned != nil {
			planned(covered)
		}
		if len(chosen) == 0 {
			break
		}
		if round == 0 {
			// AMs only when the cycle began with nothing else to take.
			allowAM = !slices.ContainsFunc(chosen, func(v Victim) bool { return !v.IsAM })
		}
		failed := false
		outcomes := evictRound(deps, executor, rec, nmPod, node, chosen, o)
		for i := range chosen {
			v := &chosen[i]
			tried[v.Name()] = true
			attempted = attempted || !outcomes[i].skipped
			switch {
			case outcomes[i].ok:
				done = append(done, *v)
				released += measure(v)
				if v.releaseMeasured { // what it did not release after all
					released -= v.MemoryUsed - v.Released
				}
			case !outcomes[i].skipped:
				failed = true
			}
		}
		if !failed {
			break
		}
		allowAM = false
	}
	return done, released, attempted
}

// order is one strategy's request to evict: its reason, the Event message
// of a pod it evicts, and how to read what a killed container still holds
// (held nil: not measured; the victim's usage counts as released).
type order struct {
	reason     string
	podMessage func(*Victim) string
	held       func(*store.Container) (kill.Held, bool)
}

// outcome is what evicting one victim came to.
type outcome struct{ ok, skipped bool }

// evictRound evicts the victims of one plan: pods one after the other
// through koordlet's executor (its eviction returns once asked), YARN
// containers all at once, each kill in its own goroutine: a kill waits out
// its SIGTERM grace and its processes' exit, so killing a plan's containers
// one after the other would delay the last one's release by a grace per
// victim before it. Reports are made as each kill ends.
func evictRound(deps Deps, executor qmutil.EvictionExecutor, rec record.EventRecorder, nmPod *corev1.Pod, node *corev1.Node,
	chosen []Victim, o order) []outcome {
	out := make([]outcome, len(chosen))
	var containers []int
	for i := range chosen {
		if chosen[i].Pod != nil {
			out[i].ok, out[i].skipped = evictOne(deps, executor, rec, nmPod, node, &chosen[i], o)
		} else {
			containers = append(containers, i)
		}
	}
	if len(containers) == 1 {
		i := containers[0]
		out[i].ok, out[i].skipped = evictOne(deps, executor, rec, nmPod, node, &chosen[i], o)
		return out
	}
	var wg sync.WaitGroup
	for _, i := range containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].ok, out[i].skipped = evictOne(deps, executor, rec, nmPod, node, &chosen[i], o)
		}()
	}
	wg.Wait()
	return out
}

// evictOne evicts one victim; skipped is true when nothing was attempted
// (no killer yet, or another strategy has the container).
func evictOne(deps Deps, executor qmutil.EvictionExecutor, rec record.EventRecorder, nmPod *corev1.Pod, node *corev1.Node,
	v *Victim, o order) (ok, skipped bool) {
	reason := o.reason
	if v.Pod != nil {
		return executor.Evict(v.Pod, node, qmutil.EvictReasonPrefix+reason, o.podMessage(v)), false
	}
	k := deps.Killer()
	if k == nil {
		return false, true
	}
	res, err := k.KillFor(v.Container, reason)
	if errors.Is(err, kill.ErrInFlight) || errors.Is(err, kill.ErrAlreadyEvicted) {
		klog.V(3).Infof("yarn: %s skips container %s: %v", reason, v.Container.Name, err)
		return false, true
	}
	if err == nil && o.held != nil && v.MemoryUsed > 0 {
		// Released only when it is: the kill ends when the processes
		// are gone or exiting, not when their memory is free.
		released, still, known := kill.MeasureRelease(v.MemoryUsed, func() (kill.Held, bool) { return o.held(v.Container) }, kill.ReleaseWait, time.Sleep)
		if known {
			v.Released, v.Holding, v.releaseMeasured = released, still, true
			if released <= 0 {
				err = fmt.Errorf("container %s: its processes were killed but none of its %dMi was released within %v: %w",
					v.Container.Name, v.MemoryUsed>>20, kill.ReleaseWait, kill.ErrNothingReleased)
			}
		}
	}
	report(rec, deps.Metrics, deps.Audit, deps.NodeName, nmPod, v, reason, res, err)
	return err == nil, false
}
