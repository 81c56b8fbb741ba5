package yarnevict

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeclientset "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	ma "github.com/koordinator-sh/koordinator/pkg/koordlet/metricsadvisor/framework"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	qmutil "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/plugins/util"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/nodemem"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

func TestMain(m *testing.M) {
	kerneltest.RunHelperIfRequested()
	if err := features.Register(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// alive reports whether pid runs (a zombie awaiting its parent's wait is dead).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// yarnNode is a real YARN node: container cgroups in cpu and memory with
// real process trees, and a process standing for the NodeManager.
type yarnNode struct {
	h               cgroups.Hierarchy
	st              *store.Store
	marks           string // dir where processes record the signals they get
	am, old, newest string
	nmPid           int
	inf             *yarninformer.Plugin
}

func newYARNNode(t *testing.T) *yarnNode {
	kerneltest.RequireCgroupV1(t, "cpu", "memory")
	kerneltest.UseHostRoots(t)

	n := &yarnNode{marks: t.TempDir(),
		am:     "container_e17_1700000000000_0042_01_000001",
		old:    "container_e17_1700000000000_0042_01_000002",
		newest: "container_e17_1700000000000_0042_01_000003"}
	top := kerneltest.UniqueRoot(t)
	hier := top + "/hadoop-yarn"

	// The NodeManager stand-in records any SIGTERM; it must never get one.
	nmDir := kerneltest.MakeCgroup(t, "cpu", top+"/nm")
	nm := kerneltest.Start(t, "trap 'echo TERM >> "+n.marks+"/nm' TERM; sleep 3600 & wait; sleep 3600 & wait", nmDir)
	require.NoError(t, nm.Release())
	n.nmPid = nm.Pid()

	start := func(name, script string) {
		dirs := []string{kerneltest.MakeCgroup(t, "cpu", hier+"/"+name), kerneltest.MakeCgroup(t, "memory", hier+"/"+name)}
		p := kerneltest.Start(t, script, dirs...)
		require.NoError(t, p.Release())
	}
	// The AM forks a child and records any SIGTERM.
	start(n.am, "trap 'echo TERM >> "+n.marks+"/am' TERM; sleep 3600 & wait; sleep 3600 & wait")
	start(n.old, "trap 'echo TERM >> "+n.marks+"/old' TERM; ("+kerneltest.HelperScript("alloc=160")+") & wait; sleep 3600 & wait")
	// The newest executor ignores SIGTERM everywhere and keeps forking, so
	// only repeated SIGKILL passes can end it.
	// It holds 160 MiB (the helper dies on SIGTERM, its siblings do not).
	start(n.newest, "trap '' TERM; (trap '' TERM; while :; do sleep 0.05 & wait; done) & (trap '' TERM; sleep 3600) & "+
		kerneltest.HelperScript("alloc=160"))

	// A NodeManager REST stand-in gives the containers their requests.
	nmREST := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entry := func(id string, vcores int) string {
			return `{"id":"` + id + `","state":"RUNNING","user":"u","totalMemoryNeededMB":1024,"totalVCoresNeeded":` + strconv.Itoa(vcores) + `}`
		}
		_, _ = w.Write([]byte(`{"containers":{"container":[` + entry(n.am, 1) + "," + entry(n.old, 2) + "," + entry(n.newest, 2) + `]}}`))
	}))
	t.Cleanup(nmREST.Close)
	cfg := config.NewDefault()
	cfg.NMEndpoint = nmREST.URL
	cfg.NMTimeout = time.Second
	cfg.CgroupHierarchy = hier
	n.st = store.New()
	inf := yarninformer.New(cfg, n.st, nil)
	inf.Setup(nil, nil)
	require.Eventually(t, func() bool {
		inf.Resync(context.Background())
		c, ok := n.st.Get(n.newest)
		a, ok2 := n.st.Get(n.am)
		return ok && ok2 && len(c.Pids) >= 3 && len(a.Pids) >= 2 && c.RequestMilliCPU == 2000
	}, 10*time.Second, 50*time.Millisecond)
	// The allocators have touched their pages: both executors' memory
	// cgroups hold their 160 MiB (a fixed sleep was short on a loaded CI
	// runner: the plan then needed both).
	require.Eventually(t, func() bool {
		for _, name := range []string{n.old, n.newest} {
			b, err := os.ReadFile(filepath.Join(kerneltest.CgroupRoot, "memory", hier, name, "memory.usage_in_bytes"))
			if err != nil {
				return false
			}
			v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil || v < 160<<20 {
				return false
			}
		}
		return true
	}, 60*time.Second, 20*time.Millisecond, "the executors hold their 160 MiB")
	n.h, _ = inf.Hierarchy()
	n.inf = inf
	return n
}

