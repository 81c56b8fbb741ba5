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

Derived from Koordinator v1.8.0 pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict.go and memoryevict/memory_evict.go (the allocatable-threshold config check and release arithmetic);
modified for koordlet-yarn.
*/

package yarnevict

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"

	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// AllocKind selects the resource an allocatable trigger arbitrates.
type AllocKind int

// Allocatable kinds.
const (
	AllocMemory AllocKind = iota
	AllocCPU
)

// resource is the generic resource name upstream's request helpers take.
func (k AllocKind) resource() corev1.ResourceName {
	if k == AllocCPU {
		return corev1.ResourceCPU
	}
	return corev1.ResourceMemory
}

// Reason is the trigger's eviction reason.
func (k AllocKind) Reason() string {
	if k == AllocCPU {
		return kill.ReasonCPUAllocatableEvict
	}
	return kill.ReasonMemoryAllocatableEvict
}

// AllocConfig is the NodeSLO part an allocatable trigger uses.
type AllocConfig struct {
	Threshold, Lower  int64
	PriorityThreshold int32
}

// AllocConfigFrom checks and reads the trigger's NodeSLO settings as
// upstream's isAllocatableThresholdConfigValid does.
func AllocConfigFrom(kind AllocKind, cfg *slov1alpha1.ResourceThresholdStrategy) (AllocConfig, error) {
	if cfg == nil {
		return AllocConfig{}, fmt.Errorf("ResourceThresholdStrategy not config")
	}
	threshold, lower := cfg.MemoryAllocatableEvictThresholdPercent, cfg.MemoryAllocatableEvictLowerPercent
	name := "MemoryAllocatableEvict"
	if kind == AllocCPU {
		threshold, lower = cfg.CPUAllocatableEvictThresholdPercent, cfg.CPUAllocatableEvictLowerPercent
		name = "CPUAllocatableEvict"
	}
	switch {
	case threshold == nil:
		return AllocConfig{}, fmt.Errorf("%sThresholdPercent not config", name)
	case *threshold < 0:
		return AllocConfig{}, fmt.Errorf("threshold percent(%v) should equal or greater than 0", *threshold)
	case lower == nil:
		return AllocConfig{}, fmt.Errorf("%sLowerPercent not config", name)
	case *lower >= *threshold:
		return AllocConfig{}, fmt.Errorf("lower percent(%v) should less than threshold percent(%v)", *lower, *threshold)
	case cfg.AllocatableEvictPriorityThreshold == nil:
		return AllocConfig{}, fmt.Errorf("AllocatableEvictPriorityThreshold not config")
	case *cfg.AllocatableEvictPriorityThreshold > apiext.PriorityMidValueMax:
		return AllocConfig{}, fmt.Errorf("priorityThresholdPercent(%v) should less than %v, koor-prod pods should not be killed",
			*cfg.AllocatableEvictPriorityThreshold, apiext.PriorityMidValueMax)
	}
	return AllocConfig{Threshold: *threshold, Lower: *lower, PriorityThreshold: *cfg.AllocatableEvictPriorityThreshold}, nil
}

// YARNAllocation is what YARN holds on the node for the allocatable
// triggers: its allocation (batch-cpu milli-cores or batch-memory bytes),
// the priority its containers take (the NodeManager pod's), and the node's
// origin batch allocatable the sum is compared with when koord-manager
// records one.
type YARNAllocation struct {
	Allocated int64
	Priority  int32
	// Origin is the origin batch allocatable of the trigger's resource;
	// OriginKnown is false without node.koordinator.sh/originExtendedAllocatable.
	Origin      int64
	OriginKnown bool
}

// batchName is the batch resource of kind.
func (k AllocKind) batchName() corev1.ResourceName {
	if k == AllocCPU {
		return apiext.BatchCPU
	}
	return apiext.BatchMemory
}

