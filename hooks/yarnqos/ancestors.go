package yarnqos

import (
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// idleAncestors returns the cgroups between the YARN hierarchy root
// (excluded) and the besteffort QoS cgroup (included) when the hierarchy
// lies below that QoS cgroup, deepest first; nil otherwise. sched-idle acts
// between siblings: an LS pod's cgroup is a sibling of the besteffort QoS
// cgroup (or of its parent, the burstable one), never of the YARN root
// below it, so the YARN root alone being idle leaves the besteffort QoS
// cgroup competing with LS pods as a normal group.
func idleAncestors(hierarchy string) []string {
	be := strings.Trim(filepath.Clean(koordletutil.GetPodQoSRelativePath(corev1.PodQOSBestEffort)), "/")
	h := strings.Trim(filepath.Clean(hierarchy), "/")
	if be == "" || be == "." || !strings.HasPrefix(h, be+"/") {
		return nil
	}
	var out []string
	for d := filepath.Dir(h); ; d = filepath.Dir(d) {
		out = append(out, d)
		if d == be {
			return out
		}
	}
}

// applyAncestorsIdle writes the rule's cpu.idle to idleAncestors of the
// YARN root (Group Identity's bvt of the QoS cgroup is koordlet's own
// groupidentity hook's; its cpu.idle is written by koordlet's core
// scheduling hook only on kernels with core scheduling), and returns how
// many files changed. The caller holds a.mu.
func (a *Applier) applyAncestorsIdle(hierarchy string, rule CPURule) int {
	written := 0
	for _, dir := range idleAncestors(hierarchy) {
		if !a.supported(system.CPUIdle, dir, "cgroup sched-idle") {
			return written
		}
		u, err := resourceexecutor.NewCommonCgroupUpdater(system.CPUIdleName, dir, strconv.FormatInt(rule.Idle, 10), nil)
		if err != nil {
			continue
		}
		if updated, err := a.executor.Update(true, u); err != nil {
			klog.V(4).Infof("yarn: apply cpu.idle to %s, above the YARN hierarchy: %v", dir, err)
		} else if updated {
			written++
			a.wrote(string(u.ResourceType()), 1)
		}
	}
	return written
}
