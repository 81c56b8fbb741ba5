// Package features declares the koordlet-yarn feature gates. They live in
// koordlet's own gate (--feature-gates), beside upstream's.
package features

import (
	"k8s.io/component-base/featuregate"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
)

const (
	// YARNContainerInformer keeps the live store of the node's YARN
	// containers (cgroup scan + NodeManager REST) as a statesinformer plugin.
	// owner: koordlet-yarn
	// beta: v0.1
	YARNContainerInformer featuregate.Feature = "YARNContainerInformer"

	// YARNMetricsCollector measures every YARN container (CPU, memory,
	// throttling) into koordlet's metric cache and Prometheus.
	// owner: koordlet-yarn
	// beta: v0.1
	YARNMetricsCollector featuregate.Feature = "YARNMetricsCollector"

	// YARNEBPFDiscovery learns of YARN container cgroups from eBPF programs
	// on the kernel's cgroup tracepoints (inotify, then polling, otherwise).
	// owner: koordlet-yarn
	// beta: v0.1
	YARNEBPFDiscovery featuregate.Feature = "YARNEBPFDiscovery"

	// YARNBEMemoryEvict makes koordlet's BE memory evict (gate BEMemoryEvict)
	// rank BE pods and YARN containers together and evict individual YARN
	// containers (the fewest that cover the need, killed at once), never the
	// NodeManager pod, ApplicationMasters last.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNBEMemoryEvict featuregate.Feature = "YARNBEMemoryEvict"

	// YARNBECPUSuppress makes koordlet's BE CPU suppress (gate BECPUSuppress)
	// count YARN usage as BE, not system, and bind a YARN hierarchy outside
	// the besteffort cgroup by the BE limit.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNBECPUSuppress featuregate.Feature = "YARNBECPUSuppress"

	// YARNBECPUEvict makes koordlet's satisfaction-based BE CPU evict (gate
	// BECPUEvict) count YARN containers in BE usage and requests and evict
	// from one ranked list of BE pods and YARN containers.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNBECPUEvict featuregate.Feature = "YARNBECPUEvict"

	// YARNCPUQoS applies the BE class's CPU QoS (Group Identity bvt or
	// cgroup sched-idle) to every YARN container.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNCPUQoS featuregate.Feature = "YARNCPUQoS"

	// YARNMemoryQoS applies the BE class's Memory QoS to every YARN container.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNMemoryQoS featuregate.Feature = "YARNMemoryQoS"

	// YARNMemoryCgroup gives each YARN container its own memory cgroup
	// (cgroup v1) when YARN makes none (CPU-only cgroups handler) and moves
	// its processes into it; memory cgroups YARN made are never touched.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNMemoryCgroup featuregate.Feature = "YARNMemoryCgroup"

	// YARNContainerCgroups gives each YARN container that YARN gives no
	// cgroup at all (the DefaultContainerExecutor, an LCE without resource
	// handlers, Hadoop before 3.5 on cgroup v2) its own cgroup below the
	// YARN hierarchy, as the LCE would, and moves its processes there from
	// the NodeManager pod's cgroup at their exec.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNContainerCgroups featuregate.Feature = "YARNContainerCgroups"

	// YARNResctrlQoS puts every YARN container's tasks into koordlet's
	// resctrl BE group (L3 CAT / MBA).
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNResctrlQoS featuregate.Feature = "YARNResctrlQoS"

	// YARNMemoryEvictTrigger wakes the YARN-aware BE memory evict when node
	// memory crosses its threshold, besides its periodic check: cgroup v1
	// memory usage thresholds on the memory cgroups holding the node's BE
	// work (kubepods, and the YARN hierarchy if elsewhere; not the root,
	// whose statistics the kernel flushes late), on cgroup v2 a watch of
	// their memory.current while armed, and a PSI memory trigger where the
	// kernel accepts one.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNMemoryEvictTrigger featuregate.Feature = "YARNMemoryEvictTrigger"

	// YARNQoSPolicy applies the YARN QoS policy file (--yarn-qos-policy-file):
	// per-application priorities and QoS tiers, with the applications'
	// queue, type and tags from the ResourceManager (--yarn-rm-endpoints).
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNQoSPolicy featuregate.Feature = "YARNQoSPolicy"

	// YARNNodeManagerGuard makes koordlet's pod eviction refuse the
	// NodeManager pod while it has live YARN containers.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNNodeManagerGuard featuregate.Feature = "YARNNodeManagerGuard"
)

