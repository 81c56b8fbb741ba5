package yarnqos

import (
	"path/filepath"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
)

// The kubelet (and the container runtime) write cpu.shares (v2 cpu.weight)
// to the kubepods cgroup, its QoS cgroups and every pod cgroup: when pods
// come and go, every minute, and on an in-place resize. The kernel refuses
// those writes (EINVAL) to a group whose cpu.idle is 1, and the kubelet's QoS
// update stops at the first error. So koordlet-yarn never makes such a
// cgroup idle: sched-idle goes to the YARN hierarchy root only (YARN itself
// writes nothing but the CFS quota there) and, for the containers, to their
// tasks as the SCHED_IDLE policy (schedidle.go): the LinuxContainerExecutor
// writes cpu.shares (v2 cpu.weight) to a container's cgroup right after
// creating it and fails the launch when that write fails.

// podCgroupName matches a pod's cgroup: cgroupfs "pod<uid>", systemd
// "kubepods[-<qos>]-pod<uid with _>.slice".
var podCgroupName = regexp.MustCompile(`^(pod[0-9a-fA-F-]{36}|kubepods(-besteffort|-burstable)?-pod[0-9a-fA-F_]{36}\.slice)$`)

// KubeletManaged reports whether the cgroup dir (relative to the controller
// mount) is one the kubelet writes CPU weights to: the kubepods cgroup, a
// QoS cgroup, a pod cgroup or anything inside a pod cgroup (the runtime's
// containers), or a level above kubepods (the root, its slices).
func KubeletManaged(dir string) bool {
	d := strings.Trim(filepath.Clean("/"+dir), "/")
	if d == "" {
		return true
	}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		q := strings.Trim(filepath.Clean(koordletutil.GetPodQoSRelativePath(qos)), "/")
		if q == "" || q == "." {
			continue
		}
		if d == q || strings.HasPrefix(q, d+"/") {
			return true // a QoS cgroup, kubepods, or above them
		}
	}
	for _, part := range strings.Split(d, "/") {
		if podCgroupName.MatchString(part) {
			return true
		}
	}
	return false
}
