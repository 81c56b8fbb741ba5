package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordclient "github.com/koordinator-sh/koordinator/pkg/client/clientset/versioned"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kubeletnode"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// kubeletResize: an in-place resize (the pods/resize subresource, GA in
// 1.35) of an LS pod reaches its container's cgroup through the real
// kubelet while koordlet-yarn runs; the NodeManager pod, BestEffort as
// Koordinator's hadoop-yarn chart makes it (batch resources only), cannot
// be resized into another QoS class: the API server refuses, and nothing
// of the YARN hierarchy changes.
func kubeletResize(t *testing.T, n *kubeletnode.Node) {
	ctx := context.Background()
	ls, err := n.CreatePod(ctx, n.LSPod("web", 18080, "500m", "128Mi"), 3*time.Minute)
	require.NoError(t, err)
	cg := containerCgroup(t, ls)
	require.Equal(t, "50000 100000", readTrim(t, filepath.Join(cg, "cpu.max")), "the LS container's CPU limit before")
	patch := `{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"750m"},"limits":{"cpu":"750m"}}}]}}`
	_, err = n.Client.CoreV1().Pods(ls.Namespace).Patch(ctx, ls.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	require.NoError(t, err, "resize the LS pod")
	assert.Eventually(t, func() bool { return readTrim(t, filepath.Join(cg, "cpu.max")) == "75000 100000" }, 2*time.Minute, time.Second,
		"the kubelet writes the resized CPU limit into the running container's cgroup")
	p, err := n.Client.CoreV1().Pods(ls.Namespace).Get(ctx, ls.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount, "resized in place, not restarted")
	_, err = kubeletnode.KoordletGet(koordletyarn.ContainersPath)
	assert.NoError(t, err, "koordlet-yarn keeps serving")

	nmPatch := `{"spec":{"containers":[{"name":"nodemanager","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}`
	_, err = n.Client.CoreV1().Pods(kubeletnode.YARNNamespace).Patch(ctx, kubeletnode.NMPodName, types.StrategicMergePatchType, []byte(nmPatch), metav1.PatchOptions{}, "resize")
	require.Error(t, err, "a BestEffort NodeManager pod cannot be resized into Burstable")
	t.Logf("the NodeManager pod's resize is refused: %v", err)
	require.NoError(t, n.Client.CoreV1().Pods(ls.Namespace).Delete(ctx, ls.Name, metav1.DeleteOptions{}))
}

// containerCgroup is the cgroupfs driver's cgroup of a pod's first
// container on cgroup v2: kubepods[/<qos>]/pod<uid>/<container id>.
func containerCgroup(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	require.NotEmpty(t, p.Status.ContainerStatuses)
	id := p.Status.ContainerStatuses[0].ContainerID
	id = id[strings.Index(id, "://")+3:]
	qos := ""
	switch p.Status.QOSClass {
	case corev1.PodQOSBurstable:
		qos = "burstable"
	case corev1.PodQOSBestEffort:
		qos = "besteffort"
	}
	dir := filepath.Join("/sys/fs/cgroup/kubepods", qos, "pod"+string(p.UID), id)
	_, err := os.Stat(dir)
	require.NoError(t, err, "the container's cgroup")
	return dir
}

func readTrim(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

// kubeletPressure: node memory pressure from a growing YARN executor under
// the default thresholds of both — koordlet's BE memory evict at
// Koordinator's default 70% (the slo-controller's default NodeSLO, which
// koord-manager would write), the kubelet's eviction manager at its
// default memory.available<100Mi. koordlet-yarn (YARNBEMemoryEvict, the
// NodeManager guard) kills the growing executor, not the AM nor the older
// executor; the kubelet never reports MemoryPressure, evicts no pod, and
// the NodeManager pod keeps running.
func kubeletPressure(t *testing.T, n *kubeletnode.Node, amID, execID string) {
	ctx := context.Background()
	updateNodeSLO(t, n, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true), MemoryEvictThresholdPercent: ptr.To[int64](70)}
	})
	nmBefore, err := n.Client.CoreV1().Pods(kubeletnode.YARNNamespace).Get(ctx, kubeletnode.NMPodName, metav1.GetOptions{})
	require.NoError(t, err)
	time.Sleep(5 * time.Second) // koordlet's informer sees the NodeSLO

	total, used, err := nodebox.MemInfo()
	require.NoError(t, err)
	// Enough to cross 70% by a GiB, never enough to reach the kubelet's
	// threshold before koordlet acts.
	grow := (total*70/100 - used + 1<<30) >> 20
	t.Logf("node memory %d of %d MiB used (%d%%); the executor grows by %d MiB at 128 MiB/s", used>>20, total>>20, used*100/total, grow)
	growID, err := kubeletnode.Launch(nmemu.Spec{AppID: 1, Attempt: 1, Sequence: 3, User: "hadoop", MemoryMB: grow + 256, VCores: 1,
		Script: fmt.Sprintf("exec /podbin alloc -mib %d -rate 128", grow)})
	require.NoError(t, err)

	pressure := false
	var peak int64
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		if _, u, err := nodebox.MemInfo(); err == nil && u > peak {
			peak = u
		}
		if node, err := n.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err == nil {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeMemoryPressure && c.Status == corev1.ConditionTrue {
					pressure = true
				}
			}
		}
		if s := nmState(t, growID); s != "RUNNING" && s != "NEW" && s != "LOCALIZING" {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("node memory peaked at %d MiB (%d%%)", peak>>20, peak*100/total)
	if b, err := kubeletnode.KoordletGet(koordletyarn.ContainersPath); err == nil {
		var resp koordletyarn.ContainersResponse
		if json.Unmarshal(b, &resp) == nil {
			t.Logf("the growing executor in koordlet-yarn's store: %+v", find(resp, growID))
		}
	}
	assert.Contains(t, []string{"EXITED_WITH_FAILURE", "DONE", "KILLING"}, nmState(t, growID), "koordlet-yarn killed the growing executor")
	assert.Equal(t, "RUNNING", nmState(t, amID), "the AM lives")
	assert.Equal(t, "RUNNING", nmState(t, execID), "the older executor lives")
	assert.False(t, pressure, "the kubelet never saw memory pressure")
	pods, err := n.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range pods.Items {
		assert.NotEqual(t, "Evicted", p.Status.Reason, "the kubelet evicted %s/%s", p.Namespace, p.Name)
	}
	nm, err := n.Client.CoreV1().Pods(kubeletnode.YARNNamespace).Get(ctx, kubeletnode.NMPodName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, nmBefore.UID, nm.UID)
	assert.Equal(t, corev1.PodRunning, nm.Status.Phase, "the NodeManager pod runs")
	assert.Zero(t, nm.Status.ContainerStatuses[0].RestartCount, "the NodeManager was not restarted")
	b, err := kubeletnode.KoordletGet(koordletyarn.EvictionsPath)
	require.NoError(t, err)
	assert.Contains(t, string(b), growID, "koordlet-yarn's evictions name the executor")
	var said []string
	assert.Eventually(t, func() bool {
		events, err := n.Client.CoreV1().Events(kubeletnode.YARNNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + kubeletnode.NMPodName})
		if err != nil {
			return false
		}
		said = said[:0]
		for _, e := range events.Items {
			said = append(said, e.Reason+": "+e.Message)
			if e.Reason == "YARNContainerEvicted" && strings.Contains(e.Message, growID) {
				return true
			}
		}
		return false
	}, 30*time.Second, time.Second, "a YARNContainerEvicted Event on the NodeManager pod names the evicted container: %v", said)
	if m, err := kubeletnode.KoordletGet("/metrics"); assert.NoError(t, err) {
		assert.Regexp(t, `koordlet_yarn_container_evictions_total\{[^}]*reason="BEMemoryEvict"[^}]*result="succeeded"[^}]*\} 1`, string(m))
	}
	evictLines := 0
	if b, err := os.ReadFile(n.KubeletLog()); err == nil {
		evictLines = strings.Count(string(b), "eviction manager: attempting to reclaim")
	}
	assert.Zero(t, evictLines, "the kubelet's eviction manager never had to reclaim")
}

