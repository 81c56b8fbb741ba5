package lswait

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

func testPod(name, qos string, kube corev1.PodQOSClass) *statesinformer.PodMeta {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: kube}}
	if qos != "" {
		p.Labels = map[string]string{"koordinator.sh/qosClass": qos}
	}
	return &statesinformer.PodMeta{Pod: p}
}

// TestCollectorSchedstat: on a fake root, the schedstat source measures
// the LS pods' threads (pod and container cgroups), not BE pods or the
// NodeManager pod; a pod that leaves loses its series.
func TestCollectorSchedstat(t *testing.T) {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	proc := t.TempDir()
	system.Conf.ProcRootDir = proc
	ls, be, nm := testPod("ls", "LS", corev1.PodQOSBurstable), testPod("be", "BE", corev1.PodQOSBestEffort), testPod("nm", "", corev1.PodQOSGuaranteed)
	pods := []*statesinformer.PodMeta{ls, be, nm}
	tid := 100
	schedstat := func(wait, slices int) string { return "0 " + itoa(wait) + " " + itoa(slices) }
	for _, pm := range pods {
		dir := filepath.Join(system.Conf.CgroupRootDir, "cpu", koordletutil.GetPodCgroupParentDir(pm.Pod))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "ctr"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tasks"), []byte(itoa(tid)+"\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ctr", "tasks"), []byte(itoa(tid+1)+"\n"), 0o644))
		for _, id := range []int{tid, tid + 1} {
			require.NoError(t, os.MkdirAll(filepath.Join(proc, itoa(id)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(proc, itoa(id), "schedstat"), []byte(schedstat(0, 0)), 0o644))
		}
		tid += 10
	}
	reg := prometheus.NewPedanticRegistry()
	c, err := New(Options{Enabled: func() bool { return true }, Pods: func() []*statesinformer.PodMeta { return pods },
		IsNodeManagerPod: func(p *corev1.Pod) bool { return p.Name == "nm" }, Interval: time.Second, Registerer: reg, NoEBPF: true})
	require.NoError(t, err)
	c.source = SourceSchedstat
	c.sched = &schedstatSource{procRoot: proc, last: map[int]Schedstat{}}
	_, ok := c.Latest()
	assert.False(t, ok, "no signal before the first interval")
	c.Collect()
	assert.Equal(t, []string{"default/ls"}, c.Pods())
	// LS threads 100, 101 wait; the BE pod's 110 too (not counted).
	for id, s := range map[int]string{100: schedstat(3_000_000, 3), 101: schedstat(1_000_000, 1), 110: schedstat(50_000_000, 1)} {
		require.NoError(t, os.WriteFile(filepath.Join(proc, itoa(id), "schedstat"), []byte(s), 0o644))
	}
	c.Collect()
	sig, ok := c.Latest()
	require.True(t, ok)
	assert.Equal(t, SourceSchedstat, sig.Source)
	assert.Equal(t, time.Millisecond, sig.Mean, "4 ms over 4 slices")
	assert.Equal(t, time.Millisecond, sig.Value())
	assert.Equal(t, uint64(4), sig.Waits)
	assert.Equal(t, 1, sig.Pods)
	assert.InDelta(t, 0.004, testutil.ToFloat64(c.metrics.waitSeconds.WithLabelValues("default", "ls")), 1e-9)

	pods = pods[1:] // the LS pod leaves
	c.Collect()
	assert.Empty(t, c.Pods())
	assert.Equal(t, 0, testutil.CollectAndCount(c.metrics.waitSeconds))
	sig, _ = c.Latest()
	assert.Zero(t, sig.Waits)
}

func itoa(i int) string { return fmtInt(int64(i)) }
