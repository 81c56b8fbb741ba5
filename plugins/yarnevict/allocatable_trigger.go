/*
Copyright 2022 The Koordinator Authors.
Copyright 2026 The koordlet-yarn Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.

Derived from Koordinator v1.8.0 pkg/koordlet/qosmanager/plugins/memoryevict/memory_evict.go and cpuevict/cpu_evict.go (the pod filter of the candidates);
modified for koordlet-yarn.
*/

package yarnevict

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/helpers"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/util"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// AllocatableEvict is the allocatable trigger of a slot
// (MemoryAllocatableEvict or CPUAllocatableEvict). With CountYARN (gate
// YARNAllocatableEvict) it arbitrates the batch resources the Kubernetes
// scheduler and YARN share: the batch requests of the pods plus YARN's
// allocations against the node's origin batch allocatable, releasing down
// to the lower percent from one ranked list of pods and YARN containers (a
// container releases its request; ApplicationMasters last, the NodeManager
// pod never). Without it, it is upstream's trigger on pods.
type AllocatableEvict struct {
	Kind AllocKind
	Deps Deps
	Opts *qmframework.Options
	// CountYARN says whether YARN's allocations count (and YARN
	// containers may be evicted).
	CountYARN func() bool
	Executor  qmutil.EvictionExecutor

	// aboveSince is when this trigger first saw YARN above its capacity
	// (zero: not above); holding says the trigger waits for the RM.
	aboveSince time.Time
	holding    bool
}

// Cycle evaluates the trigger once and evicts; it returns the victims
// evicted and whether an eviction was attempted.
func (a *AllocatableEvict) Cycle(node *corev1.Node, slo *slov1alpha1.NodeSLO) (evicted []AllocVictim, attempted bool) {
	cfg, err := AllocConfigFrom(a.Kind, slo.Spec.ResourceUsedThresholdWithBE)
	if err != nil {
		klog.V(4).Infof("yarn: %s skipped, invalid config: %v", a.Kind.Reason(), err)
		return nil, false
	}
	pods := a.Opts.StatesInformer.GetAllPods()
	countYARN := a.CountYARN != nil && a.CountYARN()
	var nmPod *corev1.Pod
	for _, pm := range pods {
		if a.Deps.IsNodeManagerPod != nil && a.Deps.IsNodeManagerPod(pm.Pod) {
			nmPod = pm.Pod
		}
	}
	var yarnAlloc *YARNAllocation
	var containers []*store.Container
	if countYARN {
		containers = a.Deps.Store.Snapshot()
		yarnAlloc = a.yarnAllocation(node, nmPod, containers)
	}
	podList := podsOf(pods)
	need := AllocatableRelease(a.Kind, cfg, node, podList, yarnAlloc)
	if len(need) == 0 {
		a.aboveSince, a.holding = time.Time{}, false
		return nil, false
	}
	if countYARN && a.holdForRM(time.Now(), podList, yarnAlloc, need) {
		return nil, false
	}
	victims := a.victims(cfg, pods, nmPod, countYARN, containers)
	RankAllocatable(victims)
	plan := PlanAllocatable(victims, need)
	yarnText := "not counted"
	if yarnAlloc != nil {
		yarnText = fmt.Sprintf("%d (origin %d, known %v)", yarnAlloc.Allocated, yarnAlloc.Origin, yarnAlloc.OriginKnown)
	}
	klog.Infof("yarn: %s: requests above %d%% of allocatable, release %v down to %d%% (YARN allocated %s); %d candidates, plan of %d",
		a.Kind.Reason(), cfg.Threshold, need, cfg.Lower, yarnText, len(victims), len(plan))
	evicted, attempted = a.execute(node, nmPod, victims, need)
	if attempted && a.Deps.Metrics != nil {
		resource, _ := releaseUnit(a.Kind)
		a.Deps.Metrics.AddNeeded(a.Deps.NodeName, a.Kind.Reason(), resource, need[a.Kind.batchName()])
	}
	return evicted, attempted
}

