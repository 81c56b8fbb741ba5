package yarnevict

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

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
