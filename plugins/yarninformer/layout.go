package yarninformer

import (
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// nodeLayout says what YARN does with container cgroups on this node, from
// the store: "lce" (its containers have their own cgroups; "lce-cpu-only"
// when only cpu, on cgroup v1), "none" (running containers the NM lists
// have none), "" (no running container yet).
func nodeLayout(cs []*store.Container, v2 bool) string {
	none := false
	for _, c := range cs {
		if c.Cgroups[cgroups.CPU].Owned {
			if v2 || c.Cgroups[cgroups.Memory].Owned {
				return "lce"
			}
			return "lce-cpu-only"
		}
		if c.Source == store.SourceNM && c.State == yarn.StateRunning {
			none = true
		}
	}
	if none {
		return "none"
	}
	return ""
}

// logLayout logs, once per layout, what YARN does with container cgroups
// and what koordlet does about it; with YARNContainerCgroups on the
// container cgroup loop says it instead (it tells its own cgroups apart).
func (p *Plugin) logLayout() {
	if features.Enabled(features.YARNContainerCgroups) || p.scanner == nil {
		return
	}
	l := nodeLayout(p.store.Snapshot(), p.scanner.Hierarchy().V2)
	if l == "none" {
		// Said after two resyncs in a row: a container the NM just
		// started may be listed before its cgroup is scanned.
		if p.noneSeen++; p.noneSeen < 2 {
			return
		}
	} else {
		p.noneSeen = 0
	}
	if l == "" || l == p.layout {
		return
	}
	p.layout = l
	h := p.scanner.Hierarchy()
	switch l {
	case "none":
		klog.Warningf("yarn: node layout: the NodeManager's running containers have no cgroups below %s (the DefaultContainerExecutor, an LCE without resource handlers, or Hadoop before 3.5 on cgroup v2): koordlet sees them only through the NodeManager, without per-container metrics, QoS or eviction; --feature-gates=YARNContainerCgroups=true gives each its own cgroup", h)
	case "lce-cpu-only":
		klog.Infof("yarn: node layout: YARN's LinuxContainerExecutor makes cpu cgroups for its containers below %s, no memory cgroups (their memory is measured by their processes; YARNMemoryCgroup makes memory cgroups)", h)
	default:
		klog.Infof("yarn: node layout: YARN's LinuxContainerExecutor makes each container its cgroups below %s", h)
	}
}