// holdForRM says whether the trigger waits for the ResourceManager before
// it kills YARN containers for YARN's over-commit (see HoldForRM): with
// the RM sync running (YARNRMNodeResourceSync), until the RM holds the
// smaller capacity, and with YARNRMPreemption until the RM's preemption
// deadline. It logs when it starts and stops waiting.
func (a *AllocatableEvict) holdForRM(now time.Time, pods []*corev1.Pod, ya *YARNAllocation, need map[corev1.ResourceName]int64) bool {
	if a.Deps.RMSyncDelay == nil || !features.Enabled(features.YARNRMNodeResourceSync) {
		return false
	}
	delay := a.Deps.RMSyncDelay()
	capacity, known := YARNCapacity(a.Kind, pods, ya)
	above := known && ya.Allocated > capacity
	if !above {
		a.aboveSince, a.holding = time.Time{}, false
		return false
	}
	if a.aboveSince.IsZero() {
		a.aboveSince = now
	}
	var (
		ask     rmrelease.Ask
		pending bool
	)
	if features.Enabled(features.YARNRMPreemption) {
		ask, pending = a.Deps.RMRelease.Pending(now)
	}
	held, heldKnown := a.Deps.RMRelease.HeldByRM()
	rmKnows := heldKnown && RMHoldsAtMost(a.Kind, held, capacity)
	hold := HoldForRM(now, above, pending, rmKnows, a.aboveSince, delay)
	switch {
	case hold && !a.holding && pending:
		klog.Infof("yarn: %s: release %v; YARN's allocation is above its capacity and the ResourceManager was asked at %s to preempt %d MB, %d vcores: waiting until %s before killing YARN containers",
			a.Kind.Reason(), need, ask.At.Format(time.RFC3339), ask.MemoryMB, ask.VCores, ask.Deadline().Format(time.RFC3339))
	case hold && !a.holding:
		klog.Infof("yarn: %s: release %v; YARN's allocation is above its capacity and the ResourceManager does not hold the smaller capacity yet: waiting up to %v for the ResourceManager sync to push it before killing YARN containers (a container killed before is replaced on this node)",
			a.Kind.Reason(), need, delay)
	case !hold && a.holding && !rmKnows:
		klog.Warningf("yarn: %s: YARN's allocation is still above its capacity and the ResourceManager was not told the smaller capacity within %v (down, slow, or on standby): koordlet evicts; the RM may place replacements on this node",
			a.Kind.Reason(), delay)
	case !hold && a.holding && !features.Enabled(features.YARNRMPreemption):
		klog.Infof("yarn: %s: the ResourceManager holds YARN's smaller capacity (%d MB, %d vcores): koordlet evicts YARN containers above it",
			a.Kind.Reason(), held.MemoryMB, held.VCores)
	case !hold && (a.holding || a.aboveSince.Equal(now)) && features.Enabled(features.YARNRMPreemption):
		klog.Warningf("yarn: %s: YARN's allocation is still above its capacity and the ResourceManager has not released it (not asked, or its deadline passed): koordlet evicts",
			a.Kind.Reason())
	}
	a.holding = hold
	return hold
}

// releaseUnit names the unit a trigger's need and releases are counted in.
func releaseUnit(kind AllocKind) (resource, unit string) {
	if kind == AllocCPU {
		return "cpu", "milli-cores of request"
	}
	return "memory", "bytes of request"
}

// yarnAllocation reads YARN's allocation, its priority (the NodeManager
// pod's; koord-batch's lowest without one) and the origin batch allocatable.
func (a *AllocatableEvict) yarnAllocation(node *corev1.Node, nmPod *corev1.Pod, cs []*store.Container) *YARNAllocation {
	ya := &YARNAllocation{Allocated: yarnAllocated(a.Kind, cs), Priority: apiext.PriorityBatchValueMin}
	if nmPod != nil {
		ya.Priority = *apiext.GetPodPriorityValueWithDefault(nmPod)
	}
	origin, err := slov1alpha1.GetOriginExtendedAllocatable(node.Annotations)
	if err != nil {
		klog.V(4).Infof("yarn: %s: node annotation %s unreadable, comparing with the allocatable: %v",
			a.Kind.Reason(), slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey, err)
	} else if origin != nil {
		if q, ok := origin.Resources[a.Kind.batchName()]; ok {
			ya.Origin, ya.OriginKnown = q.Value(), true
		}
	}
	return ya
}

