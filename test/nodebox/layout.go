package nodebox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// hybridUnifiedRoot is the cgroup2 hierarchy of a hybrid host (this
// machine kind: cgroup.procs, cgroup.kill and the base cpu.stat work there;
// the controllers are bound to cgroup v1).
const hybridUnifiedRoot = "/sys/fs/cgroup/unified"

// UnifiedRoot is the host's cgroup2 hierarchy: CgroupRoot itself on a
// cgroup v2 host (every controller there: the v2 guest of make test-v2),
// else the hybrid mount.
func UnifiedRoot() string {
	if PureV2() {
		return CgroupRoot
	}
	return hybridUnifiedRoot
}

// PureV2 reports whether the host mounts cgroup v2 alone at CgroupRoot.
func PureV2() bool {
	_, err := os.Stat(filepath.Join(CgroupRoot, "cgroup.controllers"))
	return err == nil
}

// Layout is how the box's node lays out its cgroups, as the nodes users run
// do: the kubelet driver's naming, the controllers the NodeManager's
// LinuxContainerExecutor manages, and the cgroup version.
type Layout struct {
	// Name names the layout in test names and logs.
	Name string
	// Systemd names the QoS and pod cgroups as the kubelet's systemd driver
	// does (kubepods.slice/kubepods-besteffort.slice/…); koordlet detects
	// the driver from those names.
	Systemd bool
	// YARNControllers are the controllers YARN makes container cgroups in
	// (cgroup v1 names); empty: cpu, cpuacct and memory, as on a host that
	// co-mounts cpu,cpuacct (the distributions' default: YARN's cpu
	// cgroup is its cpuacct cgroup). This host mounts them apart, where
	// the real LCE makes cpu (and memory) only: TestRealYARN covers that
	// layout with Hadoop's own NodeManager. CPU-only YARN (Hadoop's
	// default, memory.enabled=false) has cpu only: the containers' memory
	// is charged to the NodeManager pod's cgroup.
	YARNControllers []string
	// Unified puts the box on the host's cgroup2 hierarchy (UnifiedRoot()),
	// one directory per container as Hadoop 3.5's v2 handler makes it,
	// and points koordlet there.
	Unified bool
	// NoYARNCgroups: YARN makes no container cgroups (the
	// DefaultContainerExecutor, an LCE without resource handlers, Hadoop
	// before 3.5 on cgroup v2): the containers' processes stay in the NM
	// pod's cgroup.
	NoYARNCgroups bool
	// LCELaunch, with NoYARNCgroups, launches containers the way the
	// LinuxContainerExecutor without a resources handler does (the
	// executor's processes with an empty environment above the launch;
	// nmemu.Config.LCELaunch) instead of the DefaultContainerExecutor's.
	LCELaunch bool
	// CoMounted lays a fake root out as most distributions mount cgroup
	// v1: one "cpu,cpuacct" directory with "cpu" and "cpuacct" symlinks to
	// it (FakeRoot only: this host mounts them apart).
	CoMounted bool
}

// The layouts the e2e scenarios run on.
var (
	LayoutCgroupfs = Layout{Name: "cgroupfs"}
	LayoutCPUOnly  = Layout{Name: "cpu-only", YARNControllers: []string{"cpu"}}
	LayoutSystemd  = Layout{Name: "systemd-cpu-only", Systemd: true, YARNControllers: []string{"cpu"}}
	LayoutUnified  = Layout{Name: "unified", Unified: true}
	// LayoutUnifiedSystemd is the systemd driver's naming on cgroup v2.
	LayoutUnifiedSystemd = Layout{Name: "unified-systemd", Unified: true, Systemd: true}
	// LayoutNoYARNCgroups and LayoutUnifiedNoYARNCgroups: YARN makes no
	// container cgroups, on cgroup v1 and on v2.
	LayoutNoYARNCgroups        = Layout{Name: "no-yarn-cgroups", NoYARNCgroups: true}
	LayoutUnifiedNoYARNCgroups = Layout{Name: "unified-no-yarn-cgroups", Unified: true, NoYARNCgroups: true}
	// LayoutNoYARNCgroupsLCE is LayoutNoYARNCgroups launched through the
	// LinuxContainerExecutor without a resources handler.
	LayoutNoYARNCgroupsLCE = Layout{Name: "no-yarn-cgroups-lce", NoYARNCgroups: true, LCELaunch: true}
	// LayoutCoMounted is for a fake root (Options.FakeRoot).
	LayoutCoMounted = Layout{Name: "co-mounted", CoMounted: true}
	// LayoutCoMountedCPUOnly is CPU-only YARN on co-mounted cpu,cpuacct
	// (CPU-only YARN on most distributions), for a fake root: the
	// containers' memory is their processes' real RSS.
	LayoutCoMountedCPUOnly = Layout{Name: "co-mounted-cpu-only", CoMounted: true, YARNControllers: []string{"cpu"}}
)

