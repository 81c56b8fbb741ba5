package yarnevict

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// realContainer makes a container cgroup under hier in cpu and memory,
// optionally with a sleeping process, and returns it as the store has it.
func realContainer(t *testing.T, hier, name string, withProcess bool) *store.Container {
	dirs := []string{kerneltest.MakeCgroup(t, "cpu", hier+"/"+name), kerneltest.MakeCgroup(t, "memory", hier+"/"+name)}
	c := &store.Container{Name: name, Source: store.SourceBoth, State: "RUNNING",
		Cgroups: cgroups.Cgroups{cgroups.CPU: {Dir: hier + "/" + name, Owned: true}, cgroups.Memory: {Dir: hier + "/" + name, Owned: true}}}
	c.ApplicationID = "application_1700000000000_0042"
	if withProcess {
		p := kerneltest.Start(t, "exec sleep 3600", dirs...)
		require.NoError(t, p.Release())
		require.Eventually(t, func() bool { return len(kerneltest.Pids(dirs[0])) == 1 }, 2*time.Second, 5*time.Millisecond)
		c.Pids = kerneltest.Pids(dirs[0])
	}
	return c
}

type executeEnv struct {
	deps Deps
	// held reads what a killed container still holds (nil: not measured).
	held    func(*store.Container) (kill.Held, bool)
	rec     *record.FakeRecorder
	metrics *Metrics
	pods    []*statesinformer.PodMeta
	// planned is told what the first plan covers (nil: not watched).
	planned func(covered int64)
}

func newExecuteEnv(t *testing.T, hier string) *executeEnv {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	h := cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: hier}
	flights := kill.NewFlights(time.Minute)
	nmPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: "nodemanager",
		Labels: map[string]string{"app.kubernetes.io/component": "node-manager"}}}
	return &executeEnv{
		deps: Deps{Store: store.New(), Metrics: m, NodeName: "n1",
			Killer: func() *kill.Killer {
				return &kill.Killer{H: h, Grace: 50 * time.Millisecond, Flights: flights, ExitTimeout: 2 * time.Second}
			},
			IsNodeManagerPod: func(p *corev1.Pod) bool { return p.Labels["app.kubernetes.io/component"] == "node-manager" }},
		rec: record.NewFakeRecorder(100), metrics: m, pods: []*statesinformer.PodMeta{{Pod: nmPod}},
	}
}

func (e *executeEnv) run(ranked []Victim, need int64) ([]Victim, int64, bool) {
	return execute(e.deps, nil, e.rec, e.pods, &corev1.Node{}, ranked, need, MemoryUsage,
		order{reason: kill.ReasonBEMemoryEvict, held: e.held, podMessage: func(*Victim) string { return "" }}, e.planned)
}

func (e *executeEnv) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// TestRealKernelExecuteFailsOverToNextVictim: the first-ranked container's
// cgroup is empty (its processes left, YARN has not removed it yet): its
// eviction releases nothing, so it is reported failed — no "released"
// Event, no released count — and the next victim is evicted instead; the
// ApplicationMaster is never taken because another victim failed.
func TestRealKernelExecuteFailsOverToNextVictim(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "memory")
	kerneltest.UseHostRoots(t)
	hier := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	empty := realContainer(t, hier, "container_e17_1700000000000_0042_01_000005", false)
	live := realContainer(t, hier, "container_e17_1700000000000_0042_01_000004", true)
	am := realContainer(t, hier, "container_e17_1700000000000_0042_01_000001", true)
	am.IsAM = true
	e := newExecuteEnv(t, hier)
	var plans []int64
	e.planned = func(covered int64) {
		assert.Empty(t, e.rec.Events, "the decision is told before any eviction")
		plans = append(plans, covered)
	}

	ranked := []Victim{ContainerVictim(empty, 0, 300<<20, 0), ContainerVictim(live, 0, 100<<20, 0), ContainerVictim(am, 0, 900<<20, 0)}
	done, released, attempted := e.run(ranked, 200<<20)
	assert.Equal(t, []int64{300 << 20}, plans, "the first plan, once: the failed-over round is not a second decision")
	assert.True(t, attempted)
	require.Len(t, done, 1)
	assert.Equal(t, live.Name, done[0].Name())
	assert.Equal(t, int64(100<<20), released, "what the evicted victim held, not what the failed one claimed")
	assert.True(t, alive(am.Pids[0]), "the AM is not taken because another victim failed")

	evs := e.events()
	require.Len(t, evs, 2, "%v", evs)
	assert.Contains(t, evs[0], EventReasonEvictFailed)
	assert.Contains(t, evs[0], empty.Name)
	assert.NotContains(t, evs[0], "released")
	assert.Contains(t, evs[1], EventReasonEvicted)
	assert.Contains(t, evs[1], live.Name)
	assert.Contains(t, evs[1], "chosen because: priority 0; 0.0 CPU-s of work lost; all 1 candidates together do not cover the need", "the Event says why this victim")
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.Evictions.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "failed")))
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.Evictions.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "succeeded")))
	assert.Equal(t, float64(100<<20), testutil.ToFloat64(e.metrics.Released.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "memory", "byte")))
}

