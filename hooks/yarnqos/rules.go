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

Derived from Koordinator v1.8.0 pkg/koordlet/qosmanager/plugins/cgreconcile/cgroup_reconcile.go (the Memory QoS values);
modified for koordlet-yarn.
*/

// Package yarnqos applies koordlet's BE QoS to every YARN container: CPU QoS
// (Group Identity bvt or cgroup sched-idle), Memory QoS (memory.min/low/high
// and the Anolis watermark, priority and oom-group files) and L3 CAT / MBA
// (the container's tasks join koordlet's resctrl BE group). Values come from
// the NodeSLO's BE class with the semantics koordlet uses for BE pods; they
// are applied when a container appears, when its processes, cgroups or
// memory request change, when the NodeSLO changes and on a periodic
// reconcile, all through koordlet's resource executor. memory.min/low/high
// derive from the request and wait until the NodeManager has reported it.
package yarnqos

import (
	"math"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// CPURule is the CPU QoS of BE containers.
type CPURule struct {
	// BVT is the Group Identity value (cpu.bvt_warp_ns): the BE class's
	// groupIdentity under the groupIdentity policy with BE CPU QoS on; 0
	// (none) otherwise.
	BVT int64
	// Idle is cpu.idle: 1 under the coreSched policy with BE CPU QoS on and
	// schedIdle=1; 0 otherwise.
	Idle int64
}

// CPURuleOf derives the rule from the NodeSLO spec as koordlet's
// groupidentity and coresched hooks do for BE pods.
func CPURuleOf(spec *slov1alpha1.NodeSLOSpec) CPURule {
	var r CPURule
	if spec == nil || spec.ResourceQOSStrategy == nil || spec.ResourceQOSStrategy.BEClass == nil ||
		spec.ResourceQOSStrategy.BEClass.CPUQOS == nil {
		return r
	}
	q := spec.ResourceQOSStrategy
	be := q.BEClass.CPUQOS
	if be.Enable == nil || !*be.Enable {
		return r
	}
	policy := slov1alpha1.CPUQOSPolicyGroupIdentity
	if q.Policies != nil && q.Policies.CPUPolicy != nil && *q.Policies.CPUPolicy != "" {
		policy = *q.Policies.CPUPolicy
	}
	switch policy {
	case slov1alpha1.CPUQOSPolicyGroupIdentity:
		if be.GroupIdentity != nil {
			r.BVT = *be.GroupIdentity
		}
	case slov1alpha1.CPUQOSPolicyCoreSched:
		if be.SchedIdle != nil && *be.SchedIdle == 1 {
			r.Idle = 1
		}
	}
	return r
}

// MemoryValues are the Memory QoS files of one container; nil is not set.
type MemoryValues struct {
	Min, Low, High                            *int64
	WmarkRatio, WmarkScaleFactor, WmarkMinAdj *int64
	Priority, UsePriorityOom, OomGroup        *int64
}

// MemoryValuesOf computes a container's Memory QoS from the BE class's
// MemoryQOS with koordlet's container semantics (cgreconcile): min and low
// are percents of the request; high is request + (limit − request) ×
// throttlingPercent, page aligned, with the node's allocatable as the limit
// when the container has none, and "max" when throttlingPercent is 0; low
// and high are raised to at least min. request and limit are in bytes
// (limit ≤ 0: none). It returns false when the BE class's Memory QoS is off.
func MemoryValuesOf(spec *slov1alpha1.NodeSLOSpec, request, limit, nodeAllocatable int64) (MemoryValues, bool) {
	var v MemoryValues
	if spec == nil || spec.ResourceQOSStrategy == nil || spec.ResourceQOSStrategy.BEClass == nil {
		return v, false
	}
	mq := spec.ResourceQOSStrategy.BEClass.MemoryQOS
	if mq == nil || mq.Enable == nil || !*mq.Enable {
		return v, false
	}
	q := mq.MemoryQOS
	v.WmarkRatio, v.WmarkScaleFactor, v.WmarkMinAdj = q.WmarkRatio, q.WmarkScalePermill, q.WmarkMinAdj
	v.UsePriorityOom, v.Priority, v.OomGroup = q.PriorityEnable, q.Priority, q.OomKillGroup
	if request < 0 {
		request = 0
	}
	if q.MinLimitPercent != nil {
		v.Min = i64(request * *q.MinLimitPercent / 100)
	}
	if q.LowLimitPercent != nil {
		v.Low = i64(request * *q.LowLimitPercent / 100)
	}
	if q.ThrottlingPercent != nil {
		switch {
		case *q.ThrottlingPercent == 0:
			v.High = i64(int64(math.MaxInt64))
		case limit > 0:
			v.High = i64((request + (limit-request)**q.ThrottlingPercent/100) / system.PageSize * system.PageSize)
		default:
			v.High = i64((request + (nodeAllocatable-request)**q.ThrottlingPercent/100) / system.PageSize * system.PageSize)
		}
	}
	if v.Min != nil && v.Low != nil && *v.Low > 0 && *v.Low < *v.Min {
		*v.Low = *v.Min
	}
	if v.High != nil && v.Min != nil && *v.High > 0 && *v.High < *v.Min {
		*v.High = *v.Min
	}
	return v, true
}

// ResctrlEnabled reports whether the BE class asks for L3 CAT / MBA.
func ResctrlEnabled(spec *slov1alpha1.NodeSLOSpec) bool {
	if spec == nil || spec.ResourceQOSStrategy == nil || spec.ResourceQOSStrategy.BEClass == nil {
		return false
	}
	r := spec.ResourceQOSStrategy.BEClass.ResctrlQOS
	return r != nil && r.Enable != nil && *r.Enable
}

func i64(v int64) *int64 { return &v }
