package yarnevict

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/koordinator-sh/koordinator/apis/extension"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
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
	for _, c := range containers {
		if !c.HasCgroup() || len(c.Pids) == 0 {
			continue
		}
		if v, ok := containerVictim(c, nmPriority); ok {
			out = append(out, v)
		}
	}
	return out
}

// carryOut evicts the chosen victims: pods through koordlet's executor,
// YARN containers with the killer (each reported on the NodeManager pod).
// It returns the victims evicted.
func carryOut(deps Deps, executor qmutil.EvictionExecutor, rec record.EventRecorder, pods []*statesinformer.PodMeta,
	node *corev1.Node, chosen []Victim, reason string, podMessage func(*Victim) string) []Victim {
	var nmPod *corev1.Pod
	for _, pm := range pods {
		if deps.IsNodeManagerPod(pm.Pod) {
			nmPod = pm.Pod
		}
	}
	var done []Victim
	for i := range chosen {
		v := &chosen[i]
		if v.Pod != nil {
			if executor.Evict(v.Pod, node, qmutil.EvictReasonPrefix+reason, podMessage(v)) {
				done = append(done, *v)
			}
			continue
		}
		k := deps.Killer()
		if k == nil {
			continue
		}
		res, err := k.Kill(v.Container)
		report(rec, deps.Metrics, deps.NodeName, nmPod, v, reason, res, err)
		if err == nil {
			done = append(done, *v)
		}
	}
	return done
}
