package yarnevict

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// podCPUSeconds is the CPU time the pod has spent (its cgroup's cpuacct
// usage); 0 when unknown.
func podCPUSeconds(r resourceexecutor.CgroupReader, pod *corev1.Pod) float64 {
	if r == nil {
		return 0
	}
	ns, err := r.ReadCPUAcctUsage(koordletutil.GetPodCgroupParentDir(pod))
	if err != nil {
		return 0
	}
	return float64(ns) / 1e9
}

// newUsageReader reads container cgroup files of koordlet's cgroup root and
// version, keeping nothing open between decisions.
func newUsageReader() *cgroups.UsageReader {
	return cgroups.NewUsageReader(system.Conf.CgroupRootDir, system.GetCurrentCgroupVersion() == system.CgroupVersionV2).NoKeep()
}

// containerCPUSeconds is the CPU time the container has spent (its own
// cpuacct cgroup); 0 when unknown.
func containerCPUSeconds(r *cgroups.UsageReader, c *store.Container) float64 {
	ref := c.Cgroups[cgroups.CPUAcct]
	if !ref.Owned {
		return 0
	}
	ns, err := r.CPUUsage(ref.Dir)
	if err != nil {
		return 0
	}
	return float64(ns) / 1e9
}
