package yarnqos

import (
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
)

// TierSpec returns spec with the BE class's CPU and Memory QoS overridden
// by a YARN QoS policy tier (fields the tier leaves unset keep the BE
// class's value). spec itself is not changed; without overrides it is
// returned as is.
func TierSpec(spec *slov1alpha1.NodeSLOSpec, e policy.Effective) *slov1alpha1.NodeSLOSpec {
	if spec == nil || (e.CPUQoS == nil && e.MemoryQoS == nil) {
		return spec
	}
	out := spec.DeepCopy()
	if out.ResourceQOSStrategy == nil {
		out.ResourceQOSStrategy = &slov1alpha1.ResourceQOSStrategy{}
	}
	if out.ResourceQOSStrategy.BEClass == nil {
		out.ResourceQOSStrategy.BEClass = &slov1alpha1.ResourceQOS{}
	}
	be := out.ResourceQOSStrategy.BEClass
	if c := e.CPUQoS; c != nil {
		if be.CPUQOS == nil {
			be.CPUQOS = &slov1alpha1.CPUQOSCfg{}
		}
		set(&be.CPUQOS.Enable, c.Enable)
		set(&be.CPUQOS.CPUQOS.GroupIdentity, c.GroupIdentity)
		set(&be.CPUQOS.CPUQOS.SchedIdle, c.SchedIdle)
	}
	if m := e.MemoryQoS; m != nil {
		if be.MemoryQOS == nil {
			be.MemoryQOS = &slov1alpha1.MemoryQOSCfg{}
		}
		set(&be.MemoryQOS.Enable, m.Enable)
		set(&be.MemoryQOS.MinLimitPercent, m.MinLimitPercent)
		set(&be.MemoryQOS.LowLimitPercent, m.LowLimitPercent)
		set(&be.MemoryQOS.ThrottlingPercent, m.ThrottlingPercent)
	}
	return out
}

func set[T any](dst **T, v *T) {
	if v != nil {
		x := *v
		*dst = &x
	}
}
