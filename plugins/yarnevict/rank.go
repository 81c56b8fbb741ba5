package yarnevict

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koordinator-sh/koordinator/apis/extension"
	"github.com/koordinator-sh/koordinator/pkg/util"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Victim is a BE pod or a YARN container that eviction may choose.
type Victim struct {
	Pod       *corev1.Pod
	Container *store.Container

	// IsAM marks a YARN ApplicationMaster: killing it kills the job attempt.
	IsAM bool
	// Priority orders victims: lower goes first.
	Priority int64
	// EvictBeforePods marks a container whose QoS tier lets it go before
	// the pods of its priority.
	EvictBeforePods bool
	// Started is when the victim started; newer goes first.
	Started time.Time
	// MemoryUsed (bytes) and MilliCPUUsed are its current usage.
	MemoryUsed   int64
	MilliCPUUsed int64
	// MilliCPURequest is its (batch) CPU request: what a CPU eviction by
	// satisfaction releases. MemoryRequest is its memory request in bytes
	// (0: unknown).
	MilliCPURequest int64
	MemoryRequest   int64
	// MemoryGrowth is how much its memory usage grew over the recent
	// window (see growth.Window), in bytes.
	MemoryGrowth int64
	// CPUSeconds is the CPU time it has spent so far: the work its
	// eviction loses.
	CPUSeconds float64
	// Released is the memory its eviction released, measured after the
	// kill, and Holding what it still held then (exiting processes), when
	// releaseMeasured (memory evictions of YARN containers).
	Released, Holding int64
	releaseMeasured   bool

	// Cause marks a victim that is causing the pressure (using more than it
	// requested, or growing); CauseText says how, for the Event. Set by
	// MarkMemoryCause or MarkCPUCause.
	Cause     bool
	CauseText string
	// Label names the victim's priority for explanations (a policy tier,
	// the execution type); empty for pods.
	Label string
	// Trigger is what made the check evict when it is not the
	// threshold's need (the throttle's hold at its floor), put first in
	// Why; empty otherwise.
	Trigger string
	// Why explains, after Plan, why this victim was chosen.
	Why string
}

// Name identifies the victim in logs: a container id or namespace/name.
func (v *Victim) Name() string {
	if v.Container != nil {
		return v.Container.Name
	}
	if v.Pod != nil {
		return v.Pod.Namespace + "/" + v.Pod.Name
	}
	return ""
}

// PodVictim describes a BE pod; its memory request is the sum of its
// containers' batch (else plain) memory requests.
func PodVictim(pod *corev1.Pod, memoryUsed, milliCPUUsed int64) Victim {
	started := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		started = pod.Status.StartTime.Time
	}
	var memReq int64
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if r := util.GetContainerBatchMemoryByteRequest(c); r > 0 {
			memReq += r
		} else if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			memReq += q.Value()
		}
	}
	return Victim{Pod: pod, Priority: int64(*extension.GetPodPriorityValueWithDefault(pod)), Started: started,
		MemoryUsed: memoryUsed, MilliCPUUsed: milliCPUUsed, MemoryRequest: memReq}
}

// ContainerVictim describes a YARN container. YARN containers take the
// NodeManager pod's priority; OPPORTUNISTIC containers rank just below it.
// A container started when its oldest process started (first seen by the
// store when no process start time could be read): first-seen times all
// move to the restart after a koordlet restart, which would make every
// YARN container look newer than every BE pod.
func ContainerVictim(c *store.Container, nmPriority int64, memoryUsed, milliCPUUsed int64) Victim {
	prio := nmPriority
	if c.ExecutionType == yarn.ExecutionOpportunistic {
		prio--
	}
	return Victim{Container: c, IsAM: c.IsAM, Priority: prio, Started: c.StartedOrFirstSeen(),
		MemoryUsed: memoryUsed, MilliCPUUsed: milliCPUUsed,
		MilliCPURequest: c.RequestMilliCPU, MemoryRequest: c.RequestMemoryBytes, Label: c.ExecutionType}
}

// Rank sorts victims in eviction order: ApplicationMasters last; then lower
// priority first (at one priority, containers whose tier lets them go
// before pods first); then the cause of the pressure first (using more than
// requested, or growing); then newest first (start time, then the YARN id,
// which grows with time); then larger usage (of the resource being
// released) first; then by name, for a stable order.
func Rank(vs []Victim, usage func(*Victim) int64) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := &vs[i], &vs[j]
		if c := compareLevel(a, b); c != 0 {
			return c < 0
		}
		if a.Cause != b.Cause {
			return a.Cause
		}
		if !a.Started.Equal(b.Started) {
			return a.Started.After(b.Started)
		}
		if (a.Container == nil) != (b.Container == nil) {
			return a.Container == nil // same instant: pods before containers, so the order stays transitive
		}
		if a.Container != nil && a.Container.ID != b.Container.ID {
			// Started at the same instant (or first seen together, their
			// start times unknown): YARN ids grow with time, so the larger
			// id is the newer container.
			return idLess(b.Container.ID, a.Container.ID)
		}
		if ua, ub := usage(a), usage(b); ua != ub {
			return ua > ub
		}
		return a.Name() < b.Name()
	})
}

// compareLevel orders victims by their eviction level: non-AMs before AMs,
// lower priority first, and at one priority the containers whose tier lets
// them go before pods first. It returns -1, 0 or 1.
func compareLevel(a, b *Victim) int {
	switch {
	case a.IsAM != b.IsAM:
		if !a.IsAM {
			return -1
		}
		return 1
	case a.Priority != b.Priority:
		if a.Priority < b.Priority {
			return -1
		}
		return 1
	case a.EvictBeforePods != b.EvictBeforePods:
		if a.EvictBeforePods {
			return -1
		}
		return 1
	}
	return 0
}

func idLess(a, b yarn.ContainerID) bool {
	for _, p := range [][2]int64{{a.ClusterTimestamp, b.ClusterTimestamp}, {a.AppID, b.AppID}, {a.AttemptID, b.AttemptID}, {a.Epoch, b.Epoch}, {a.Sequence, b.Sequence}} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	return false
}

// MemoryUsage and CPUUsage select the resource a plan releases.
func MemoryUsage(v *Victim) int64 { return v.MemoryUsed }

// CPUUsage returns the victim's CPU usage in milli-cores.
func CPUUsage(v *Victim) int64 { return v.MilliCPUUsed }

// CPURequest returns the victim's CPU request in milli-cores.
func CPURequest(v *Victim) int64 { return v.MilliCPURequest }
