package yarnadopt

import (
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// Layout is what YARN does with container cgroups on this node.
type Layout = store.Layout

// The layouts (see store.Layout).
const (
	LayoutUnknown    = store.LayoutUnknown
	LayoutLCE        = store.LayoutLCE
	LayoutLCECPUOnly = store.LayoutLCECPUOnly
	LayoutNone       = store.LayoutNone
)

// detectLayout decides the layout from the store (containers YARN gave
// their own cgroups) and this adopter (containers found in the NM pod),
// and logs it once per change with what koordlet does about it.
func (a *Adopter) detectLayout(h cgroups.Hierarchy) {
	l := store.DetectLayout(a.opts.Store.Snapshot(), h.V2, func(c *store.Container) bool {
		m, err := marked(h.AbsDir(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir))
		return err == nil && m
	})
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