func (n *yarnNode) pids(t *testing.T, name string) []int {
	c, ok := n.st.Get(name)
	require.True(t, ok)
	return c.Pids
}

func (n *yarnNode) marked(name string) bool {
	_, err := os.Stat(filepath.Join(n.marks, name))
	return err == nil
}

// TestRealKernelKill: the killer ends a container that ignores SIGTERM and
// keeps forking, with all its children, and signals nothing else.
func TestRealKernelKill(t *testing.T) {
	n := newYARNNode(t)
	victim, _ := n.st.Get(n.newest)
	amPids := n.pids(t, n.am)
	k := &kill.Killer{H: n.h, Grace: 200 * time.Millisecond}
	res, err := k.Kill(victim)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.Passes, 1)
	assert.GreaterOrEqual(t, res.Signalled, 3, "the shell, its forking loop and its children")
	assert.Zero(t, res.Remaining)
	assert.Equal(t, 0, k.WaitGone(victim, 5*time.Second), "every process of the victim is gone, children included")
	for _, pid := range victim.Pids {
		assert.False(t, alive(pid), "pid %d of the victim", pid)
	}
	for _, pid := range append(amPids, n.nmPid) {
		assert.True(t, alive(pid), "pid %d survives", pid)
	}
	time.Sleep(100 * time.Millisecond)
	assert.False(t, n.marked("am"), "the AM got no signal")
	assert.False(t, n.marked("nm"), "the NodeManager got no signal")
	assert.False(t, n.marked("old"), "the other executor got no signal")
	_, err = os.Stat(filepath.Join(kerneltest.CgroupRoot, "freezer", n.h.Dir))
	assert.True(t, os.IsNotExist(err), "the kill creates nothing in the freezer hierarchy")
}

// TestKillRefusesWhatIsNotYARN: a container whose cgroup is not its own
// below the hierarchy is refused, and a listed pid that is not in the
// container's cgroup (a reused pid) is never signalled.
func TestKillRefusesWhatIsNotYARN(t *testing.T) {
	h := cgroups.Hierarchy{CgroupRoot: t.TempDir(), ProcRoot: "/proc", Dir: "kubepods/besteffort/hadoop-yarn"}
	k := &kill.Killer{H: h}
	name := "container_e17_1700000000000_0042_01_000002"
	for _, refs := range []cgroups.Cgroups{
		{},
		{cgroups.CPU: {Dir: h.Dir + "/" + name}}, // not owned
		{cgroups.CPU: {Dir: "kubepods/besteffort/pod1/x", Owned: true}},                          // elsewhere
		{cgroups.CPU: {Dir: h.Dir + "/container_e17_1700000000000_0042_01_000009", Owned: true}}, // another container
	} {
		_, err := k.Kill(&store.Container{Name: name, Cgroups: refs})
		assert.ErrorIs(t, err, kill.ErrNotYARN)
	}

	// A fake container cgroup lists the pid of a real process that lives
	// elsewhere (as after pid reuse): it must not be signalled.
	other := kerneltest.StartPlain(t, "sleep 3600")
	dir := filepath.Join(h.CgroupRoot, "cpu", h.Dir, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strings.TrimSpace(itoa(other))+"\n"), 0o644))
	res, err := k.Kill(&store.Container{Name: name, Cgroups: cgroups.Cgroups{cgroups.CPU: {Dir: h.Dir + "/" + name, Owned: true}}})
	assert.ErrorIs(t, err, kill.ErrNothingKilled, "a kill that signalled nothing is a failure")
	assert.Equal(t, 0, res.Signalled)
	assert.True(t, alive(other))
}

