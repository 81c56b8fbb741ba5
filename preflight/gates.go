package preflight

import (
	"fmt"
	"slices"
	"strings"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// knownGates lists the YARN gates the preflight describes, in the
// report's order; the informer first (the others read its store).
var knownGates = []string{
	string(features.YARNContainerInformer), string(features.YARNMetricsCollector), string(features.YARNEBPFDiscovery),
	string(features.YARNBEMemoryEvict), string(features.YARNMemoryEvictTrigger), string(features.YARNBECPUEvict), string(features.YARNAllocatableEvict),
	string(features.YARNBECPUSuppress), string(features.YARNNodeManagerGuard), string(features.YARNCPUQoS),
	string(features.YARNMemoryQoS), string(features.YARNMemoryCgroup), string(features.YARNContainerCgroups), string(features.YARNResctrlQoS),
	string(features.YARNBatchLedger), string(features.YARNRMNodeResourceSync), string(features.YARNRMPreemption),
	string(features.YARNQoSPolicy), string(features.YARNLSCPUWait), string(features.YARNInterferenceControl),
	string(features.YARNMemoryRelief), string(features.YARNLSSLOControl), string(features.YARNSuppressLSPeak),
}

// gateOrder is knownGates, then any other gate of the plugin set by name.
var gateOrder = func() []string {
	order := slices.Clone(knownGates)
	var rest []string
	for g := range features.Specs {
		if !slices.Contains(knownGates, string(g)) {
			rest = append(rest, string(g))
		}
	}
	slices.Sort(rest)
	return append(order, rest...)
}()

// unknownEffect is the effect of a gate the preflight does not describe.
const unknownEffect = "on (the preflight does not describe this gate yet; see docs/gates.md)"

// gateEffect says what gate g, on, will do on the node of f.
func gateEffect(g string, f Facts) string {
	memcg := slices.Contains(f.Managed, "memory") || f.CgroupV2
	switch g {
	case string(features.YARNContainerInformer):
		nm := "without the NodeManager's fields (not reachable now)"
		if f.NM.Checked && f.NM.Err == "" {
			nm = "with user, state and requests from " + f.NM.Endpoint
		}
		return fmt.Sprintf("keeps the store of YARN containers under /%s from the cgroups, %s", f.Hierarchy, nm)
	case string(features.YARNMetricsCollector):
		if len(f.Managed) == 0 {
			return "per-container CPU, memory and throttling into the metric cache and koordlet_yarn_* series, once YARN makes its cgroups"
		}
		cpu := "per-container CPU and throttling"
		if !f.CgroupV2 && !slices.Contains(f.Managed, "cpuacct") && !coMounted(f, "cpu", "cpuacct") {
			cpu = "per-container CPU (its processes' CPU time: no cpuacct cgroups) and throttling"
		}
		if memcg {
			return cpu + " and memory (memory cgroups) into the metric cache and koordlet_yarn_* series"
		}
		return cpu + "; memory summed over each container's processes (no memory cgroup)"
	case string(features.YARNEBPFDiscovery):
		if f.EBPFTried && f.EBPFErr == "" {
			return "learns of container cgroups from eBPF at their mkdir (no polling delay)"
		}
		return "eBPF does not load here: inotify on the YARN roots instead"
	case string(features.YARNBEMemoryEvict):
		if !f.Gates["BEMemoryEvict"] {
			return "nothing: BEMemoryEvict is off"
		}
		if memcg {
			return "BE memory evict ranks BE pods and YARN containers together and kills individual YARN containers, the fewest that cover the need, at once (memory from their cgroups)"
		}
		return "BE memory evict ranks BE pods and YARN containers together and kills individual YARN containers, the fewest that cover the need, at once (memory summed over their processes)"
	case string(features.YARNMemoryEvictTrigger):
		if !f.Gates[string(features.YARNBEMemoryEvict)] || !f.Gates["BEMemoryEvict"] {
			return "nothing: it wakes the YARN-aware BE memory evict, which is off"
		}
		return "wakes BE memory evict as node memory crosses its threshold (cgroup v1 memory thresholds, a PSI trigger where the kernel accepts one), besides the periodic check"
	case string(features.YARNBECPUEvict):
		if !f.Gates["BECPUEvict"] {
			return "nothing: BECPUEvict is off"
		}
		return "BE CPU evict counts YARN requests and usage as BE and evicts from the same ranked list"
	case string(features.YARNBECPUSuppress):
		if !f.Gates["BECPUSuppress"] {
			return "nothing: BECPUSuppress is off"
		}
		if f.OutsideBestEffort {
			return "BE CPU suppress counts YARN as BE and splits the BE quota between besteffort and the YARN root"
		}
		return "BE CPU suppress counts YARN as BE (the besteffort quota already bounds the YARN hierarchy below it)"
	case string(features.YARNNodeManagerGuard):
		return "koordlet's pod eviction skips the NodeManager pod while it has live YARN containers"
	case string(features.YARNCPUQoS):
		switch {
		case f.GroupIdentity:
			return "writes the BE class's Group Identity (cpu.bvt_warp_ns) to every container and the YARN root"
		case f.SchedIdle:
			return "writes cpu.idle (BE class under coreSched with schedIdle) to every container and the YARN root; Group Identity is not available"
		}
		return "nothing: neither cpu.bvt_warp_ns nor cpu.idle exists"
	case string(features.YARNMemoryQoS):
		switch {
		case len(f.MemoryQoSFiles) == 0:
			return "nothing: no Memory QoS file is supported"
		case !memcg && !f.Gates[string(features.YARNMemoryCgroup)]:
			return "nothing: containers have no memory cgroup"
		}
		return "writes " + list(f.MemoryQoSFiles) + " from the BE class and each container's request"
	case string(features.YARNMemoryCgroup):
		switch {
		case f.CgroupV2:
			return "nothing: cgroup v2"
		case slices.Contains(f.Managed, "memory"):
			return "nothing: YARN makes memory cgroups itself"
		}
		return "makes a memory cgroup per CPU-only container and moves its processes into it"
	case string(features.YARNContainerCgroups):
		if f.ManagedFromContainers && len(f.Managed) > 0 {
			return "nothing: YARN makes its containers' cgroups itself (" + list(f.Managed) + ")"
		}
		how := "at their exec (eBPF)"
		if !f.BTF || (f.EBPFTried && f.EBPFErr != "") {
			how = "by a scan every --yarn-container-cgroups-scan-interval (no eBPF here)"
		}
		return "gives each container YARN made no cgroup for its own below the YARN hierarchy, its processes moved from the NodeManager pod's cgroup " + how
	case string(features.YARNResctrlQoS):
		if f.ResctrlBEGroup {
			return "moves every container's tasks into koordlet's resctrl BE group"
		}
		return "nothing until koordlet's resctrl BE group exists"
	case string(features.YARNAllocatableEvict):
		if !f.Gates["MemoryAllocatableEvict"] && !f.Gates["CPUAllocatableEvict"] {
			return "nothing: MemoryAllocatableEvict and CPUAllocatableEvict are off"
		}
		return "the allocatable triggers count YARN's allocations against the origin batch allocatable and evict YARN containers (their requests) from the ranked list"
	case string(features.YARNBatchLedger):
		if f.NM.Checked && f.NM.Err == "" {
			return "keeps the Node's thirdPartyAllocations hadoop-yarn entry equal to the NodeManager's allocations (/yarn/ledger)"
		}
		return "keeps the Node's thirdPartyAllocations hadoop-yarn entry from the NodeManager's allocations, once the NodeManager answers"
	case string(features.YARNRMNodeResourceSync):
		if len(f.RMEndpoints) == 0 {
			return "nothing: no --yarn-rm-endpoints"
		}
		return "pushes YARN's capacity on this node to the ResourceManager (" + strings.Join(f.RMEndpoints, ", ") + ") when it changes"
	case string(features.YARNRMPreemption):
		switch {
		case len(f.RMEndpoints) == 0:
			return "nothing: no --yarn-rm-endpoints"
		case !f.Gates[string(features.YARNRMNodeResourceSync)]:
			return "nothing: YARNRMNodeResourceSync is off"
		}
		return "a capacity below YARN's allocation goes to the ResourceManager with an over-commit timeout: the RM preempts the containers above it, and the allocatable triggers wait for it before killing YARN containers"
	case string(features.YARNQoSPolicy):
		if len(f.RMEndpoints) == 0 {
			return "applies --yarn-qos-policy-file with the NodeManager's data only (rules on queue, type and tags need --yarn-rm-endpoints)"
		}
		return "applies --yarn-qos-policy-file: per-application priorities and tiers, applications read from " + strings.Join(f.RMEndpoints, ", ")
	case string(features.YARNLSCPUWait):
		if f.BTF && (!f.EBPFTried || f.EBPFErr == "") {
			return "measures how long the LS pods' tasks wait for a CPU (eBPF on the scheduler's wake-up and switch events): koordlet_yarn_ls_cpu_wait_*"
		}
		return "measures the LS pods' mean run-queue wait from /proc/<tid>/schedstat (no eBPF here): koordlet_yarn_ls_cpu_wait_*"
	case string(features.YARNInterferenceControl):
		if !f.Gates[string(features.YARNBECPUSuppress)] || !f.Gates["BECPUSuppress"] {
			return "nothing: it moves the threshold of the YARN-aware BE suppress, which is off"
		}
		return "moves BE suppress's cpuSuppressThresholdPercent from the LS pods' CPU wait against --yarn-interference-target (the budget halved above it, the threshold a step up well below it); the NodeSLO's threshold without a signal and when it stops"
	case string(features.YARNLSSLOControl):
		if !f.Gates[string(features.YARNBECPUSuppress)] || !f.Gates["BECPUSuppress"] {
			return "nothing: it moves the threshold of the YARN-aware BE suppress, which is off"
		}
		return "moves BE suppress's cpuSuppressThresholdPercent from the latency SLO LS pods declare (annotation koordlet-yarn.io/latency-slo): batch to --yarn-interference-min-cpu-percent on a violation, shrunk under 5% slack, grown over 10% while LS is under 85% of the threshold, the LS CPU wait (with YARNInterferenceControl) a further constraint, the most conservative winning; static suppress (at most the NodeSLO's threshold) while a declared SLO is unknown, exactly as without it while none is declared"
	case string(features.YARNSuppressLSPeak):
		if !f.Gates[string(features.YARNBECPUSuppress)] || !f.Gates["BECPUSuppress"] {
			return "nothing: it changes the YARN-aware BE suppress, which is off"
		}
		return "BE suppress subtracts the LS pods' peak CPU usage over --yarn-suppress-ls-peak-window instead of the last period's (batch's budget does not lag LS's rise)"
	case string(features.YARNMemoryRelief):
		if !f.Gates[string(features.YARNBEMemoryEvict)] || !f.Gates["BEMemoryEvict"] {
			return "nothing: its rungs run in the YARN-aware BE memory evict, which is off"
		}
		if f.CgroupV2 {
			return "lowers the YARN hierarchy's memory.high from --yarn-memory-throttle-band-percent below the BE memory evict threshold (batch's page cache reclaimed, its growth throttled) before any kill; given back as headroom returns"
		}
		return "sets the YARN hierarchy's memory soft limit to 0 (global reclaim takes batch's page cache first); cgroup v1 has no memory.high: no throttle, the kill at the threshold as without it"
	}
	return unknownEffect
}
