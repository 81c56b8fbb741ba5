package store

import (
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Layout is what YARN does with container cgroups on a node.
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

// DetectLayout decides the layout from containers: one with its own cpu
// cgroup that YARN made (ours reports the ones koordlet made) says the
// LinuxContainerExecutor's; one koordlet made, or one the NodeManager
// lists running without any cgroup, says none.
func DetectLayout(cs []*Container, v2 bool, ours func(*Container) bool) Layout {
	l := LayoutUnknown
	for _, c := range cs {
		switch {
		case c.Cgroups[cgroups.CPU].Owned && (ours == nil || !ours(c)):
			if v2 || c.Cgroups[cgroups.Memory].Owned {
				return LayoutLCE
			}
			return LayoutLCECPUOnly
		case c.Cgroups[cgroups.CPU].Owned, c.Source == SourceNM && c.State == yarn.StateRunning:
			l = LayoutNone
		}
	}
	return l
}