// Gates of the batch ledger and node-side arbitration.
const (
	// YARNBatchLedger keeps the hadoop-yarn entry of the Node's
	// node.koordinator.sh/thirdPartyAllocations true (YARN's allocations on
	// the node, from the NodeManager) and publishes the node's batch
	// ledger (origin, Kubernetes requested, YARN allocated, YARN capacity,
	// over-commit) at /yarn/ledger and in Prometheus.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNBatchLedger featuregate.Feature = "YARNBatchLedger"

	// YARNRMNodeResourceSync pushes YARN's capacity on the node (origin
	// batch allocatable − Kubernetes batch requests) to the ResourceManager
	// (REST updateNodeResource) when it changes.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNRMNodeResourceSync featuregate.Feature = "YARNRMNodeResourceSync"

	// YARNAllocatableEvict makes the allocatable triggers of koordlet's
	// memoryEvict and CPUEvict slots (MemoryAllocatableEvict,
	// CPUAllocatableEvict) count YARN's allocations against the node's
	// origin batch allocatable and evict YARN containers (releasing their
	// requests) from the same ranked list as BE pods.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNAllocatableEvict featuregate.Feature = "YARNAllocatableEvict"

	// YARNRMPreemption makes the ResourceManager release an over-commit:
	// with YARNRMNodeResourceSync, a capacity below YARN's allocation on
	// the node is pushed with an over-commit timeout
	// (--yarn-rm-preemption-timeout), so that the RM asks the AMs for
	// containers back and then preempts them (the AMs see PREEMPTED, which
	// MapReduce and Spark do not count as task failures); koordlet's
	// allocatable evict holds its kills until the timeout has passed.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNRMPreemption featuregate.Feature = "YARNRMPreemption"

	// YARNLSCPUWait measures how long the tasks of the node's LS pods wait
	// for a CPU (eBPF on the scheduler's wake-up and switch events, the
	// schedstat run-queue wait without eBPF) and exports it; it only
	// observes (its cost: docs/figures.md).
	// owner: koordlet-yarn
	// beta: v0.1
	YARNLSCPUWait featuregate.Feature = "YARNLSCPUWait"

	// YARNInterferenceControl is feedback on top of BE suppress's
	// feed-forward: upstream's static formula (capacity × threshold − LS
	// usage, each period) stays the budget, and the controller moves the
	// threshold it computes with from the LS pods' CPU wait behind batch
	// against a target (--yarn-interference-target or the NodeSLO): up a
	// step while the worst LS pod waits well below it, down by half the
	// budget above it. Without the signal, the NodeSLO's threshold: static
	// suppress. Needs YARNBECPUSuppress (whose YARN-aware view carries the
	// threshold) and BECPUSuppress; runs the YARNLSCPUWait measurement.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNInterferenceControl featuregate.Feature = "YARNInterferenceControl"

	// YARNMemoryRelief adds rungs before the kill to the YARN-aware BE
	// memory evict (YARNBEMemoryEvict): on cgroup v2 the YARN hierarchy
	// root's memory.high is lowered as node memory nears the BE memory
	// evict threshold (--yarn-memory-throttle-band-percent below it), so
	// that batch's page cache is reclaimed and its growth throttled before
	// a container is killed, and given back as headroom returns; on cgroup
	// v1 the root's memory soft limit is 0 (global reclaim takes batch's
	// page cache first).
	YARNMemoryRelief featuregate.Feature = "YARNMemoryRelief"

	// YARNLSSLOControl steers BE suppress's threshold by the latency the
	// LS pods declare and report themselves (collectors/lsslo: the
	// annotation koordlet-yarn.io/latency-slo names the pod's own
	// Prometheus histogram and the SLO): Heracles' rule on the worst
	// declared pod's slack, with the LS CPU wait (YARNInterferenceControl)
	// as a further constraint, the most conservative winning. With no pod declaring
	// an SLO the controller is exactly as without this gate; with a
	// declared SLO unknown (the endpoint down), static suppress at the
	// NodeSLO's threshold. Needs YARNBECPUSuppress and BECPUSuppress.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNLSSLOControl featuregate.Feature = "YARNLSSLOControl"

	// YARNSuppressLSPeak makes the YARN-aware BE suppress subtract the LS
	// pods' recent peak CPU usage (held over --yarn-suppress-ls-peak-window)
	// instead of the last period's, so that batch's budget does not lag
	// LS's rise. Needs YARNBECPUSuppress and BECPUSuppress.
	// owner: koordlet-yarn
	// alpha: v0.1
	YARNSuppressLSPeak featuregate.Feature = "YARNSuppressLSPeak"
)

