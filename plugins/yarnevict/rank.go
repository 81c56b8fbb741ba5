package yarnevict

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koordinator-sh/koordinator/apis/extension"

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
	// Started is when the victim started; newer goes first.
	Started time.Time
	// MemoryUsed (bytes) and MilliCPUUsed are its current usage.
	MemoryUsed   int64
	MilliCPUUsed int64
	// MilliCPURequest is its (batch) CPU request: what a CPU eviction by
	// satisfaction releases.
	MilliCPURequest int64
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

// PodVictim describes a BE pod.
func PodVictim(pod *corev1.Pod, memoryUsed, milliCPUUsed int64) Victim {
	started := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		started = pod.Status.StartTime.Time
	}
	return Victim{Pod: pod, Priority: int64(*extension.GetPodPriorityValueWithDefault(pod)), Started: started,
		MemoryUsed: memoryUsed, MilliCPUUsed: milliCPUUsed}
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
		MemoryUsed: memoryUsed, MilliCPUUsed: milliCPUUsed}
}

// Rank sorts victims in eviction order: ApplicationMasters last; then lower
// priority first; then newest first (start time, then the YARN id, which
// grows with time); then larger usage (of the resource being
// released) first; then by name, for a stable order.
func Rank(vs []Victim, usage func(*Victim) int64) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := &vs[i], &vs[j]
		if a.IsAM != b.IsAM {
			return !a.IsAM
		}
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
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

// Plan takes victims in ranked order until their usage covers need, and
// stops: it never takes more than it must. Victims using nothing are
// skipped (evicting them releases nothing).
func Plan(ranked []Victim, need int64, usage func(*Victim) int64) (chosen []Victim, covered int64) {
	for i := range ranked {
		if covered >= need {
			break
		}
		u := usage(&ranked[i])
		if u <= 0 {
			continue
		}
		chosen = append(chosen, ranked[i])
		covered += u
	}
	return chosen, covered
}

func idLess(a, b yarn.ContainerID) bool {
	for _, p := range [][2]int64{{a.ClusterTimestamp, b.ClusterTimestamp}, {a.AppID, b.AppID}, {a.AttemptID, b.AttemptID}, {a.Epoch, b.Epoch}, {a.Sequence, b.Sequence}} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	return false
}

// PlanProtectingAMs plans like Plan over the ranked victims, but takes
// ApplicationMasters only when no other victim is left: while any non-AM
// victim exists, the plan holds non-AM victims only, even if they do not
// cover the need (the next cycle re-evaluates once they are gone). Killing
// an AM kills its job attempt, so it is the last resort.
func PlanProtectingAMs(ranked []Victim, need int64, usage func(*Victim) int64) (chosen []Victim, covered int64) {
	var others []Victim
	for _, v := range ranked {
		if !v.IsAM && usage(&v) > 0 {
			others = append(others, v)
		}
	}
	if len(others) > 0 {
		return Plan(others, need, usage)
	}
	return Plan(ranked, need, usage)
}

// MemoryUsage and CPUUsage select the resource a plan releases.
func MemoryUsage(v *Victim) int64 { return v.MemoryUsed }

// CPUUsage returns the victim's CPU usage in milli-cores.
func CPUUsage(v *Victim) int64 { return v.MilliCPUUsed }

// CPURequest returns the victim's CPU request in milli-cores.
func CPURequest(v *Victim) int64 { return v.MilliCPURequest }