// TestRealKernelMemoryEvict: koordlet's memory evict slot, YARN-aware, under
// memory pressure evicts the newest non-AM executor only (it covers the
// need), leaves the AM, the older executor and the NodeManager untouched,
// records an Event on the NodeManager pod and counts the eviction.
func TestRealKernelMemoryEvict(t *testing.T) {
	kerneltest.HoldBoxLock(t, 20*time.Minute) // no other test moves node memory meanwhile
	n := newYARNNode(t)
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(koordfeatures.BEMemoryEvict): true, string(features.YARNBEMemoryEvict): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(koordfeatures.BEMemoryEvict): false, string(features.YARNBEMemoryEvict): false})
	})

	// The node's capacity is set, just before the cycle, so that today's
	// real usage (read from /proc/meminfo by the strategy) lies 80 MiB
	// above the 98% lower percent, and so above the 99% threshold whatever
	// the host holds: the need is a fixed amount, not a share of what other
	// processes on the host use, and one 160 MiB executor covers it with
	// 80 MiB to spare for drift during the cycle.
	const gi = int64(1) << 30
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), MemoryEvictThresholdPercent: ptr.To[int64](99), MemoryEvictLowerPercent: ptr.To[int64](98)}}}
	nmPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: "nodemanager", UID: "nm-uid",
		Labels: map[string]string{"app.kubernetes.io/component": "node-manager", "koordinator.sh/qosClass": "BE"}}}
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNode().Return(node).AnyTimes()
	si.EXPECT().GetNodeSLO().Return(slo).AnyTimes()
	si.EXPECT().GetAllPods().Return([]*statesinformer.PodMeta{{Pod: nmPod}}).AnyTimes()

	// The executors hold 160 Mi each (read from their cgroups at decision
	// time); the metric cache says the AM is the largest.
	mcCfg := metriccache.NewDefaultConfig()
	mcCfg.TSDBPath = t.TempDir()
	mc, err := metriccache.NewMetricCache(mcCfg)
	require.NoError(t, err)
	now := time.Now()
	var samples []metriccache.MetricSample
	add := func(kind metriccache.MetricResource, props map[metriccache.MetricProperty]string, v float64) {
		s, err := kind.GenerateSample(props, now, v)
		require.NoError(t, err)
		samples = append(samples, s)
	}
	add(metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(n.am), float64(3*gi))
	app := mc.Appender()
	require.NoError(t, app.Append(samples))
	require.NoError(t, app.Commit())

	rec := record.NewFakeRecorder(10)
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	require.NoError(t, err)
	deps := Deps{Store: n.st, Killer: func() *kill.Killer { return &kill.Killer{H: n.h, Grace: 100 * time.Millisecond} },
		IsNodeManagerPod: func(p *corev1.Pod) bool { return p.Labels["app.kubernetes.io/component"] == "node-manager" },
		Metrics:          metrics, NodeName: "n1"}
	cfg := qmframework.NewDefaultConfig()
	strategy := NewMemoryEvictFactory(deps)(&qmframework.Options{Config: cfg, StatesInformer: si, MetricCache: mc,
		EventRecorder: rec, MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Second}})
	m, ok := strategy.(*Slot).BE().(*MemoryEvict)
	require.True(t, ok, "the YARN-aware strategy takes the slot when its gate is on")
	require.True(t, m.Enabled())
	m.Setup(&qmframework.Context{Evictor: qmutil.NewEvictor(fakeclientset.NewSimpleClientset(), rec, "v1"), OnlyEvictByAPI: true})

	victim, _ := n.st.Get(n.newest)
	amPids, oldPids := n.pids(t, n.am), n.pids(t, n.old)
	mi, err := nodemem.Read("/proc")
	require.NoError(t, err)
	capacity := (mi.Used() - 80<<20) * 100 / 98
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(capacity, resource.BinarySI)}
	evicted := m.Cycle(now)
	require.Len(t, evicted, 1, "one container covers the need")
	assert.Equal(t, n.newest, evicted[0].Name())
	k := deps.Killer()
	assert.Equal(t, 0, k.WaitGone(victim, 5*time.Second))
	for _, pid := range victim.Pids {
		assert.False(t, alive(pid))
	}
	for _, pid := range append(append(amPids, oldPids...), n.nmPid) {
		assert.True(t, alive(pid), "pid %d survives", pid)
	}
	assert.False(t, n.marked("am") || n.marked("old") || n.marked("nm"), "nothing outside the victim got a signal")

	select {
	case ev := <-rec.Events:
		assert.Contains(t, ev, EventReasonEvicted)
		assert.Contains(t, ev, n.newest)
		assert.Contains(t, ev, "application_1700000000000_0042")
	default:
		t.Fatal("no Event on the NodeManager pod")
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.Evictions.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "succeeded")))

	// No cooling after an eviction of YARN containers only (their memory
	// is free when the kill returns): when node memory is above the
	// threshold again a second later, the next check evicts at once, the
	// older executor and still not the AM.
	mi, err = nodemem.Read("/proc")
	require.NoError(t, err)
	capacity = (mi.Used() - 80<<20) * 100 / 98
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(capacity, resource.BinarySI)}
	second := m.Cycle(now.Add(time.Second))
	require.Len(t, second, 1, "the next check is not held by the cooling")
	assert.Equal(t, n.old, second[0].Name())
	for _, pid := range amPids {
		assert.True(t, alive(pid), "the AM survives")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRealKernelCPUEvict: koordlet's CPUEvict slot, YARN-aware: BE real
// limit 2 cores, BE usage 1.9 cores, BE pods request nothing but the YARN
// containers request 5 cores → satisfaction 0.4 ≤ lower 0.6; release
// request × (0.7 − 0.4) = 1.5 cores of request: the newest executor (2 cores)
// alone covers it; the AM, the older executor and the NodeManager survive.
func TestRealKernelCPUEvict(t *testing.T) {
	n := newYARNNode(t)
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
		string(koordfeatures.BECPUEvict): true, string(features.YARNBECPUEvict): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{
			string(koordfeatures.BECPUEvict): false, string(features.YARNBECPUEvict): false})
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), CPUEvictBESatisfactionLowerPercent: ptr.To[int64](60), CPUEvictBESatisfactionUpperPercent: ptr.To[int64](70),
		CPUEvictBEUsageThresholdPercent: ptr.To[int64](90)}}}
	nmPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: "nodemanager", UID: "nm-uid",
		Labels: map[string]string{"app.kubernetes.io/component": "node-manager", "koordinator.sh/qosClass": "BE"}}}
	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	si.EXPECT().GetNode().Return(node).AnyTimes()
	si.EXPECT().GetNodeSLO().Return(slo).AnyTimes()
	si.EXPECT().GetAllPods().Return([]*statesinformer.PodMeta{{Pod: nmPod}}).AnyTimes()

	mcCfg := metriccache.NewDefaultConfig()
	mcCfg.TSDBPath = t.TempDir()
	mcCfg.TSDBEnablePromMetrics = false
	mc, err := metriccache.NewMetricCache(mcCfg)
	require.NoError(t, err)
	now := time.Now()
	var samples []metriccache.MetricSample
	for _, s := range []struct {
		alloc metriccache.MetricPropertyValue
		v     float64
	}{{metriccache.BEResourceAllocationUsage, 1900}, {metriccache.BEResourceAllocationRequest, 0}, {metriccache.BEResourceAllocationRealLimit, 2000}} {
		sample, err := metriccache.NodeBEMetric.GenerateSample(metriccache.MetricPropertiesFunc.NodeBE(string(metriccache.BEResourceCPU), string(s.alloc)), now, s.v)
		require.NoError(t, err)
		samples = append(samples, sample)
	}
	app := mc.Appender()
	require.NoError(t, app.Append(samples))
	require.NoError(t, app.Commit())

	rec := record.NewFakeRecorder(10)
	metrics, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	deps := Deps{Store: n.st, Killer: func() *kill.Killer { return &kill.Killer{H: n.h, Grace: 100 * time.Millisecond} },
		IsNodeManagerPod: func(p *corev1.Pod) bool { return p.Labels["app.kubernetes.io/component"] == "node-manager" },
		Metrics:          metrics, NodeName: "n1", Hierarchy: func() string { return n.h.Dir }}
	strategy := NewCPUEvictFactory(deps)(&qmframework.Options{Config: qmframework.NewDefaultConfig(), StatesInformer: si, MetricCache: mc,
		EventRecorder: rec, MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: time.Second}})
	c, ok := strategy.(*Slot).BE().(*CPUEvict)
	require.True(t, ok)
	require.True(t, c.Enabled())
	c.Setup(&qmframework.Context{Evictor: qmutil.NewEvictor(fakeclientset.NewSimpleClientset(), rec, "v1"), OnlyEvictByAPI: true})

	victim, _ := n.st.Get(n.newest)
	amPids, oldPids := n.pids(t, n.am), n.pids(t, n.old)
	evicted := c.Cycle(now)
	require.Len(t, evicted, 1)
	assert.Equal(t, n.newest, evicted[0].Name())
	assert.Equal(t, 0, deps.Killer().WaitGone(victim, 5*time.Second))
	for _, pid := range append(append(amPids, oldPids...), n.nmPid) {
		assert.True(t, alive(pid), "pid %d survives", pid)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.Evictions.WithLabelValues("n1", kill.ReasonBECPUEvict, "succeeded")))
	assert.Equal(t, 1.5, testutil.ToFloat64(metrics.Needed.WithLabelValues("n1", kill.ReasonBECPUEvict, "cpu", "core")), "1500m: 1.5 cores")
}

func TestMilliCPUToRelease(t *testing.T) {
	cfg := &slov1alpha1.ResourceThresholdStrategy{CPUEvictBESatisfactionLowerPercent: ptr.To[int64](60),
		CPUEvictBESatisfactionUpperPercent: ptr.To[int64](70), CPUEvictBEUsageThresholdPercent: ptr.To[int64](90)}
	tests := []struct {
		name string
		s    BEState
		want int64
	}{
		{"starved and busy", BEState{Usage: 1900, Request: 5000, Limit: 2000}, 1500},
		{"not busy enough", BEState{Usage: 1000, Request: 5000, Limit: 2000}, 0},
		{"satisfied", BEState{Usage: 1900, Request: 3000, Limit: 2000}, 0},
		{"no request", BEState{Usage: 1900, Limit: 2000}, 0},
		{"tiny limit counts as busy", BEState{Usage: 10, Request: 5000, Limit: 500}, 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, MilliCPUToRelease(tt.s, cfg)) })
	}
}
