package yarninformer

import (
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// logLayout logs, once per layout, what YARN does with container cgroups
// and what koordlet does about it; with YARNContainerCgroups on the
// container cgroup loop says it instead (it tells its own cgroups apart).
func (p *Plugin) logLayout() {
	if features.Enabled(features.YARNContainerCgroups) || p.scanner == nil {
		return
	}
	l := store.DetectLayout(p.store.Snapshot(), p.scanner.Hierarchy().V2, nil)
	if l == store.LayoutNone {
		// Said after two resyncs in a row: a container the NM just
		// started may be listed before its cgroup is scanned.
		if p.noneSeen++; p.noneSeen < 2 {
			return
		}
	} else {
		p.noneSeen = 0
	}
	if l == store.LayoutUnknown || l == p.layout {
		return
	}
	p.layout = l
	h := p.scanner.Hierarchy()
	switch l {
	case store.LayoutNone:
		klog.Warningf("yarn: node layout: the NodeManager's running containers have no cgroups below %s (the DefaultContainerExecutor, an LCE without resource handlers, or Hadoop before 3.5 on cgroup v2): koordlet sees them only through the NodeManager, without per-container metrics, QoS or eviction; --feature-gates=YARNContainerCgroups=true gives each its own cgroup", h)
	case store.LayoutLCECPUOnly:
		klog.Infof("yarn: node layout: YARN's LinuxContainerExecutor makes cpu cgroups for its containers below %s, no memory cgroups (their memory is measured by their processes; YARNMemoryCgroup makes memory cgroups)", h)
	default:
		klog.Infof("yarn: node layout: YARN's LinuxContainerExecutor makes each container its cgroups below %s", h)
	}
}