// Specs are the koordlet-yarn gates and their defaults.
var Specs = map[featuregate.Feature]featuregate.FeatureSpec{
	YARNContainerInformer:   {Default: true, PreRelease: featuregate.Beta},
	YARNMetricsCollector:    {Default: true, PreRelease: featuregate.Beta},
	YARNEBPFDiscovery:       {Default: true, PreRelease: featuregate.Beta},
	YARNBEMemoryEvict:       {Default: false, PreRelease: featuregate.Alpha},
	YARNNodeManagerGuard:    {Default: false, PreRelease: featuregate.Alpha},
	YARNBECPUSuppress:       {Default: false, PreRelease: featuregate.Alpha},
	YARNBECPUEvict:          {Default: false, PreRelease: featuregate.Alpha},
	YARNCPUQoS:              {Default: false, PreRelease: featuregate.Alpha},
	YARNMemoryQoS:           {Default: false, PreRelease: featuregate.Alpha},
	YARNResctrlQoS:          {Default: false, PreRelease: featuregate.Alpha},
	YARNMemoryCgroup:        {Default: false, PreRelease: featuregate.Alpha},
	YARNContainerCgroups:    {Default: false, PreRelease: featuregate.Alpha},
	YARNBatchLedger:         {Default: false, PreRelease: featuregate.Alpha},
	YARNRMNodeResourceSync:  {Default: false, PreRelease: featuregate.Alpha},
	YARNAllocatableEvict:    {Default: false, PreRelease: featuregate.Alpha},
	YARNRMPreemption:        {Default: false, PreRelease: featuregate.Alpha},
	YARNMemoryEvictTrigger:  {Default: false, PreRelease: featuregate.Alpha},
	YARNQoSPolicy:           {Default: false, PreRelease: featuregate.Alpha},
	YARNLSCPUWait:           {Default: true, PreRelease: featuregate.Beta},
	YARNInterferenceControl: {Default: false, PreRelease: featuregate.Alpha},
	YARNMemoryRelief:        {Default: false, PreRelease: featuregate.Alpha},
	YARNLSSLOControl:        {Default: false, PreRelease: featuregate.Alpha},
	YARNSuppressLSPeak:      {Default: false, PreRelease: featuregate.Alpha},
}

// Acts says, for each gate that acts on the node or the cluster when on,
// what it does: kill or evict, write cgroups or move processes, write API
// objects or the ResourceManager, or change what the others do. The gates
// not listed only observe (discover, measure, publish). Every gate that
// acts is Alpha and off by default; the default deploy overlay enables
// none of them and the enforcement component enables them
// (deploy/koordlet_test.go checks both against this map).
var Acts = map[featuregate.Feature]string{
	YARNBEMemoryEvict:       "kills YARN containers when node memory crosses the BE threshold",
	YARNBECPUEvict:          "kills YARN containers when BE CPU satisfaction is low",
	YARNAllocatableEvict:    "kills YARN containers when batch allocations exceed the node's origin batch allocatable",
	YARNNodeManagerGuard:    "makes koordlet's pod eviction refuse the NodeManager pod",
	YARNMemoryEvictTrigger:  "wakes the YARN memory evict at the threshold crossing (registers cgroup usage thresholds)",
	YARNBECPUSuppress:       "writes the YARN hierarchy's CPU limits (BE suppress)",
	YARNCPUQoS:              "writes YARN containers' CPU QoS (cpu.idle, bvt, scheduling policy)",
	YARNMemoryQoS:           "writes YARN containers' Memory QoS files",
	YARNResctrlQoS:          "moves YARN containers' tasks into the resctrl BE group",
	YARNMemoryCgroup:        "makes memory cgroups and moves YARN container processes into them",
	YARNContainerCgroups:    "makes container cgroups and moves YARN container processes into them",
	YARNQoSPolicy:           "changes YARN containers' eviction priorities and QoS tiers",
	YARNBatchLedger:         "patches the Node's thirdPartyAllocations (the scheduler's batch capacity)",
	YARNRMNodeResourceSync:  "updates the node's resource in the ResourceManager",
	YARNRMPreemption:        "makes the ResourceManager preempt YARN containers above the node's capacity (over-commit timeout)",
	YARNInterferenceControl: "moves BE suppress's CPU threshold (the BE budget) from the LS pods' CPU wait",
	YARNMemoryRelief:        "writes the YARN hierarchy's memory.high (v2) or memory soft limit (v1)",
	YARNLSSLOControl:        "moves BE suppress's CPU threshold (the BE budget) from the LS pods' declared latency SLO",
	YARNSuppressLSPeak:      "makes BE suppress subtract the LS pods' recent peak CPU usage (a smaller BE budget)",
}

// Register adds the koordlet-yarn gates to koordlet's mutable feature gate.
// It must run before the flags are parsed; running it twice is harmless.
func Register() error {
	return koordfeatures.DefaultMutableKoordletFeatureGate.Add(Specs)
}

// Enabled reports whether gate f is on in koordlet's feature gate.
func Enabled(f featuregate.Feature) bool {
	return koordfeatures.DefaultKoordletFeatureGate.Enabled(f)
}