// TestRealKernelExecuteNoAMAfterItsExecutors: the executor is evicted but
// falls short of the need; the AM is not taken in the same cycle (the next
// check sees what the executor released). With the AM the only victim from
// the start, it is.
func TestRealKernelExecuteNoAMAfterItsExecutors(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "memory")
	kerneltest.UseHostRoots(t)
	hier := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	ex := realContainer(t, hier, "container_e17_1700000000000_0042_01_000002", true)
	am := realContainer(t, hier, "container_e17_1700000000000_0042_01_000001", true)
	am.IsAM = true
	e := newExecuteEnv(t, hier)

	done, released, _ := e.run([]Victim{ContainerVictim(ex, 0, 100<<20, 0), ContainerVictim(am, 0, 900<<20, 0)}, 500<<20)
	assert.Equal(t, []string{ex.Name}, names(done))
	assert.Equal(t, int64(100<<20), released)
	assert.True(t, alive(am.Pids[0]), "the AM survives this cycle")

	done, _, _ = e.run([]Victim{ContainerVictim(am, 0, 900<<20, 0)}, 500<<20)
	assert.Equal(t, []string{am.Name}, names(done), "the last resort")
}

// TestRealKernelOneKillPerContainer: the memory and the CPU strategy pick
// the same container at the same moment: one kill, one Event, one count;
// the container is then out of the victim lists.
func TestRealKernelOneKillPerContainer(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "memory")
	kerneltest.UseHostRoots(t)
	hier := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	c := realContainer(t, hier, "container_e17_1700000000000_0042_01_000002", true)
	e := newExecuteEnv(t, hier)

	var wg sync.WaitGroup
	results := make([]int, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, _, _ := e.run([]Victim{ContainerVictim(c, 0, 100<<20, 0)}, 1)
			results[i] = len(done)
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, results[0]+results[1], "exactly one strategy evicted it")
	evs := e.events()
	require.Len(t, evs, 1, "one Event: %v", evs)
	assert.True(t, strings.Contains(evs[0], EventReasonEvicted))
	assert.Equal(t, 1.0, testutil.ToFloat64(e.metrics.Evictions.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "succeeded")))
	assert.Equal(t, 0.0, testutil.ToFloat64(e.metrics.Evictions.WithLabelValues("n1", kill.ReasonBEMemoryEvict, "failed")))

	assert.True(t, e.deps.Killer().Flights.Busy(c.Name), "an evicted container stays out of the victim lists")
}

// TestYARNBERequest: CPU evict's BE request counts the YARN containers that
// hold CPU: processes in their cgroup, an NM state that is not terminal.
func TestYARNBERequest(t *testing.T) {
	mk := func(src store.Source, pids []int, state string, milli int64) *store.Container {
		return &store.Container{Source: src, Pids: pids, State: state, RequestMilliCPU: milli}
	}
	for _, tc := range []struct {
		name string
		c    *store.Container
		want float64
	}{
		{"running", mk(store.SourceBoth, []int{10}, "RUNNING", 2000), 2000},
		{"not reported by the NM yet", mk(store.SourceCgroup, []int{10}, "", 1000), 1000},
		{"empty cgroup YARN failed to remove", mk(store.SourceBoth, nil, "RUNNING", 2000), 0},
		{"finished", mk(store.SourceBoth, []int{10}, "EXITED_WITH_SUCCESS", 2000), 0},
		{"done", mk(store.SourceBoth, []int{10}, "DONE", 2000), 0},
		{"localizing, no cgroup", mk(store.SourceNM, nil, "LOCALIZING", 2000), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, yarnBERequest([]*store.Container{tc.c}))
		})
	}
}

