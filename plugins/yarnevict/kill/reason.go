package kill

import (
	"k8s.io/component-base/featuregate"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// The eviction reasons: each strategy's, recorded in the journal, the
// audit, the Events and the metrics' reason label.
const (
	// ReasonBEMemoryEvict is the YARN-aware BE memory evict strategy's.
	ReasonBEMemoryEvict = "BEMemoryEvict"
	// ReasonBECPUEvict is the YARN-aware BE CPU evict strategy's.
	ReasonBECPUEvict = "BECPUEvict"
	// ReasonMemoryAllocatableEvict and ReasonCPUAllocatableEvict are the
	// allocatable triggers'.
	ReasonMemoryAllocatableEvict = "MemoryAllocatableEvict"
	ReasonCPUAllocatableEvict    = "CPUAllocatableEvict"
	// ReasonMemoryEvict and ReasonCPUEvict are the usage triggers'
	// (upstream's feature names).
	ReasonMemoryEvict = "MemoryEvict"
	ReasonCPUEvict    = "CPUEvict"
)

// GatesOfReason returns the gates under which a kill journaled with reason
// may run: its strategy's YARN gate (a kill the NodeManager guard began,
// or one journaled by a version that recorded no reason, under any YARN
// eviction gate).
func GatesOfReason(reason string) []featuregate.Feature {
	switch reason {
	case ReasonBEMemoryEvict:
		return []featuregate.Feature{features.YARNBEMemoryEvict}
	case ReasonBECPUEvict:
		return []featuregate.Feature{features.YARNBECPUEvict}
	case ReasonMemoryAllocatableEvict, ReasonCPUAllocatableEvict, ReasonMemoryEvict, ReasonCPUEvict:
		return []featuregate.Feature{features.YARNAllocatableEvict}
	}
	return []featuregate.Feature{features.YARNBEMemoryEvict, features.YARNBECPUEvict, features.YARNAllocatableEvict, features.YARNNodeManagerGuard}
}