// AllocatableRelease is upstream's allocatable rule with YARN counted: per
// extended resource (batch, mid), the requests of the pods at or below the
// priority threshold — plus, for the batch resource, YARN's allocation
// when yarn is not nil and its priority is within the threshold — are
// compared with the node's allocatable of that resource (for the batch
// resource with YARN counted: the origin batch allocatable, as koord-manager
// subtracts YARN's allocation from the allocatable it publishes). Above
// threshold percent it releases down to lower percent; a requested resource
// the node has no allocatable of is released whole. With yarn nil it is
// upstream's calculation exactly (memory and CPU keep their own rounding).
func AllocatableRelease(kind AllocKind, cfg AllocConfig, node *corev1.Node, pods []*corev1.Pod, yarnAlloc *YARNAllocation) map[corev1.ResourceName]int64 {
	release := map[corev1.ResourceName]int64{}
	if cfg.Threshold < 0 || node == nil {
		return release
	}
	requested := map[corev1.ResourceName]int64{}
	for _, pod := range pods {
		if p := apiext.GetPodPriorityValueWithDefault(pod); p == nil || *p > cfg.PriorityThreshold {
			continue
		}
		rt, v := qmutil.GetRequestTypeAndValueFromPod(pod, kind.resource())
		if rt == "" {
			continue
		}
		requested[rt] += v
	}
	allocatable := func(rt corev1.ResourceName) (int64, bool) {
		q, ok := node.Status.Allocatable[rt]
		if !ok || q.IsZero() {
			return 0, false
		}
		return qmutil.ConvertQuantityToInt64(rt, q), true
	}
	batch := kind.batchName()
	origin, originOK := allocatable(batch)
	if yarnAlloc != nil && yarnAlloc.Priority <= cfg.PriorityThreshold {
		if yarnAlloc.Allocated > 0 {
			requested[batch] += yarnAlloc.Allocated
		}
		if yarnAlloc.OriginKnown {
			origin, originOK = yarnAlloc.Origin, yarnAlloc.Origin > 0
		}
	}
	for rt, rq := range requested {
		sum, ok := allocatable(rt)
		if rt == batch {
			sum, ok = origin, originOK
		}
		if !ok {
			release[rt] = rq
			continue
		}
		rqValue, sumValue := float64(rq), float64(sum)
		if rqValue/sumValue <= float64(cfg.Threshold)/100 {
			continue
		}
		if kind == AllocCPU {
			release[rt] = int64(rqValue - float64(cfg.Lower)/100*sumValue)
		} else {
			release[rt] = int64((rqValue/sumValue - float64(cfg.Lower)/100) * sumValue)
		}
	}
	for rt, v := range release {
		if v <= 0 {
			delete(release, rt)
		}
	}
	return release
}

// AllocVictim is a victim of an allocatable trigger: a pod or a YARN
// container with what evicting it releases (its request of the trigger's
// resource, under its extended resource name).
type AllocVictim struct {
	Victim
	// LabelPriority is koordinator.sh/priority (the NodeManager pod's for
	// YARN containers).
	LabelPriority int64
	// Resource and Request: what the victim releases.
	Resource corev1.ResourceName
	Request  int64
}

// PodAllocVictim describes a pod for kind.
func PodAllocVictim(kind AllocKind, pod *corev1.Pod) AllocVictim {
	prio := *apiext.GetPodPriorityValueWithDefault(pod)
	rt, req := qmutil.GetRequestTypeAndValueFromPod(pod, kind.resource())
	v := AllocVictim{Victim: PodVictim(pod, 0, 0), LabelPriority: qmutil.GetPodPriorityLabel(pod, int64(prio)), Resource: rt, Request: req}
	v.Priority = int64(prio)
	return v
}

// ContainerAllocVictim describes a YARN container for kind: it releases its
// request as the batch resource, with the NodeManager pod's priorities.
func ContainerAllocVictim(kind AllocKind, c *store.Container, nmPriority int32, nmLabelPriority int64) AllocVictim {
	v := AllocVictim{Victim: ContainerVictim(c, int64(nmPriority), 0, 0), LabelPriority: nmLabelPriority, Resource: kind.batchName()}
	if kind == AllocCPU {
		v.Request = c.RequestMilliCPU
		v.MilliCPURequest = c.RequestMilliCPU
	} else {
		v.Request = c.RequestMemoryBytes
		v.MemoryUsed = c.RequestMemoryBytes // what it releases, for the report
	}
	return v
}

// RankAllocatable orders the victims of an allocatable trigger. With no
// YARN container among them it is upstream's order exactly — lower
// priority first, then lower koordinator.sh/priority label, then larger
// request — so the trigger evicts what upstream's would. With YARN
// containers it is the order of the usage strategies (Rank) with the label
// priority after the priority: ApplicationMasters last, lower priority,
// lower label, then the newest first (then the larger YARN id, then the
// larger request), so that the allocation that over-committed the node,
// whichever scheduler placed it, is released first.
func RankAllocatable(vs []AllocVictim) {
	newestFirst := false
	for i := range vs {
		if vs[i].Container != nil {
			newestFirst = true
			break
		}
	}
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := &vs[i], &vs[j]
		if a.IsAM != b.IsAM {
			return !a.IsAM
		}
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if a.EvictBeforePods != b.EvictBeforePods {
			return a.EvictBeforePods // a policy tier that goes before pods of its priority
		}
		if a.LabelPriority != b.LabelPriority {
			return a.LabelPriority < b.LabelPriority
		}
		if newestFirst {
			if !a.Started.Equal(b.Started) {
				return a.Started.After(b.Started)
			}
			if (a.Container == nil) != (b.Container == nil) {
				return a.Container == nil
			}
			if a.Container != nil && a.Container.ID != b.Container.ID {
				return idLess(b.Container.ID, a.Container.ID)
			}
		}
		if a.Request != b.Request {
			return a.Request > b.Request
		}
		return a.Name() < b.Name()
	})
}

