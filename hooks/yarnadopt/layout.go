package yarnadopt

import (
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// Layout is what YARN does with container cgroups on this node.
type Layout string

// Layouts.
const (
	// LayoutUnknown: no running container seen yet.
	LayoutUnknown Layout = "unknown"
	// LayoutLCE: YARN makes each container its cgroups (cpu and memory on
	// v1, or one unified directory on v2).
	LayoutLCE Layout = "lce-cgroups"
	// LayoutLCECPUOnly: YARN makes cpu cgroups only (its default
	// yarn.nodemanager.resource.memory.enabled=false, cgroup v1).
	LayoutLCECPUOnly Layout = "lce-cpu-only"
	// LayoutNone: YARN makes no container cgroups; its containers run in
	// the NodeManager pod's cgroup.
	LayoutNone Layout = "none"
)

// detectLayout decides the layout from the store (containers YARN gave
// their own cgroups) and this adopter (containers found in the NM pod),
// and logs it once per change with what koordlet does about it.
func (a *Adopter) detectLayout(h cgroups.Hierarchy) {
	l := LayoutUnknown
	for _, c := range a.opts.Store.Snapshot() {
		if !c.Cgroups[cgroups.CPU].Owned {
			continue
		}
		if m, err := marked(h.AbsDir(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir)); err == nil && m {
			l = LayoutNone // ours
			continue
		}
		if h.V2 || c.Cgroups[cgroups.Memory].Owned {
			l = LayoutLCE
		} else {
			l = LayoutLCECPUOnly
		}
		break
	}
	if l == LayoutUnknown && len(a.adoptions) > 0 {
		l = LayoutNone
	}
	if l == a.layout || l == LayoutUnknown {
		return
	}
	a.layout = l
	switch l {
	case LayoutNone:
		klog.Infof("yarn: node layout: YARN makes no container cgroups (its containers run in the NodeManager pod's cgroup %s); YARNContainerCgroups gives each its own cgroup below %s and moves its processes there at their exec", a.podDir, h)
	case LayoutLCECPUOnly:
		klog.Infof("yarn: node layout: YARN's LinuxContainerExecutor makes cpu cgroups only (memory stays charged to the NodeManager pod; see YARNMemoryCgroup); YARNContainerCgroups does nothing here")
	case LayoutLCE:
		klog.Infof("yarn: node layout: YARN's LinuxContainerExecutor makes each container its cgroups below %s; YARNContainerCgroups does nothing here", h)
	}
}
