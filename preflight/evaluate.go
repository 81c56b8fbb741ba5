package preflight

import (
	"fmt"
	"slices"
	"strings"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// Evaluate turns the facts into findings and gate effects. It does no I/O.
func Evaluate(f Facts) Report {
	var r Report
	add := func(check string, s Severity, detail, fix string) {
		r.Findings = append(r.Findings, Finding{Check: check, Severity: s, Detail: detail, Fix: fix})
	}
	on := func(g string) bool { return f.Gates[g] }

	evalCgroup(f, add)
	if f.HierarchyErr != "" {
		add("YARN hierarchy", Block, f.HierarchyErr,
			"set --yarn-cgroup-hierarchy to yarn.nodemanager.linux-container-executor.cgroups.hierarchy (a plain path below the cgroup mounts)")
	} else {
		evalHierarchy(f, add)
		evalControllers(f, add)
		evalNamespace(f, add)
	}
	evalDiscovery(f, add)
	evalKill(f, add)
	evalIsolation(f, add)
	evalNM(f, add)
	evalCluster(f, add)
	evalGateDependencies(f, add)

	for _, g := range gateOrder {
		if on(g) {
			r.Gates = append(r.Gates, GateEffect{Gate: g, Effect: gateEffect(g, f)})
		}
	}
	return r
}

type addFunc func(check string, s Severity, detail, fix string)

// mountFix is the fix for a cgroup root that is not the host's.
const mountFix = "mount the host's /sys/fs/cgroup at koordlet's --cgroup-root-dir (the chart mounts it at /host-cgroup/)"

func evalCgroup(f Facts, add addFunc) {
	version := "v1"
	if f.CgroupV2 {
		version = "v2 (unified)"
	}
	mounted := false
	for _, c := range f.Controllers {
		if (c.Name == "cpu" || c.Name == "unified") && c.Mounted {
			mounted = true
		}
	}
	if f.HierarchyErr == "" && !mounted {
		add("cgroup", Block, fmt.Sprintf("cgroup %s, but no cpu controller under %s", version, f.CgroupRoot), mountFix)
		return
	}
	if f.Driver == "" {
		add("cgroup", Warn, fmt.Sprintf("cgroup %s under %s; no kubepods or kubepods.slice cgroup, so the kubelet's driver is unknown (koordlet asks the kubelet's config, else assumes systemd)", version, f.CgroupRoot),
			"run on a Kubernetes node and "+mountFix)
		return
	}
	add("cgroup", OK, fmt.Sprintf("cgroup %s under %s, %s driver (from the kubepods cgroup's name)", version, f.CgroupRoot, f.Driver), "")
}

func evalHierarchy(f Facts, add addFunc) {
	from := "default for the " + f.Driver + " driver"
	if f.HierarchyFlag {
		from = "--yarn-cgroup-hierarchy"
	}
	var present, absent []string
	cpuRoot := false
	for _, c := range f.Controllers {
		if c.RootExists {
			present = append(present, c.Name)
			cpuRoot = cpuRoot || c.Name == "cpu" || c.Name == "unified"
		} else if c.Mounted {
			absent = append(absent, c.Name)
		}
	}
	detail := fmt.Sprintf("/%s (%s); present in: %s; absent in: %s", f.Hierarchy, from, list(present), list(absent))
	switch {
	case !cpuRoot && f.NM.Checked && f.NM.Err == "":
		add("YARN hierarchy", Block, detail+"; the NodeManager runs, so its containers are elsewhere",
			"set --yarn-cgroup-hierarchy to the NodeManager's yarn.nodemanager.linux-container-executor.cgroups.hierarchy (deploy/yarn/yarn-site.*.xml)")
	case !cpuRoot:
		add("YARN hierarchy", Warn, detail+"; the NodeManager makes it when it starts",
			"start the NodeManager with the LinuxContainerExecutor and this cgroups.hierarchy, or set --yarn-cgroup-hierarchy to the one it uses")
	default:
		add("YARN hierarchy", OK, detail+fmt.Sprintf("; %d container cgroup(s) now", f.Containers), "")
	}
	if f.ScanErr != "" {
		add("YARN hierarchy", Block, "the scan of the YARN hierarchy fails: "+f.ScanErr, "give koordlet read access to the host's cgroups ("+mountFix+")")
	}
	if f.OutsideBestEffort {
		if f.Gates[string(features.YARNBECPUSuppress)] {
			add("YARN hierarchy", Info, "outside the besteffort QoS cgroup: YARNBECPUSuppress binds the YARN root beside it", "")
		} else {
			add("YARN hierarchy", Warn, "outside the besteffort QoS cgroup: koordlet's BE limits (suppress, cpuset) do not cover YARN",
				"put the hierarchy below besteffort (deploy/yarn/yarn-site.*.xml), or turn YARNBECPUSuppress (and BECPUSuppress) on")
		}
	}
}

func evalControllers(f Facts, add addFunc) {
	if !f.CgroupV2 {
		var co []string
		for _, c := range f.Controllers {
			if len(c.CoMounted) == 0 {
				continue
			}
			group := append([]string{c.Name}, c.CoMounted...)
			slices.Sort(group)
			if g := strings.Join(group, ","); !slices.Contains(co, g) {
				co = append(co, g)
			}
		}
		add("co-mounted controllers", OK, list(co), "")
	}
	if len(f.Managed) == 0 {
		add("YARN controllers", Info, "unknown until the NodeManager makes its hierarchy", "")
		return
	}
	from := "from where the hierarchy exists (no container yet)"
	if f.ManagedFromContainers {
		from = fmt.Sprintf("from %d container(s)", f.Containers)
	}
	managed := strings.Join(f.Managed, ", ") + " (" + from + ")"
	memory := slices.Contains(f.Managed, "memory")
	switch {
	case !slices.Contains(f.Managed, "cpu"):
		add("YARN controllers", Warn, managed+": no cpu cgroup per container",
			"use the LinuxContainerExecutor's cgroups handler (yarn.nodemanager.linux-container-executor.resources-handler.class, deploy/yarn/)")
	case !memory && f.Gates[string(features.YARNMemoryCgroup)] && !f.CgroupV2:
		add("YARN controllers", Info, managed+": CPU-only YARN; YARNMemoryCgroup makes each container's memory cgroup", "")
	case !memory:
		add("YARN controllers", Info, managed+": CPU-only YARN; container memory is charged to the NodeManager pod and measured from each container's processes", "")
	default:
		add("YARN controllers", OK, managed, "")
	}
	if !f.CgroupV2 && !slices.Contains(f.Managed, "cpuacct") && !coMounted(f, "cpu", "cpuacct") {
		add("per-container CPU", Info, "cpu and cpuacct are mounted apart and YARN makes no cpuacct cgroups: per-container CPU usage is its processes' CPU time (processes shorter than a collect interval are missed)",
			"co-mount cpu,cpuacct (the distributions' default) or let YARN manage cpuacct for the kernel's exact count")
	}
}

func coMounted(f Facts, a, b string) bool {
	for _, c := range f.Controllers {
		if c.Name == a && slices.Contains(c.CoMounted, b) {
			return true
		}
	}
	return false
}

func evalNamespace(f Facts, add addFunc) {
	switch {
	case f.NamespaceErr != "" && anyOn(f, evictGates...):
		add("cgroup namespace", Block, "koordlet's cgroup namespace cannot be placed ("+f.NamespaceErr+"): no process can be proven a container's, so evictions fail",
			"run koordlet in the host's cgroup namespace, or mount the host's whole cgroup tree at --cgroup-root-dir so its own cgroup is found")
	case f.NamespaceErr != "":
		add("cgroup namespace", Warn, "koordlet's cgroup namespace cannot be placed ("+f.NamespaceErr+"): processes are not proven a container's (no kills, no memory cgroup moves)",
			"run koordlet in the host's cgroup namespace, or mount the host's whole cgroup tree at --cgroup-root-dir")
	case f.NamespaceRoot != "":
		add("cgroup namespace", Info, "private, rooted at /"+f.NamespaceRoot+" (process cgroups are read relative to it)", "")
	default:
		add("cgroup namespace", OK, "the host's", "")
	}
}

func evalDiscovery(f Facts, add addFunc) {
	btf := "BTF at /sys/kernel/btf/vmlinux"
	if !f.BTF {
		btf = "no BTF at /sys/kernel/btf/vmlinux"
	}
	switch {
	case !f.Gates[string(features.YARNEBPFDiscovery)]:
		add("BPF/BTF", Info, btf+"; YARNEBPFDiscovery off: discovery by inotify", "")
	case !f.EBPFTried:
		add("BPF/BTF", Info, btf+"; eBPF not tried", "")
	case f.EBPFErr != "":
		add("BPF/BTF", Warn, btf+"; the discovery's eBPF programs do not load here ("+f.EBPFErr+"): discovery falls back to inotify",
			"a kernel with BTF (CONFIG_DEBUG_INFO_BTF, 5.5+) and koordlet privileged (CAP_BPF, CAP_PERFMON; the chart's DaemonSet is)")
	default:
		add("BPF/BTF", OK, btf+"; the discovery's eBPF programs load and attach", "")
	}
}

func evalKill(f Facts, add addFunc) {
	switch {
	case f.CgroupV2 && f.CgroupKill:
		add("freezer", OK, "not needed: evictions use cgroup.kill (v2), then SIGKILL passes", "")
	case f.CgroupV2:
		add("freezer", OK, "not needed: evictions use SIGKILL passes (no cgroup.kill: kernel before 5.14)", "")
	case f.Freezer:
		add("freezer", OK, "mounted, not needed: evictions use SIGKILL passes", "")
	default:
		add("freezer", OK, "not mounted, not needed: evictions use SIGKILL passes", "")
	}
	psi := "present (/proc/pressure)"
	if !f.PSI {
		psi = "absent (boot with psi=1 for koordlet's PSI-based features); the YARN plugin set does not need it"
	}
	add("PSI", Info, psi, "")
}

func evalIsolation(f Facts, add addFunc) {
	rdt := fmt.Sprintf("CPU support %s, mounted %s, koordlet's BE group %s", yesNo(f.ResctrlCPU), yesNo(f.ResctrlMounted), yesNo(f.ResctrlBEGroup))
	switch {
	case !f.Gates[string(features.YARNResctrlQoS)]:
		add("resctrl", Info, rdt, "")
	case !f.ResctrlCPU:
		add("resctrl", Warn, rdt+": the CPU has no RDT, YARNResctrlQoS does nothing here", "turn YARNResctrlQoS off on this node")
	case !f.ResctrlMounted:
		add("resctrl", Warn, rdt+": YARNResctrlQoS does nothing until resctrl is mounted",
			"mount resctrl on the host (mount -t resctrl resctrl /sys/fs/resctrl) and the host's /sys/fs in koordlet (the chart's /host-sys-fs/)")
	case !f.ResctrlBEGroup:
		add("resctrl", Warn, rdt+": YARNResctrlQoS waits for koordlet's BE group",
			"turn koordlet's RdtResctrl gate on and the NodeSLO's resourceQOSStrategy.beClass.resctrlQOS.enable")
	default:
		add("resctrl", OK, rdt, "")
	}

	cpu := fmt.Sprintf("Group Identity (cpu.bvt_warp_ns) %s, sched-idle (cpu.idle) %s", yesNo(f.GroupIdentity), yesNo(f.SchedIdle))
	switch {
	case f.Gates[string(features.YARNCPUQoS)] && !f.GroupIdentity && !f.SchedIdle:
		add("Group Identity", Warn, cpu+": YARNCPUQoS has nothing to write",
			"a kernel with cpu.idle (5.15+) or Group Identity (Anolis), or turn YARNCPUQoS off")
	default:
		add("Group Identity", OK, cpu, "")
	}

	mem := "Memory QoS files: " + list(f.MemoryQoSFiles)
	memcg := slices.Contains(f.Managed, "memory") || f.CgroupV2 || f.Gates[string(features.YARNMemoryCgroup)]
	switch {
	case !f.Gates[string(features.YARNMemoryQoS)]:
		add("Memory QoS", Info, mem, "")
	case len(f.MemoryQoSFiles) == 0:
		add("Memory QoS", Warn, mem+": YARNMemoryQoS has nothing to write (cgroup v1 without Anolis's files)",
			"cgroup v2 or an Anolis kernel, or turn YARNMemoryQoS off")
	case !memcg:
		add("Memory QoS", Warn, mem+": YARN containers have no memory cgroup to write them to (CPU-only YARN)",
			"set yarn.nodemanager.resource.memory.enabled=true, or turn YARNMemoryCgroup on (cgroup v1)")
	default:
		add("Memory QoS", OK, mem, "")
	}
}

func evalNM(f Facts, add addFunc) {
	nm := f.NM
	switch {
	case !nm.Checked:
		add("NodeManager", Warn, "not found: "+nm.FindErr+"; containers are still found by their cgroups, without user, state or requests",
			"label the NodeManager pod app.kubernetes.io/component=node-manager (--yarn-nm-pod-selector) or pass --yarn-nm-endpoint")
	case nm.Err != "":
		add("NodeManager", Warn, fmt.Sprintf("%s (%s) does not answer: %s", nm.Endpoint, nm.Source, nm.Err),
			"yarn.nodemanager.webapp.address must listen on --yarn-nm-port (8042) where koordlet (host network) reaches it")
	default:
		version := nm.Version
		if version == "" {
			version = "unknown version"
		}
		add("NodeManager", OK, fmt.Sprintf("%s (%s): %s, node %s", nm.Endpoint, nm.Source, version, nm.NodeID), "")
	}
}

// evictGates are the gates that kill YARN containers.
var evictGates = []string{string(features.YARNBEMemoryEvict), string(features.YARNBECPUEvict)}

// gateNeeds are the upstream gates a YARN gate works through.
var gateNeeds = []struct{ gate, needs string }{
	{string(features.YARNBEMemoryEvict), "BEMemoryEvict"},
	{string(features.YARNBECPUEvict), "BECPUEvict"},
	{string(features.YARNBECPUSuppress), "BECPUSuppress"},
}

func evalGateDependencies(f Facts, add addFunc) {
	for _, d := range gateNeeds {
		if f.Gates[d.gate] && !f.Gates[d.needs] {
			add("feature gates", Block, d.gate+" is on but koordlet's "+d.needs+" is off: the YARN-aware strategy never runs",
				"--feature-gates=...,"+d.needs+"=true")
		}
	}
	if f.Gates[string(features.YARNMemoryEvictTrigger)] && !f.Gates[string(features.YARNBEMemoryEvict)] {
		add("feature gates", Block, "YARNMemoryEvictTrigger is on but YARNBEMemoryEvict is off: there is nothing for it to wake",
			"--feature-gates=...,YARNBEMemoryEvict=true,BEMemoryEvict=true")
	}
	alloc := string(features.YARNAllocatableEvict)
	if f.Gates[alloc] && !f.Gates["MemoryAllocatableEvict"] && !f.Gates["CPUAllocatableEvict"] {
		add("feature gates", Block, alloc+" is on but neither of koordlet's MemoryAllocatableEvict and CPUAllocatableEvict is: no allocatable trigger runs",
			"--feature-gates=...,MemoryAllocatableEvict=true (and/or CPUAllocatableEvict=true)")
	}
	for _, s := range []struct{ upstream, yarnBE string }{
		{"BEMemoryEvict", string(features.YARNBEMemoryEvict)}, {"BECPUEvict", string(features.YARNBECPUEvict)},
	} {
		if f.Gates[alloc] && f.Gates[s.upstream] && !f.Gates[s.yarnBE] {
			add("feature gates", Warn, alloc+" with koordlet's "+s.upstream+" but not "+s.yarnBE+": koordlet's own strategy keeps that slot and its allocatable trigger does not count YARN",
				"--feature-gates=...,"+s.yarnBE+"=true")
		}
	}
	if f.Gates[string(features.YARNRMNodeResourceSync)] && len(f.RMEndpoints) == 0 {
		add("feature gates", Block, "YARNRMNodeResourceSync is on but no ResourceManager is configured: YARN's capacity is never pushed",
			"--yarn-rm-endpoints=http://rm1:8088,http://rm2:8088")
	}
	if !f.Gates[string(features.YARNContainerInformer)] {
		var dependents []string
		for _, g := range gateOrder[1:] {
			if f.Gates[g] {
				dependents = append(dependents, g)
			}
		}
		if len(dependents) > 0 {
			add("feature gates", Block, "YARNContainerInformer is off but "+strings.Join(dependents, ", ")+" read its container store: they see no container",
				"--feature-gates=...,YARNContainerInformer=true")
		}
	}
	if f.Gates[string(features.YARNMemoryCgroup)] && f.CgroupV2 {
		add("feature gates", Warn, "YARNMemoryCgroup is for cgroup v1; on v2 it does nothing", "turn YARNMemoryCgroup off on cgroup v2 nodes")
	}
}

func anyOn(f Facts, gates ...string) bool {
	for _, g := range gates {
		if f.Gates[g] {
			return true
		}
	}
	return false
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
