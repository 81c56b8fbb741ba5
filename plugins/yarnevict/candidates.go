package yarnevict

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/apis/extension"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// candidates lists the victims both evict strategies choose from: BE pods
// (never the NodeManager pod while it has live YARN containers; none koordlet
// already evicted) and running YARN containers. podVictim and
// containerVictim fill in the usage of the resource being released;
// containerVictim returns false for a container without usage yet.
func candidates(deps Deps, executor qmutil.EvictionExecutor, pods []*statesinformer.PodMeta,
	podVictim func(*corev1.Pod) Victim, containerVictim func(*store.Container, int64) (Victim, bool)) []Victim {
	containers := deps.Store.Snapshot()
	live := false
	for _, c := range containers {
		if c.HasCgroup() {
			live = true
			break
		}
	}
	nmPriority := int64(extension.PriorityBatchValueMin)
	var out []Victim
	for _, pm := range pods {
		pod := pm.Pod
		if deps.IsNodeManagerPod(pod) {
			nmPriority = int64(*extension.GetPodPriorityValueWithDefault(pod))
			if live {
				continue
			}
		}
		if extension.GetPodQoSClassRaw(pod) != extension.QoSBE || executor.IsPodEvicted(pod) {
			continue
		}
		out = append(out, podVictim(pod))
	}
	var flights *kill.Flights
	if k := deps.Killer(); k != nil {
		flights = k.Flights
	}
	for _, c := range containers {
		if !c.HasCgroup() || len(c.Pids) == 0 || flights.Busy(c.Name) {
			continue
		}
		if v, ok := containerVictim(c, nmPriority); ok {
			ApplyPolicy(&v, deps.Policy.For(c), nmPriority)
			out = append(out, v)
		}
	}
	return out
}

// ApplyPolicy gives a container victim what the YARN QoS policy resolved
// for it: its priority, whether its tier goes before pods, a label naming
// the rule, and the AM the ResourceManager names (amContainerLogs) when the
// node's environment did not decide.
func ApplyPolicy(v *Victim, r policy.Resolved, nmPriority int64) {
	c := v.Container
	if c == nil {
		return
	}
	// Data naming an earlier attempt's AM says nothing of a later
	// attempt's containers (its AM is new): it is fetched again meanwhile.
	if r.AppKnown && r.App.AMContainer != "" && c.AMSource != store.AMFromEnvironment &&
		(r.App.AMAttempt == 0 || c.ID.AttemptID <= r.App.AMAttempt) {
		v.IsAM = c.Name == r.App.AMContainer
	}
	v.Priority = policy.EffectivePriority(r.Effective, c.ExecutionType, nmPriority)
	v.EvictBeforePods = r.EvictBeforePods
	var parts []string
	if c.ExecutionType != "" {
		parts = append(parts, c.ExecutionType)
	}
	if r.AppKnown && r.App.Queue != "" {
		parts = append(parts, "queue "+r.App.Queue)
	}
	if r.Rule != "" {
		parts = append(parts, "policy rule "+r.Rule)
	}
	if r.Tier != "" {
		parts = append(parts, "tier "+r.Tier)
	}
	v.Label = strings.Join(parts, ", ")
}

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
// It returns the victims evicted, what they released, and whether any
// eviction was attempted.
func execute(deps Deps, executor qmutil.EvictionExecutor, rec record.EventRecorder, pods []*statesinformer.PodMeta,
	node *corev1.Node, ranked []Victim, need int64, measure func(*Victim) int64, reason string,
	podMessage func(*Victim) string) (done []Victim, released int64, attempted bool) {
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
		chosen, _ := PlanProtectingAMs(left, need-released, measure)
		if len(chosen) == 0 {
			break
		}
		if round == 0 {
			// AMs only when the cycle began with nothing else to take.
			allowAM = !slices.ContainsFunc(chosen, func(v Victim) bool { return !v.IsAM })
		}
		failed := false
		outcomes := evictRound(deps, executor, rec, nmPod, node, chosen, reason, podMessage)
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

// outcome is what evicting one victim came to.
type outcome struct{ ok, skipped bool }

// evictRound evicts the victims of one plan: pods one after the other
// through koordlet's executor (its eviction returns once asked), YARN
// containers all at once, each kill in its own goroutine: a kill waits out
// its SIGTERM grace and its processes' exit, so killing a plan's containers
// one after the other would delay the last one's release by a grace per
// victim before it. Reports are made as each kill ends.
func evictRound(deps Deps, executor qmutil.EvictionExecutor, rec record.EventRecorder, nmPod *corev1.Pod, node *corev1.Node,
	chosen []Victim, reason string, podMessage func(*Victim) string) []outcome {
	out := make([]outcome, len(chosen))
	var containers []int
	for i := range chosen {
		if chosen[i].Pod != nil {
			out[i].ok, out[i].skipped = evictOne(deps, executor, rec, nmPod, node, &chosen[i], reason, podMessage)
		} else {
			containers = append(containers, i)
		}
	}
	if len(containers) == 1 {
		i := containers[0]
		out[i].ok, out[i].skipped = evictOne(deps, executor, rec, nmPod, node, &chosen[i], reason, podMessage)
		return out
	}
	var wg sync.WaitGroup
	for _, i := range containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].ok, out[i].skipped = evictOne(deps, executor, rec, nmPod, node, &chosen[i], reason, podMessage)
		}()
	}
	wg.Wait()
	return out
}

// evictOne evicts one victim; skipped is true when nothing was attempted
// (no killer yet, or another strategy has the container).
func evictOne(deps Deps, executor qmutil.EvictionExecutor, rec record.EventRecorder, nmPod *corev1.Pod, node *corev1.Node,
	v *Victim, reason string, podMessage func(*Victim) string) (ok, skipped bool) {
	if v.Pod != nil {
		return executor.Evict(v.Pod, node, qmutil.EvictReasonPrefix+reason, podMessage(v)), false
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
	if err == nil && deps.held != nil && v.MemoryUsed > 0 {
		// Released only when it is: the kill ends when the processes
		// are gone or exiting, not when their memory is free.
		released, still, known := kill.MeasureRelease(v.MemoryUsed, func() (kill.Held, bool) { return deps.held(v.Container) }, kill.ReleaseWait, time.Sleep)
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
