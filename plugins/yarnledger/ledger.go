// Package yarnledger keeps the node's batch ledger true from the node side:
// YARN's allocations on this node (from the container store, which the
// NodeManager fills) in the hadoop-yarn entry of the Node annotation
// node.koordinator.sh/thirdPartyAllocations, which koord-manager subtracts
// from the Kubernetes batch allocatable; and YARN's capacity on the node
// (origin batch allocatable − the Kubernetes pods' batch requests),
// published at /yarn/ledger, in Prometheus and, optionally, to the
// ResourceManager. The sums are pure functions of their inputs (this file);
// the Node patch, the RM push and the loop are at the edges.
package yarnledger

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/util"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Batch is an amount of batch resource: kubernetes.io/batch-cpu in
// milli-cores and kubernetes.io/batch-memory in bytes.
type Batch struct {
	MilliCPU    int64 `json:"milliCPU"`
	MemoryBytes int64 `json:"memoryBytes"`
}

// Add returns b + o.
func (b Batch) Add(o Batch) Batch {
	return Batch{MilliCPU: b.MilliCPU + o.MilliCPU, MemoryBytes: b.MemoryBytes + o.MemoryBytes}
}

// SubFloor returns b − o, each resource at least 0.
func (b Batch) SubFloor(o Batch) Batch {
	return Batch{MilliCPU: max(b.MilliCPU-o.MilliCPU, 0), MemoryBytes: max(b.MemoryBytes-o.MemoryBytes, 0)}
}

// ResourceList renders b as batch-cpu (milli-cores, an integer) and
// batch-memory (bytes), as koord-manager writes them.
func (b Batch) ResourceList() corev1.ResourceList {
	return corev1.ResourceList{
		apiext.BatchCPU:    *resource.NewQuantity(b.MilliCPU, resource.DecimalSI),
		apiext.BatchMemory: *resource.NewQuantity(b.MemoryBytes, resource.BinarySI),
	}
}

// YARNAllocated sums the requests of the containers the NodeManager lists
// in a non-terminal state (NEW, LOCALIZING, LOCALIZED, RUNNING, KILLING,
// CONTAINER_RESOURCES_CLEANINGUP...): what YARN's scheduler holds on the
// node. A container only seen in cgroups (the NM has not listed it) counts
// nothing; its request is unknown until the NM lists it.
func YARNAllocated(cs []*store.Container) Batch {
	var sum Batch
	for _, c := range cs {
		if c.Source&store.SourceNM == 0 || c.State == "" || yarn.IsTerminalState(c.State) {
			continue
		}
		sum.MilliCPU += c.RequestMilliCPU
		sum.MemoryBytes += c.RequestMemoryBytes
	}
	return sum
}

// KubernetesRequested sums the batch requests (batch-cpu, batch-memory) of
// the active koord-batch pods, as koord-manager counts the node's batch
// requested.
func KubernetesRequested(pods []*corev1.Pod) Batch {
	var sum Batch
	for _, pod := range pods {
		if pod == nil || util.IsPodInactive(pod) || apiext.GetPodPriorityClassWithDefault(pod) != apiext.PriorityBatch {
			continue
		}
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			sum.MilliCPU += max(util.GetContainerBatchMilliCPURequest(c), 0)
			sum.MemoryBytes += max(util.GetContainerBatchMemoryByteRequest(c), 0)
		}
	}
	return sum
}

// Origin reads the node's origin batch allocatable from
// node.koordinator.sh/originExtendedAllocatable; ok is false when the node
// has none (koord-manager does not share batch resources with YARN).
func Origin(node *corev1.Node) (b Batch, ok bool, err error) {
	if node == nil {
		return Batch{}, false, nil
	}
	o, err := slov1alpha1.GetOriginExtendedAllocatable(node.Annotations)
	if err != nil {
		return Batch{}, false, fmt.Errorf("annotation %s: %w", slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey, err)
	}
	if o == nil || o.Resources == nil {
		return Batch{}, false, nil
	}
	cpu, okCPU := o.Resources[apiext.BatchCPU]
	mem, okMem := o.Resources[apiext.BatchMemory]
	if !okCPU && !okMem {
		return Batch{}, false, nil
	}
	// batch-cpu is written in milli-cores as a plain integer.
	return Batch{MilliCPU: cpu.Value(), MemoryBytes: mem.Value()}, true, nil
}

// View is the node's batch ledger at one instant.
type View struct {
	// Origin is the node's original batch allocatable (koord-manager's
	// originExtendedAllocatable); OriginKnown is false without it.
	Origin      Batch `json:"origin"`
	OriginKnown bool  `json:"originKnown"`
	// KubernetesRequested is the koord-batch pods' batch requests.
	KubernetesRequested Batch `json:"kubernetesRequested"`
	// YARNAllocated is what YARN allocated on the node.
	YARNAllocated Batch `json:"yarnAllocated"`
	// YARNCapacity = Origin − KubernetesRequested (at least 0): what the
	// ResourceManager may allocate on the node.
	YARNCapacity Batch `json:"yarnCapacity"`
	// OverCommit = KubernetesRequested + YARNAllocated − Origin (at least
	// 0): what the two schedulers together hold beyond the origin.
	OverCommit Batch `json:"overCommit"`
}

// Compute derives the view from its inputs.
func Compute(origin Batch, originKnown bool, k8s, yarnAlloc Batch) View {
	v := View{Origin: origin, OriginKnown: originKnown, KubernetesRequested: k8s, YARNAllocated: yarnAlloc}
	if originKnown {
		v.YARNCapacity = origin.SubFloor(k8s)
		v.OverCommit = k8s.Add(yarnAlloc).SubFloor(origin)
	}
	return v
}
