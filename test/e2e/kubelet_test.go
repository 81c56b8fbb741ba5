package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/kubeletnode"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest"
)

// kubeletGuest is TestKubelet's node: cgroup v2, a kernel of its own that
// a real kubelet and containerd may own (v2guest's Node).
var kubeletGuest = v2guest.Guest{Node: true, MemoryMiB: 8192}

// kubeletNodeEnv tells the test binary in the guest that it runs in the
// real-kubelet guest (the guest's init passes no GuestEnv).
const kubeletNodeEnv = "KOORDLET_YARN_KUBELET_NODE"

// kubeletPrepDir is where the host renders the DaemonSet and builds the
// test pods' program for the guest (kubeletnode.Prepare).
func kubeletPrepDir() string { return filepath.Join(repoTop(), "build/kubeletnode") }

// runKubeletGuest is TestMain's host side of make test-kubelet.
func runKubeletGuest() int {
	top := repoTop()
	for _, b := range []string{"kubelet", "kube-controller-manager", "kube-scheduler", "containerd", "containerd-shim-runc-v2", "runc"} {
		if _, err := os.Stat(filepath.Join(top, "build/bin", b)); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: build/bin/%s is missing: make kubelet-tools builds the real node's binaries\n", b)
			return 1
		}
	}
	if err := nodebox.EnsureBinaries(top, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	crds, err := nodebox.KoordinatorCRDDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := kubeletnode.Prepare(top, kubeletPrepDir()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return v2guest.RunSelfIn(kubeletGuest, top, []string{crds}, []string{nodebox.CRDDirEnv + "=" + crds, kubeletNodeEnv + "=1"})
}

// TestKubelet runs koordlet-yarn's DaemonSet, as deploy/koordlet renders
// it, under a real kubelet v1.35 and containerd v2 on cgroup v2, beside a
// NodeManager pod: make test-kubelet runs it in a guest of its own
// (KOORDLET_YARN_E2E_GUEST=kubelet); never on this shared host, whose
// kernel settings a kubelet tunes.
func TestKubelet(t *testing.T) {
	if !v2guest.InGuest() || os.Getenv(kubeletNodeEnv) != "1" {
		kerneltest.Skip(t, "TestKubelet runs a real kubelet: make test-kubelet runs it in a guest of its own (KOORDLET_YARN_E2E_GUEST=kubelet)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	start := time.Now()
	n, err := kubeletnode.Start(ctx, kubeletnode.Options{Top: repoTop(), Dir: dir, Podbin: filepath.Join(kubeletPrepDir(), kubeletnode.PodbinFile), Logf: t.Logf})
	if n != nil {
		defer n.Stop()
	}
	require.NoError(t, err, "the real node")
	t.Logf("the node %s is up in %s (kubelet v1.35.4, containerd v2.4.2, runc v1.4.3, cgroupfs)", n.Name, time.Since(start).Round(time.Second))
	defer func() {
		if t.Failed() {
			for _, l := range []string{n.KubeletLog(), n.ContainerdLog()} {
				t.Logf("%s ends:\n%s", l, tail(l, 40))
			}
			pods, _ := filepath.Glob("/var/log/pods/*/*/*.log")
			for _, l := range pods {
				t.Logf("%s, its errors, warnings and yarn lines:\n%s", l, grepTail(l, koordletLogLine, 80))
			}
		}
	}()
	require.NoError(t, nodebox.ApplyKoordinatorCRDs(ctx, n.RestConfig()))

	var amID, execID string
	ok := t.Run("observe-only DaemonSet", func(t *testing.T) {
		_, err := n.ApplyFile(ctx, filepath.Join(kubeletPrepDir(), kubeletnode.ObserveManifest))
		require.NoError(t, err)
		pod := waitKoordletPod(t, n, "")
		t.Logf("koordlet-yarn pod %s running (image %s)", pod.Name, pod.Spec.Containers[0].Image)
	})
	require.True(t, ok, "the rest needs koordlet-yarn running")

	ok = t.Run("NodeManager pod, containers discovered", func(t *testing.T) {
		nm, err := n.CreatePod(ctx, n.NMPod(false), 3*time.Minute)
		require.NoError(t, err)
		t.Logf("NodeManager pod %s (QoS %s)", nm.UID, nm.Status.QOSClass)
		amID, err = kubeletnode.Launch(nmemu.Spec{AppID: 1, Attempt: 1, Sequence: 1, User: "hadoop", MemoryMB: 256, VCores: 1, Script: "exec sleep 3600"})
		require.NoError(t, err)
		execID, err = kubeletnode.Launch(nmemu.Spec{AppID: 1, Attempt: 1, Sequence: 2, User: "hadoop", MemoryMB: 512, VCores: 1, Script: "exec sleep 3600"})
		require.NoError(t, err)
		requireDiscovered(t, amID, execID)
		for _, id := range []string{amID, execID} {
			_, err := os.Stat(filepath.Join("/sys/fs/cgroup", kubeletnode.YARNHierarchy, id))
			assert.NoError(t, err, "the container's cgroup under the kubelet's besteffort QoS cgroup")
		}
	})
	require.True(t, ok, "the rest needs the NodeManager's containers")

	t.Run("kubelet restart", func(t *testing.T) {
		n.StopKubelet()
		require.NoError(t, n.StartKubelet())
		require.NoError(t, n.WaitNodeReady(ctx, 3*time.Minute))
		// The kubelet's housekeeping (every 2 s) cleans orphaned pod
		// cgroups: give it a few rounds over the YARN hierarchy.
		time.Sleep(20 * time.Second)
		requireYARNHierarchy(t, amID, execID)
		requireDiscovered(t, amID, execID)
	})

	t.Run("containerd restart", func(t *testing.T) {
		n.StopContainerd()
		require.NoError(t, n.StartContainerd())
		require.NoError(t, n.WaitNodeReady(ctx, 3*time.Minute))
		_, err := n.WaitPodRunning(ctx, kubeletnode.YARNNamespace, kubeletnode.NMPodName, 2*time.Minute)
		require.NoError(t, err)
		requireYARNHierarchy(t, amID, execID)
		requireDiscovered(t, amID, execID)
	})

	t.Run("enforcement DaemonSet", func(t *testing.T) {
		old := waitKoordletPod(t, n, "")
		_, err := n.ApplyFile(ctx, filepath.Join(kubeletPrepDir(), kubeletnode.EnforceManifest))
		require.NoError(t, err)
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, "koordlet-yarn.io/enforcement")
		_, err = n.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
		pod := waitKoordletPod(t, n, "enforce")
		t.Logf("enforcement pod %s running; the observe-only pod %s gone", pod.Name, old.Name)
		requireDiscovered(t, amID, execID)
	})

	t.Run("CPU and Memory QoS", func(t *testing.T) { kubeletQoS(t, n, execID, 512) })

	t.Run("koordlet-yarn pod recreated by the DaemonSet", func(t *testing.T) {
		old := waitKoordletPod(t, n, "enforce")
		require.NoError(t, n.Client.CoreV1().Pods(old.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{}))
		var pod *corev1.Pod
		require.NoError(t, nodebox.WaitFor(3*time.Minute, "a new koordlet-yarn pod", func() bool {
			p := koordletPod(n, "enforce")
			if p != nil && p.UID != old.UID {
				pod = p
				return true
			}
			return false
		}))
		_, err := n.WaitPodRunning(ctx, pod.Namespace, pod.Name, 3*time.Minute)
		require.NoError(t, err)
		requireDiscovered(t, amID, execID)
		requireYARNHierarchy(t, amID, execID)
	})

	t.Run("in-place resize", func(t *testing.T) { kubeletResize(t, n) })

	t.Run("memory pressure: koordlet evicts before the kubelet", func(t *testing.T) { kubeletPressure(t, n, amID, execID) })

	t.Run("NodeManager pod deleted: nothing left behind", func(t *testing.T) { kubeletNMDeleted(t, n) })

	t.Run("every node-side gate, no YARN cgroups (Hadoop 3.3 on v2)", func(t *testing.T) { kubeletAdopt(t, n) })

	// koordlet-yarn's own errors, for the record (koordlet logs some on
	// any node: NodeResourceTopology's, the CPU evict's unset thresholds).
	if pods, _ := filepath.Glob("/var/log/pods/" + kubeletnode.KoordletNS + "_*/koordlet/*.log"); len(pods) > 0 {
		t.Logf("koordlet-yarn's errors (%s):\n%s", pods[len(pods)-1], grepTail(pods[len(pods)-1], regexp.MustCompile(`F E\d{4}`), 30))
	}

	t.Run("kubelet log has no cgroup error", func(t *testing.T) {
		b, err := os.ReadFile(n.KubeletLog())
		require.NoError(t, err)
		// KubeletCgroupDriverFromCRI (GA): the kubelet takes the driver
		// from containerd (runc's SystemdCgroup=false), not its config.
		require.Contains(t, string(b), `"Using cgroup driver setting received from the CRI runtime" cgroupDriver="cgroupfs"`,
			"the kubelet runs on the cgroupfs driver, as containerd says")
		errs := kubeletCgroupErrors(t, n.KubeletLog())
		assert.Empty(t, errs, "the kubelet's cgroup errors with every YARN gate on")
	})
}

// waitKoordletPod waits for the koordlet DaemonSet's pod (mode "" the
// observe-only one, "enforce" the enforcement component's) to run, and for
// the other's to be gone.
func waitKoordletPod(t *testing.T, n *kubeletnode.Node, mode string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	require.NoError(t, nodebox.WaitFor(5*time.Minute, "the koordlet-yarn pod ("+mode+")", func() bool {
		pod = koordletPod(n, mode)
		return pod != nil
	}), "no koordlet-yarn pod was made: %s", dsStatus(n))
	got, err := n.WaitPodRunning(context.Background(), pod.Namespace, pod.Name, 5*time.Minute)
	require.NoError(t, err, "koordlet-yarn's pod")
	other := "enforce"
	if mode == "enforce" {
		other = ""
	}
	require.NoError(t, nodebox.WaitFor(3*time.Minute, "the other koordlet-yarn pod gone", func() bool { return koordletPod(n, other) == nil }))
	require.NoError(t, nodebox.WaitFor(3*time.Minute, "koordlet-yarn's HTTP server", func() bool {
		_, err := kubeletnode.KoordletGet(koordletyarn.ContainersPath)
		return err == nil
	}))
	return got
}

// koordletPod is the node's pod of the koordlet DaemonSet of mode, nil
// when there is none (a pod being deleted does not count).
func koordletPod(n *kubeletnode.Node, mode string) *corev1.Pod {
	pods, err := n.Client.CoreV1().Pods(kubeletnode.KoordletNS).List(context.Background(), metav1.ListOptions{LabelSelector: kubeletnode.KoordletLabel + "=koordlet"})
	if err != nil {
		return nil
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && p.Labels["koordlet-yarn.io/mode"] == mode {
			return p
		}
	}
	return nil
}

func dsStatus(n *kubeletnode.Node) string {
	dss, err := n.Client.AppsV1().DaemonSets(kubeletnode.KoordletNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, ds := range dss.Items {
		fmt.Fprintf(&b, "%s: desired %d, current %d, ready %d; ", ds.Name, ds.Status.DesiredNumberScheduled, ds.Status.CurrentNumberScheduled, ds.Status.NumberReady)
	}
	return b.String()
}

// requireDiscovered waits until koordlet's store has every id RUNNING with
// its cgroup.
func requireDiscovered(t *testing.T, ids ...string) {
	t.Helper()
	var last string
	err := nodebox.WaitFor(2*time.Minute, "koordlet-yarn to list the containers", func() bool {
		b, err := kubeletnode.KoordletGet(koordletyarn.ContainersPath)
		if err != nil {
			last = err.Error()
			return false
		}
		var resp koordletyarn.ContainersResponse
		if err := json.Unmarshal(b, &resp); err != nil {
			last = err.Error()
			return false
		}
		for _, id := range ids {
			c := find(resp, id)
			if c == nil || c.State != "RUNNING" {
				last = fmt.Sprintf("%s: %+v", id, c)
				return false
			}
		}
		return true
	})
	require.NoError(t, err, "last: %s", last)
}

// requireYARNHierarchy checks that the YARN hierarchy and the containers'
// cgroups are still where the NodeManager made them.
func requireYARNHierarchy(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		_, err := os.Stat(filepath.Join("/sys/fs/cgroup", kubeletnode.YARNHierarchy, id, "cgroup.procs"))
		require.NoError(t, err, "container %s's cgroup", id)
	}
}

// kubeletCgroupErrors are the kubelet's error lines (klog's E) that name a
// cgroup.
var cgroupErrLine = regexp.MustCompile(`(?i)cgroup`)

func kubeletCgroupErrors(t *testing.T, log string) []string {
	t.Helper()
	f, err := os.Open(log)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "E") && cgroupErrLine.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// koordletLogLine picks klog's errors and warnings and koordlet-yarn's own
// lines out of a pod's log.
var koordletLogLine = regexp.MustCompile(`(stderr|stdout) F [EW]\d{4}|yarn|evict|nodemanager`)

// grepTail is the last n lines of a file that match re.
func grepTail(path string, re *regexp.Regexp, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return strings.Join(out, "\n")
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