// victims lists the pods upstream's allocatable trigger would (active,
// eviction policy allowed, at or below the priority threshold, eviction
// enabled, with a usage sample), the NodeManager pod excluded when YARN
// counts, and, when YARN counts, the YARN containers that hold an
// allocation and can be killed.
func (a *AllocatableEvict) victims(cfg AllocConfig, pods []*statesinformer.PodMeta, nmPod *corev1.Pod, countYARN bool, cs []*store.Container) []AllocVictim {
	metric := metriccache.PodMemUsageMetric
	if a.Kind == AllocCPU {
		metric = metriccache.PodCPUUsageMetric
	}
	interval := a.Opts.MetricAdvisorConfig.CollectResUsedInterval
	var out []AllocVictim
	for _, pm := range pods {
		pod := pm.Pod
		if util.IsPodInactive(pod) || !qmutil.IsEvictionPolicyAllowed(a.Kind.Reason(), pod) {
			continue
		}
		if p := apiext.GetPodPriorityValueWithDefault(pod); p == nil || *p > cfg.PriorityThreshold || !apiext.PodEvictEnabled(pod) {
			continue
		}
		if countYARN && pod == nmPod {
			continue
		}
		if a.Executor != nil && a.Executor.IsPodEvicted(pod) {
			continue
		}
		meta, err := metric.BuildQueryMeta(metriccache.MetricPropertiesFunc.Pod(string(pod.UID)))
		if err != nil {
			continue
		}
		if _, err := helpers.CollectPodMetricLast(a.Opts.MetricCache, meta, interval); err != nil {
			continue
		}
		out = append(out, PodAllocVictim(a.Kind, pod))
	}
	if !countYARN {
		return out
	}
	nmPriority := int32(apiext.PriorityBatchValueMin)
	if nmPod != nil {
		nmPriority = *apiext.GetPodPriorityValueWithDefault(nmPod)
	}
	if nmPriority > cfg.PriorityThreshold {
		return out
	}
	nmLabel := int64(nmPriority)
	if nmPod != nil {
		nmLabel = qmutil.GetPodPriorityLabel(nmPod, int64(nmPriority))
	}
	var flights *kill.Flights
	if a.Deps.Killer != nil {
		if k := a.Deps.Killer(); k != nil {
			flights = k.Flights
		}
	}
	for _, c := range cs {
		if !c.HasCgroup() || len(c.Pids) == 0 || c.Source&store.SourceNM == 0 || yarn.IsTerminalState(c.State) || flights.Busy(c.Name) {
			continue
		}
		v := ContainerAllocVictim(a.Kind, c, nmPriority, nmLabel)
		// The YARN QoS policy's priority, as the usage strategies see it: a
		// rule's priority also stands for the label priority, and a
		// container it puts above the priority threshold is protected like
		// a pod there.
		r := a.Deps.Policy.For(c)
		ApplyPolicy(&v.Victim, r, int64(nmPriority))
		if r.Effective.Priority != nil {
			v.LabelPriority = v.Priority
		}
		if v.Priority > int64(cfg.PriorityThreshold) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// execute evicts as PlanAllocatable plans, going on past failed evictions
// (never turning to an ApplicationMaster because another victim failed).
func (a *AllocatableEvict) execute(node *corev1.Node, nmPod *corev1.Pod, ranked []AllocVictim, need map[corev1.ResourceName]int64) (done []AllocVictim, attempted bool) {
	left := copyNeed(need)
	nonAM := false
	for _, amPass := range []bool{false, true} {
		if amPass && nonAM {
			break
		}
		for i := range ranked {
			v := &ranked[i]
			if v.IsAM != amPass || !releases(*v, left) {
				continue
			}
			if covered(left) {
				return done, attempted
			}
			nonAM = nonAM || !v.IsAM
			ok, skipped := evictOne(a.Deps, a.Executor, a.Opts.EventRecorder, nmPod, node, &v.Victim, order{reason: a.Kind.Reason(), podMessage: func(v *Victim) string {
				return fmt.Sprintf("%s%s, kill pod: %s", qmutil.EvictReasonPrefix, a.Kind.Reason(), v.Pod.Name)
			}})
			attempted = attempted || !skipped
			if ok {
				done = append(done, *v)
				left[v.Resource] -= v.Request
			}
		}
	}
	if !covered(left) && attempted {
		klog.Warningf("yarn: %s could not release all of %v (left %v)", a.Kind.Reason(), need, left)
	}
	return done, attempted
}

func podsOf(pms []*statesinformer.PodMeta) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pms))
	for _, pm := range pms {
		if pm != nil && pm.Pod != nil {
			out = append(out, pm.Pod)
		}
	}
	return out
}