// TestReleaseOfIsInTheUnitOfTheNeed: released and needed compare per reason.
func TestReleaseOfIsInTheUnitOfTheNeed(t *testing.T) {
	v := Victim{MemoryUsed: 300 << 20, MilliCPUUsed: 1500, MilliCPURequest: 2000}
	res, amount, _ := releaseOf(kill.ReasonBECPUEvict, &v)
	assert.Equal(t, "cpu", res)
	assert.Equal(t, int64(2000), amount, "CPU evict needs request, so it counts request released")
	res, amount, _ = releaseOf(kill.ReasonBEMemoryEvict, &v)
	assert.Equal(t, "memory", res)
	assert.Equal(t, int64(300<<20), amount)
}

// TestYARNRootLimitAddsTheYARNShare: with the YARN hierarchy outside
// besteffort the suppress budget is divided between the two cgroups, so the
// BE limit CPU evict compares with is the besteffort share plus the YARN
// root's quota.
func TestYARNRootLimitAddsTheYARNShare(t *testing.T) {
	helper := system.NewFileTestUtil(t)
	t.Cleanup(helper.Cleanup)
	dir := "hadoop-yarn"
	helper.WriteCgroupFileContents(dir, system.CPUCFSQuota, "150000")
	helper.WriteCgroupFileContents(dir, system.CPUCFSPeriod, "100000")
	c := &CPUEvict{opts: &qmframework.Options{CgroupReader: resourceexecutor.NewCgroupReader()}}
	assert.Equal(t, 1500.0, c.yarnRootMilliLimit(dir))
	helper.WriteCgroupFileContents(dir, system.CPUCFSQuota, "-1")
	assert.Equal(t, 0.0, c.yarnRootMilliLimit(dir), "unlimited adds nothing")
	assert.Equal(t, 0.0, c.yarnRootMilliLimit(""))
}

// TestRealKernelExecuteKillsAPlanAtOnce: a plan of two containers kills
// both at once. Each kill, once its SIGTERM is sent, waits in the hook
// until the other's SIGTERM is sent too: one after the other, the first
// would wait alone until the barrier gives up and the test fails.
func TestRealKernelExecuteKillsAPlanAtOnce(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "memory")
	kerneltest.UseHostRoots(t)
	hier := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	a := realContainer(t, hier, "container_e17_1700000000000_0042_01_000002", true)
	b := realContainer(t, hier, "container_e17_1700000000000_0042_01_000003", true)
	e := newExecuteEnv(t, hier)
	var mu sync.Mutex
	termSent := 0
	both := make(chan struct{})
	met := true
	base := e.deps.Killer
	e.deps.Killer = func() *kill.Killer {
		k := base()
		k.Hook = func(s kill.Step) {
			if s != kill.StepTermSent {
				return
			}
			mu.Lock()
			termSent++
			if termSent == 2 {
				close(both)
			}
			mu.Unlock()
			select {
			case <-both:
			case <-time.After(10 * time.Second):
				mu.Lock()
				met = false
				mu.Unlock()
			}
		}
		return k
	}
	done, released, attempted := e.run([]Victim{ContainerVictim(a, 0, 100<<20, 0), ContainerVictim(b, 0, 100<<20, 0)}, 200<<20)
	assert.True(t, attempted)
	assert.Len(t, done, 2)
	assert.Equal(t, int64(200<<20), released)
	mu.Lock()
	defer mu.Unlock()
	assert.True(t, met, "both kills had sent SIGTERM before either went on")
	assert.False(t, alive(a.Pids[0]) || alive(b.Pids[0]), "both containers' processes are gone")
	assert.Len(t, e.events(), 2, "one Event per evicted container")
}