// nmState is a container's state from the NodeManager's REST API.
func nmState(t *testing.T, id string) string {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://127.0.0.1:8042/ws/v1/node/containers/" + id)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		Container struct {
			State string `json:"state"`
		} `json:"container"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err.Error()
	}
	return v.Container.State
}

// kubeletNMDeleted: the NodeManager pod deleted through the API (the
// kubelet sends SIGTERM, the NodeManager stops its containers and removes
// their cgroups and the hierarchy it made); nothing of YARN is left on the
// node and koordlet-yarn's store empties.
// ids are the containers whose cgroups must be gone too (those koordlet
// made, under a hierarchy koordlet may keep: an empty directory).
func kubeletNMDeleted(t *testing.T, n *kubeletnode.Node, ids ...string) {
	ctx := context.Background()
	require.NoError(t, n.Client.CoreV1().Pods(kubeletnode.YARNNamespace).Delete(ctx, kubeletnode.NMPodName, metav1.DeleteOptions{}))
	require.NoError(t, nodebox.WaitFor(2*time.Minute, "the NodeManager pod gone", func() bool {
		_, err := n.Client.CoreV1().Pods(kubeletnode.YARNNamespace).Get(ctx, kubeletnode.NMPodName, metav1.GetOptions{})
		return err != nil
	}))
	if len(ids) == 0 {
		assert.Eventually(t, func() bool {
			_, err := os.Stat(filepath.Join("/sys/fs/cgroup", kubeletnode.YARNHierarchy))
			return os.IsNotExist(err)
		}, time.Minute, time.Second, "the YARN hierarchy is gone with its NodeManager")
	}
	for _, id := range ids {
		assert.Eventually(t, func() bool {
			_, err := os.Stat(filepath.Join("/sys/fs/cgroup", kubeletnode.YARNHierarchy, id))
			return os.IsNotExist(err)
		}, time.Minute, time.Second, "the cgroup koordlet-yarn made for %s is gone with it", id)
	}
	assert.Eventually(t, func() bool {
		b, err := kubeletnode.KoordletGet(koordletyarn.ContainersPath)
		if err != nil {
			return false
		}
		var resp koordletyarn.ContainersResponse
		return json.Unmarshal(b, &resp) == nil && len(resp.Containers) == 0
	}, time.Minute, time.Second, "koordlet-yarn's store is empty")
}

// kubeletAdopt: Hadoop before 3.5 on a cgroup v2 node makes no container
// cgroups; with YARNContainerCgroups (the operator's render with every
// node-side gate on, kubeletnode.AllGatesManifest: the DaemonSet rolled by
// the controller) koordlet-yarn makes each container the cgroup the LCE would
// and moves its processes there from the NodeManager pod's cgroup. The
// kubelet's housekeeping, which removes the cgroups of pods it does not
// know, never removes those (nor across its restart), and deleting the
// NodeManager pod leaves none behind.
func kubeletAdopt(t *testing.T, n *kubeletnode.Node) {
	ctx := context.Background()
	old := waitKoordletPod(t, n, "enforce")
	_, err := n.ApplyFile(ctx, filepath.Join(kubeletPrepDir(), kubeletnode.AllGatesManifest))
	require.NoError(t, err)
	require.NoError(t, nodebox.WaitFor(4*time.Minute, "the DaemonSet's new koordlet-yarn pod", func() bool {
		p := koordletPod(n, "enforce")
		return p != nil && p.UID != old.UID
	}))
	pod := waitKoordletPod(t, n, "enforce")
	args := strings.Join(pod.Spec.Containers[0].Args, " ")
	for _, g := range strings.Split(strings.TrimPrefix(kubeletnode.AllGatesExtra, ","), ",") {
		require.Contains(t, args, g)
	}

	nm, err := n.CreatePod(ctx, n.NMPod(true), 3*time.Minute)
	require.NoError(t, err)
	am, err := kubeletnode.Launch(nmemu.Spec{AppID: 2, Attempt: 1, Sequence: 1, User: "hadoop", MemoryMB: 256, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	ex, err := kubeletnode.Launch(nmemu.Spec{AppID: 2, Attempt: 1, Sequence: 2, User: "hadoop", MemoryMB: 512, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	nmCgroup := containerCgroup(t, nm)
	// Discovery first: the new koordlet-yarn pod's start-up (informers, the
	// first NM poll) is then behind us, and the wait below measures the
	// adoption alone. A TCG guest on a loaded CI host is slow: the bound
	// is generous, the time taken is logged.
	requireDiscovered(t, am, ex)
	for _, id := range []string{am, ex} {
		procs := filepath.Join("/sys/fs/cgroup", kubeletnode.YARNHierarchy, id, "cgroup.procs")
		start := time.Now()
		if assert.Eventually(t, func() bool { return procsOf(procs) != "" },
			2*time.Minute, time.Second, "koordlet-yarn made %s's cgroup and moved its processes there", id) {
			t.Logf("%s adopted %s after discovery", id, time.Since(start).Round(time.Second))
		} else if b, err := kubeletnode.KoordletGet(koordletyarn.ContainersPath); err == nil {
			var resp koordletyarn.ContainersResponse
			if json.Unmarshal(b, &resp) == nil {
				t.Logf("%s in koordlet-yarn's store: %+v", id, find(resp, id))
			}
		}
	}
	var left []string
	assert.Eventually(t, func() bool {
		left = containerProcsIn(nmCgroup)
		return len(left) == 0
	}, 30*time.Second, time.Second, "every container process moved out of the NodeManager pod's cgroup %s", nmCgroup)
	t.Logf("container processes left in the NodeManager pod's cgroup: %v", left)

	n.StopKubelet()
	require.NoError(t, n.StartKubelet())
	require.NoError(t, n.WaitNodeReady(ctx, 3*time.Minute))
	time.Sleep(20 * time.Second) // the kubelet's housekeeping, every 2 s
	for _, id := range []string{am, ex} {
		procs := filepath.Join("/sys/fs/cgroup", kubeletnode.YARNHierarchy, id, "cgroup.procs")
		assert.NotEmpty(t, procsOf(procs), "after a kubelet restart %s's cgroup and processes are still there", id)
	}
	requireDiscovered(t, am, ex)
	kubeletNMDeleted(t, n, am, ex)
}

// containerProcsIn lists the processes of a cgroup that carry a YARN
// container's CONTAINER_ID (pid, command, id).
func containerProcsIn(cgroup string) []string {
	var out []string
	for _, pid := range strings.Fields(procsOf(filepath.Join(cgroup, "cgroup.procs"))) {
		env, _ := os.ReadFile("/proc/" + pid + "/environ")
		for _, kv := range strings.Split(string(env), "\x00") {
			if id, ok := strings.CutPrefix(kv, "CONTAINER_ID="); ok {
				cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
				out = append(out, fmt.Sprintf("%s %q %s", pid, strings.ReplaceAll(string(cmd), "\x00", " "), id))
			}
		}
	}
	return out
}

// procsOf is a cgroup.procs file's pids, "" when it has none or is gone.
func procsOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// updateNodeSLO creates the node's NodeSLO, or changes it, with edit (what
// koord-manager's slo-controller would write from slo-controller-config).
func updateNodeSLO(t *testing.T, n *kubeletnode.Node, edit func(*slov1alpha1.NodeSLOSpec)) {
	t.Helper()
	ctx := context.Background()
	koord, err := koordclient.NewForConfig(n.RestConfig())
	require.NoError(t, err)
	slo, err := koord.SloV1alpha1().NodeSLOs().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		slo = &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
		edit(&slo.Spec)
		_, err = koord.SloV1alpha1().NodeSLOs().Create(ctx, slo, metav1.CreateOptions{})
	} else {
		edit(&slo.Spec)
		_, err = koord.SloV1alpha1().NodeSLOs().Update(ctx, slo, metav1.UpdateOptions{})
	}
	require.NoError(t, err)
}

// kubeletQoS: the isolation component's CPU and Memory QoS (YARNCPUQoS,
// YARNMemoryQoS) from the NodeSLO's BE class land under the real kubelet:
// the YARN root sched-idle, an executor's memory.min/low from its request
// and memory.high set; the kubelet's besteffort QoS cgroup (whose
// cpu.weight it writes) is never made idle.
func kubeletQoS(t *testing.T, n *kubeletnode.Node, execID string, execMB int64) {
	updateNodeSLO(t, n, func(s *slov1alpha1.NodeSLOSpec) { s.ResourceQOSStrategy = beQoSStrategy(true) })
	root := filepath.Join("/sys/fs/cgroup", kubeletnode.YARNHierarchy)
	dir := filepath.Join(root, execID)
	req := execMB << 20
	state := func() string {
		return fmt.Sprintf("YARN root cpu.idle %s; executor memory.min %s, memory.low %s, memory.high set %t",
			readTrim(t, filepath.Join(root, "cpu.idle")), readTrim(t, filepath.Join(dir, "memory.min")),
			readTrim(t, filepath.Join(dir, "memory.low")), readTrim(t, filepath.Join(dir, "memory.high")) != "max")
	}
	want := "YARN root cpu.idle 1; executor memory.min " + page(req/10) + ", memory.low " + page(req/5) + ", memory.high set true"
	if !assert.Eventually(t, func() bool { return state() == want }, 90*time.Second, time.Second, "CPU and Memory QoS land") {
		t.Fatalf("want %s, have %s", want, state())
	}
	assert.Equal(t, "0", readTrim(t, filepath.Join(filepath.Dir(root), "cpu.idle")), "the kubelet's besteffort QoS cgroup is never made idle")
}
