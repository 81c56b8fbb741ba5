// Package preflight inspects a node for the koordlet-yarn plugin set
// (bin/koordlet --yarn-preflight) with the code the plugins use — koordlet's
// cgroup driver and version detection, the framework's hierarchy
// resolution and container scan, koordlet's kernel-support checks, the eBPF
// loader, the NodeManager client — and reports what each enabled gate will
// do on it, and what blocks it, each with its fix.
//
// Probe gathers Facts (I/O); Evaluate turns Facts into a Report (pure);
// Report.Write prints it.
package preflight

// Facts is what Probe found on the node.
type Facts struct {
	// CgroupRoot, ProcRoot and SysFSRoot are koordlet's roots
	// (--cgroup-root-dir, --proc-root-dir, --sys-fs-root-dir).
	CgroupRoot, ProcRoot, SysFSRoot string
	// CgroupV2 is koordlet's view of the cgroup version.
	CgroupV2 bool
	// Driver is the kubelet's cgroup driver as koordlet tells it from the
	// kubepods cgroup's name ("cgroupfs", "systemd"), "" when neither
	// exists.
	Driver string
	// Hierarchy is the YARN hierarchy, relative to the controller mounts;
	// HierarchyFlag is true when --yarn-cgroup-hierarchy set it.
	Hierarchy     string
	HierarchyFlag bool
	// HierarchyErr is why the hierarchy could not be resolved.
	HierarchyErr string
	// OutsideBestEffort is true when the hierarchy is not below the
	// besteffort QoS cgroup.
	OutsideBestEffort bool
	// Controllers are the tracked controllers (one, "unified", on v2).
	Controllers []ControllerFacts
	// Containers is the number of YARN container cgroups the scan found;
	// ScanErr why the scan failed.
	Containers int
	ScanErr    string
	// Managed are the controllers YARN makes container cgroups in, from
	// the scan's owned cgroups (or, with no container yet, from where the
	// hierarchy exists; v2: the YARN root's cgroup.subtree_control).
	Managed []string
	// ManagedFromContainers is true when Managed comes from containers.
	ManagedFromContainers bool
	// NamespaceRoot is koordlet's cgroup namespace root on the cpu
	// hierarchy ("" for the host's); NamespaceErr why it cannot be placed.
	NamespaceRoot, NamespaceErr string

	// BTF is true when the kernel's BTF is at /sys/kernel/btf/vmlinux.
	BTF bool
	// EBPFErr is why the discovery's eBPF programs did not load and attach
	// ("" when they did; EBPFTried false when not tried).
	EBPFErr   string
	EBPFTried bool
	// Freezer is true when a cgroup v1 freezer controller is mounted.
	Freezer bool
	// CgroupKill is true when the YARN root has cgroup.kill (v2).
	CgroupKill bool

	// Resctrl: the CPU supports resctrl (koordlet's check), it is mounted
	// under the sysfs root, and koordlet's BE group exists.
	ResctrlCPU, ResctrlMounted, ResctrlBEGroup bool
	// GroupIdentity and SchedIdle: cpu.bvt_warp_ns and cpu.idle are
	// supported where the CPU QoS applier writes them (koordlet's checks).
	GroupIdentity, SchedIdle bool
	// MemoryQoSFiles are the Memory QoS files koordlet's checks support
	// here (memory.min, memory.low, memory.high, the Anolis ones...).
	MemoryQoSFiles []string
	// PSI is true when the kernel reports pressure (/proc/pressure/*).
	PSI bool

	// NM is what the NodeManager answered.
	NM NMFacts
	// RMEndpoints are the configured ResourceManagers (--yarn-rm-endpoints).
	RMEndpoints []string
	// Cluster is what the API server (NodeSLO, permissions) and the
	// ResourceManager said.
	Cluster ClusterFacts
	// Gates are the feature gates that matter here and whether they are
	// on: the YARN gates and upstream's they depend on.
	Gates map[string]bool
}

// ControllerFacts is one controller's view of the YARN hierarchy.
type ControllerFacts struct {
	// Name is the v1 controller name ("unified" on v2).
	Name string
	// Mounted is true when the controller's hierarchy is under the cgroup
	// root; MountDir is the directory it resolves to.
	Mounted  bool
	MountDir string
	// CoMounted are the other controllers sharing its hierarchy
	// (cpu,cpuacct).
	CoMounted []string
	// RootDir is the YARN hierarchy's directory in it; RootExists whether
	// it is there.
	RootDir    string
	RootExists bool
}

// NMFacts is the NodeManager check.
type NMFacts struct {
	// Endpoint is the address asked; Source says where it came from
	// ("--yarn-nm-endpoint", "pod <ns>/<name>").
	Endpoint, Source string
	// Checked is false when no endpoint could be found (FindErr says why).
	Checked bool
	FindErr string
	// Err is why the NodeManager did not answer; Version, NodeID what it
	// said (/ws/v1/node/info).
	Err, Version, NodeID string
}
