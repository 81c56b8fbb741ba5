package nodebox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/opencontainers/cgroups"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
)

// PodCgroup returns the container cgroup of the box's pod name (relative to
// the controller mounts of CgroupRoot), or "" for an unknown pod.
func (b *Box) PodCgroup(name string) string {
	if rp, ok := b.pods[name]; ok {
		return rp.containerCgroup
	}
	return ""
}

// Controllers are the hierarchies (below CgroupRoot) the box's pod cgroups
// live in.
func (b *Box) Controllers() []string { return append([]string(nil), b.ctrls()...) }

// SetKoordletArgs replaces Options.KoordletArgs, koordlet's extra flags,
// from the next StartKoordlet on.
func (b *Box) SetKoordletArgs(args []string) {
	b.opts.KoordletArgs = append([]string(nil), args...)
}

// minShares is the kubelet's floor for cpu.shares (the BestEffort QoS
// cgroup and BestEffort pods get it).
const minShares = 2

// milliToShares converts a CPU request to cpu.shares as the kubelet does.
func milliToShares(milli int64) int64 {
	if s := milli * 1024 / 1000; s >= minShares {
		return s
	}
	return minShares
}

// ApplyKubeletCPUShares writes cpu.shares on the box's QoS, pod and
// container cgroups as the kubelet (cgroupfs driver) does: the top
// kubepods cgroup the node's CPUs, the BestEffort QoS cgroup 2, the
// Burstable one the sum of its pods' requests, each pod and container its
// CPU request (2 for BestEffort). On cgroup v2 each is cpu.weight, the
// shares converted by runc's libcontainer function (the kubelet's cgroup
// manager and runc both set it through it). Without it every cgroup keeps
// the kernel's 1024 (v2: 100), which puts BestEffort work on a par with a
// Guaranteed pod. The box made every one of these cgroups; it can be
// called again to undo changes to them.
func (b *Box) ApplyKubeletCPUShares() error {
	l := b.opts.Layout
	file := b.kubeletWeightFile()
	if file == "" {
		return errors.New("kubelet cpu weights: the unified hierarchy here has no cpu controller")
	}
	root := filepath.Join(b.cgroupRoot, "cpu")
	if l.Unified {
		root = b.cgroupRoot
	}
	write := func(rel string, shares int64) error {
		v := uint64(shares)
		if l.Unified {
			v = cgroups.ConvertCPUSharesToCgroupV2Value(v)
		}
		p := filepath.Join(root, rel, file)
		if err := os.WriteFile(p, []byte(strconv.FormatUint(v, 10)), 0o644); err != nil {
			return fmt.Errorf("kubelet %s: %w", file, err)
		}
		return nil
	}
	var burstable int64
	for _, rp := range b.pods {
		milli := int64(0)
		for _, c := range rp.pod.Spec.Containers {
			milli += c.Resources.Requests.Cpu().MilliValue()
		}
		if rp.pod.Status.QOSClass == corev1.PodQOSBurstable {
			burstable += milli
		}
		shares := int64(minShares)
		if rp.pod.Status.QOSClass != corev1.PodQOSBestEffort {
			shares = milliToShares(milli)
		}
		if err := write(rp.cgroupDir, shares); err != nil {
			return err
		}
		if err := write(rp.containerCgroup, shares); err != nil {
			return err
		}
	}
	if err := write(l.kubepods(), milliToShares(int64(runtime.NumCPU())*1000)); err != nil {
		return err
	}
	if err := write(l.qosDir(corev1.PodQOSBestEffort), minShares); err != nil {
		return err
	}
	return write(l.qosDir(corev1.PodQOSBurstable), milliToShares(burstable))
}

// NMPodProcs are the cgroup.procs files of the NodeManager pod's container
// cgroup, one per hierarchy: a real NodeManager (Options.ExternalNM) is
// moved in through them, as the runtime would start it there.
func (b *Box) NMPodProcs() []string {
	var out []string
	for _, c := range b.ctrls() {
		out = append(out, filepath.Join(b.cgroupRoot, c, b.PodCgroup("nodemanager"), "cgroup.procs"))
	}
	return out
}

// MakeYARNHierarchy makes YARN's cgroup hierarchy (Hierarchy) in each
// controller YARN manages, recorded as the box's own (Stop removes it,
// with what the NodeManager left in it), for a real NodeManager, whose
// LinuxContainerExecutor expects it (cgroups.mount=false).
func (b *Box) MakeYARNHierarchy() error {
	return makeCgroup(&b.created, b.cgroupRoot, b.opts.Layout.yarnControllers(), b.Hierarchy())
}

// KillYARNProcesses sends SIGKILL to every process in the box's YARN
// hierarchy (the box made it: everything inside is this run's), as the
// kubelet's end of the NodeManager pod leaves nothing of its containers;
// it returns how many were signalled.
func (b *Box) KillYARNProcesses() int {
	n := 0
	for _, c := range b.opts.Layout.yarnControllers() {
		_ = filepath.WalkDir(filepath.Join(b.cgroupRoot, c, b.Hierarchy()), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				pids := cgtree.Pids(p)
				n += len(pids)
				cgtree.Kill(p)
			}
			return nil
		})
	}
	return n
}

// AnnotatePod merges annotations into the box's pod name (a merge patch
// through the API server, as a user's kubectl annotate) and serves the
// patched pod from the kubelet stub, where koordlet reads its pods.
func (b *Box) AnnotatePod(ctx context.Context, name string, annotations map[string]string) error {
	rp, ok := b.pods[name]
	if !ok {
		return fmt.Errorf("the box has no pod %s", name)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return fmt.Errorf("annotate pod %s: %w", name, err)
	}
	updated, err := b.Kube.CoreV1().Pods(rp.pod.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("annotate pod %s/%s: %w", rp.pod.Namespace, name, err)
	}
	rp.pod.Annotations = updated.Annotations
	b.kubelet.setPods(b.podList())
	return nil
}

// podList is the box's pods as the kubelet stub serves them.
func (b *Box) podList() []corev1.Pod {
	pods := make([]corev1.Pod, 0, len(b.pods))
	for _, rp := range b.pods {
		pods = append(pods, rp.pod)
	}
	return pods
}