// kubepods is the top QoS cgroup.
func (l Layout) kubepods() string {
	if l.Systemd {
		return "kubepods.slice"
	}
	return "kubepods"
}

// qosDir is the QoS class's cgroup (Guaranteed: kubepods itself).
func (l Layout) qosDir(qos corev1.PodQOSClass) string {
	switch {
	case qos == corev1.PodQOSGuaranteed:
		return l.kubepods()
	case l.Systemd:
		class := strings.ToLower(string(qos))
		return "kubepods.slice/kubepods-" + class + ".slice"
	default:
		return "kubepods/" + strings.ToLower(string(qos))
	}
}

// Hierarchy is the YARN hierarchy the box's NodeManager uses: hadoop-yarn
// below the besteffort QoS cgroup, koordlet's default for the driver.
func (l Layout) Hierarchy() string {
	return l.qosDir(corev1.PodQOSBestEffort) + "/hadoop-yarn"
}

// podDir is a pod's cgroup; containerDir its container's (containerd).
func (l Layout) podDir(qos corev1.PodQOSClass, uid string) string {
	if !l.Systemd {
		return l.qosDir(qos) + "/pod" + uid
	}
	id := strings.ReplaceAll(uid, "-", "_")
	switch qos {
	case corev1.PodQOSGuaranteed:
		return "kubepods.slice/kubepods-pod" + id + ".slice"
	default:
		class := strings.ToLower(string(qos))
		return l.qosDir(qos) + "/kubepods-" + class + "-pod" + id + ".slice"
	}
}

func (l Layout) containerDir(podDir, containerID string) string {
	if l.Systemd {
		return podDir + "/cri-containerd-" + containerID + ".scope"
	}
	return podDir + "/" + containerID
}

// controllers are where the box builds its kubepods tree: the v1
// controllers, or the one unified hierarchy ("").
func (l Layout) controllers() []string {
	if l.Unified {
		return []string{""}
	}
	return controllers
}

// yarnControllers are the controllers YARN makes container cgroups in.
func (l Layout) yarnControllers() []string {
	switch {
	case l.NoYARNCgroups:
		return nil
	case l.Unified:
		return []string{""}
	case len(l.YARNControllers) > 0:
		return l.YARNControllers
	}
	return []string{"cpu", "cpuacct", "memory"}
}

// mirrorControllers are the real controllers a fake root's containers are
// mirrored in: co-mounted, a cpu cgroup is a cpuacct cgroup too.
func (l Layout) mirrorControllers() []string {
	ctrls := l.yarnControllers()
	if l.CoMounted && slices.Contains(ctrls, "cpu") && !slices.Contains(ctrls, "cpuacct") {
		ctrls = append(slices.Clone(ctrls), "cpuacct")
	}
	return ctrls
}

// cgroupRoot is the mount root koordlet and the emulator use.
func (l Layout) cgroupRoot() string {
	if l.Unified {
		return UnifiedRoot()
	}
	return CgroupRoot
}

// kubepodsDirs are the box's kubepods directories (one per hierarchy).
func (l Layout) kubepodsDirs() []string {
	var out []string
	for _, c := range l.controllers() {
		out = append(out, filepath.Join(l.cgroupRoot(), c, l.kubepods()))
	}
	return out
}

// koordletPodCgroup is koordlet's own container cgroup with
// Options.KoordletCgroupNS (the pod uid is the box's).
func (l Layout) koordletPodCgroup() string {
	return l.containerDir(l.podDir(corev1.PodQOSBurstable, "0b0c0d0e-koordlet"), "koordlet")
}