// PlanAllocatable takes ranked victims until what they release covers
// every resource of need, skipping victims that release none of what is
// still needed; ApplicationMasters only when no other victim releases
// anything needed.
func PlanAllocatable(ranked []AllocVictim, need map[corev1.ResourceName]int64) []AllocVictim {
	var chosen []AllocVictim
	left := copyNeed(need)
	for _, amPass := range []bool{false, true} {
		if amPass && len(chosen) > 0 {
			break
		}
		for _, v := range ranked {
			if v.IsAM != amPass {
				continue
			}
			if covered(left) {
				return chosen
			}
			if !releases(v, left) {
				continue
			}
			chosen = append(chosen, v)
			left[v.Resource] -= v.Request
		}
	}
	return chosen
}

func copyNeed(need map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(need))
	for k, v := range need {
		out[k] = v
	}
	return out
}

// releases reports whether v releases something of what is still needed.
func releases(v AllocVictim, left map[corev1.ResourceName]int64) bool {
	return v.Request > 0 && left[v.Resource] > 0
}

func covered(left map[corev1.ResourceName]int64) bool {
	for _, v := range left {
		if v > 0 {
			return false
		}
	}
	return true
}

// yarnAllocated sums the requests of the YARN containers the NodeManager
// lists in a non-terminal state (what YARN allocated on the node).
func yarnAllocated(kind AllocKind, cs []*store.Container) int64 {
	var sum int64
	for _, c := range cs {
		if c.Source&store.SourceNM == 0 || c.State == "" || yarn.IsTerminalState(c.State) {
			continue
		}
		if kind == AllocCPU {
			sum += c.RequestMilliCPU
		} else {
			sum += c.RequestMemoryBytes
		}
	}
	return sum
}

// YARNCapacity is YARN's capacity on the node for kind: the origin batch
// allocatable less the batch requests of the pods (koord-manager's and the
// ledger's YARN capacity); ok is false when the origin is not known.
func YARNCapacity(kind AllocKind, pods []*corev1.Pod, yarnAlloc *YARNAllocation) (capacity int64, ok bool) {
	if yarnAlloc == nil || !yarnAlloc.OriginKnown {
		return 0, false
	}
	var k8s int64
	for _, pod := range pods {
		if rt, v := qmutil.GetRequestTypeAndValueFromPod(pod, kind.resource()); rt == kind.batchName() {
			k8s += v
		}
	}
	return max(yarnAlloc.Origin-k8s, 0), true
}

// YARNAboveCapacity reports whether YARN's allocation is above its
// capacity on the node for kind (YARNCapacity). Only then can the
// ResourceManager release anything by preemption.
func YARNAboveCapacity(kind AllocKind, pods []*corev1.Pod, yarnAlloc *YARNAllocation) bool {
	c, ok := YARNCapacity(kind, pods, yarnAlloc)
	return ok && yarnAlloc.Allocated > c
}

// RMHoldsAtMost reports whether the capacity the ResourceManager holds for
// the node (its units: whole MiB, whole vcores) is at most capacity (bytes
// or milli-cores, by kind): then the RM places nothing more on the node
// than YARN's capacity, and a container killed here is not replaced here.
func RMHoldsAtMost(kind AllocKind, held rmrelease.Capacity, capacity int64) bool {
	if kind == AllocCPU {
		return held.VCores*1000 <= capacity
	}
	return held.MemoryMB<<20 <= capacity
}

// HoldForRM decides whether an allocatable trigger waits for the
// ResourceManager instead of killing YARN containers now, while YARN is
// above its capacity: while the RM was asked to preempt (pending, until
// the ask's deadline: YARNRMPreemption), or while the RM is not known to
// hold the smaller capacity (rmKnows false) and the RM sync has not had
// the time to push it (syncDelay since the trigger first saw the
// over-commit). A container killed while the RM still holds the larger
// capacity is replaced on the same node at the RM's next heartbeat, and
// killed again. Afterwards — the RM is down, slow, or did not release —
// the trigger kills.
func HoldForRM(now time.Time, above, pending, rmKnows bool, aboveSince time.Time, syncDelay time.Duration) bool {
	if !above {
		return false
	}
	return pending || (!rmKnows && now.Sub(aboveSince) < syncDelay)
}
