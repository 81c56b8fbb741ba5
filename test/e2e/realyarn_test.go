package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// realYARN is a box whose NodeManager is Hadoop 3.5.0's own (the peer's
// MiniYARNCluster, its JVM in the NodeManager pod's cgroups) on the
// LinuxContainerExecutor with its real cgroups handler, run through the Go
// stand-in for the native container-executor.
type realYARN struct {
	box  *nodebox.Box
	peer *yarnpeer.Peer
}

// startRealYARN starts a box on layout l and the real YARN beside it.
// memory is yarn.nodemanager.resource.memory.enabled.
func startRealYARN(t *testing.T, l nodebox.Layout, memory bool, koordletArgs ...string) *realYARN {
	t.Helper()
	top := repoTop()
	if err := yarnpeer.Built(top); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	b := startBox(t, nodebox.Options{Layout: l, ExternalNM: true, KoordletArgs: koordletArgs})
	require.NoError(t, b.MakeYARNHierarchy())
	ce := filepath.Join(b.Dir(), "container-executor")
	build := exec.Command("go", "build", "-o", ce, "./test/containerexecutor")
	build.Dir = top
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(b.Dir(), "yarn")
	p, err := yarnpeer.Start(ctx, yarnpeer.Options{Top: top, Dir: dir, Executor: ce, Hierarchy: "/" + b.Hierarchy(),
		MountPath: b.CgroupRoot(), Memory: memory, Procs: b.NMPodProcs()})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("real-YARN peer log tail:\n%s", p.LogTail(40))
			if keep := os.Getenv("KOORDLET_YARN_KEEP_PEER_DIR"); keep != "" {
				_ = exec.Command("cp", "-a", dir, ce+".log", keep).Run()
			}
		}
		p.Stop()
	})
	require.NoError(t, b.StartKoordletFor(p.NMWeb))
	return &realYARN{box: b, peer: p}
}

// TestRealYARN: the e2e scenarios against Hadoop 3.5.0's ResourceManager
// and NodeManager with real LCE cgroups.
func TestRealYARN(t *testing.T) {
	t.Run("cgroupfs-memory", func(t *testing.T) { realYARNDiscovery(t, nodebox.LayoutCgroupfs, true) })
	t.Run("cpu-only", func(t *testing.T) { realYARNDiscovery(t, nodebox.LayoutCPUOnly, false) })
	t.Run("pressure", realYARNPressure)
}

// launchedBy waits until app's AM launched n containers and returns them.
func launchedBy(t *testing.T, app yarnpeer.Submitted, n int) []string {
	t.Helper()
	var launched []string
	require.Eventually(t, func() bool {
		launched = launched[:0]
		for _, e := range app.Events() {
			if e.Kind == "launched" {
				launched = append(launched, e.Container)
			}
		}
		return len(launched) >= n
	}, 120*time.Second, 500*time.Millisecond, "the AM of %s launched %d containers", app.ID, n)
	return launched
}

// completion returns the AM's completion line for container id, if any.
func completion(app yarnpeer.Submitted, id string) (yarnpeer.Event, bool) {
	for _, e := range app.Events() {
		if e.Kind == "completed" && e.Container == id {
			return e, true
		}
	}
	return yarnpeer.Event{}, false
}

// realYARNPressure: memory pressure from a growing executor of the real
// NM; koordlet evicts it, and the AM, the other executor and the NM live
// on. What the real NM and the AM report for the evicted container is
// logged and checked: a kill from outside YARN is a failed container
// (exit 143/137), not a preemption.
func realYARNPressure(t *testing.T) {
	y := startRealYARN(t, nodebox.LayoutCgroupfs, true, pressureGates)
	ctx := context.Background()
	steady, err := y.peer.Submit(ctx, yarnpeer.App{Name: "steady", Queue: "default", Type: "MAPREDUCE", User: "etl",
		Containers: []yarnpeer.Container{{MB: 512, Vcores: 1, Command: kerneltest.HelperScript("alloc=200")}}})
	require.NoError(t, err)
	older := launchedBy(t, steady, 1)[0]
	require.Eventually(t, func() bool {
		v, ok := value(scrape(t, y.box), "koordlet_yarn_container_memory_usage_bytes", map[string]string{"container_id": older})
		return ok && v > 190<<20
	}, 60*time.Second, 500*time.Millisecond)
	st, err := y.peer.Do(ctx, "app "+steady.ID)
	require.NoError(t, err)
	am := strings.Fields(st)[3]

	total, used, err := nodebox.MemInfo()
	require.NoError(t, err)
	lower := used*100/total + 3
	threshold := lower + 1
	t.Logf("node memory %d%% used; BE memory evict threshold %d%%, lower %d%%", used*100/total, threshold, lower)
	require.NoError(t, y.box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(lower)}
	}))
	time.Sleep(2 * time.Second)
	growing, err := y.peer.Submit(ctx, yarnpeer.App{Name: "growing", Queue: "default", Type: "SPARK", User: "spark",
		Containers: []yarnpeer.Container{{MB: 2048, Vcores: 1, Command: kerneltest.HelperScript("grow=1536@512")}}})
	require.NoError(t, err)
	grower := launchedBy(t, growing, 1)[0]
	st, err = y.peer.Do(ctx, "app "+growing.ID)
	require.NoError(t, err)
	growingAM := strings.Fields(st)[3]

	var done yarnpeer.Event
	require.Eventually(t, func() bool {
		var ok bool
		done, ok = completion(growing, grower)
		return ok
	}, 120*time.Second, 250*time.Millisecond, "koordlet evicts the growing executor and its AM hears of it")
	say(t, "the real AM's report of the evicted %s: %s", grower, done.Rest)
	f := strings.Fields(done.Rest)
	require.GreaterOrEqual(t, len(f), 2)
	assert.Equal(t, "COMPLETE", f[0])
	assert.Contains(t, []string{"143", "137"}, f[1], "killed from outside YARN: SIGTERM, or SIGKILL after the grace")
	_, olderDone := completion(steady, older)
	assert.False(t, olderDone, "the older executor lives on")
	resp := mustContainers(t, y.box)
	for _, id := range []string{am, growingAM, older} {
		c := find(resp, id)
		if assert.NotNil(t, c, "%s still listed", id) {
			assert.Equal(t, "RUNNING", c.State, "%s survives", id)
		}
	}
	assert.True(t, alive(y.peer.Pid), "the NodeManager (the peer's JVM) survives")
	require.NoError(t, steady.Finish())
	require.NoError(t, growing.Finish())
}

// realYARNDiscovery: an application's containers, launched by the real NM
// in cgroups YARN made, are found with the real NM's ids, AM, user, state
// and requests, and their CPU matches the kernel's.
func realYARNDiscovery(t *testing.T, l nodebox.Layout, memory bool) {
	y := startRealYARN(t, l, memory)
	ctx := context.Background()
	app, err := y.peer.Submit(ctx, yarnpeer.App{Name: "etl", Queue: "etl", Type: "SPARK", User: "spark", Tags: []string{"nightly"},
		Containers: []yarnpeer.Container{
			{MB: 512, Vcores: 1, Command: kerneltest.HelperScript("burn")},
			{MB: 768, Vcores: 2, Command: kerneltest.HelperScript("alloc=128")},
		}})
	require.NoError(t, err)
	say(t, "submitted %s to the real ResourceManager", app.ID)

	var launched []string
	require.Eventually(t, func() bool {
		launched = launched[:0]
		for _, e := range app.Events() {
			if e.Kind == "launched" {
				launched = append(launched, e.Container)
			}
		}
		return len(launched) == 2
	}, 90*time.Second, 500*time.Millisecond, "the AM launched its two containers")
	status, err := y.peer.Do(ctx, "app "+app.ID)
	require.NoError(t, err)
	f := strings.Fields(status)
	require.Len(t, f, 4, status)
	amID := f[3]
	say(t, "application %s: %s, AM %s, executors %v", app.ID, status, amID, launched)

	resp := mustContainers(t, y.box)
	if !assert.Eventually(t, func() bool {
		resp = mustContainers(t, y.box)
		for _, id := range append([]string{amID}, launched...) {
			c := find(resp, id)
			if c == nil || !c.HasCgroup() || c.State != "RUNNING" || len(c.Pids) == 0 {
				return false
			}
		}
		return true
	}, 60*time.Second, 250*time.Millisecond, "koordlet finds the AM and both executors, running, in their cgroups") {
		for _, c := range resp.Containers {
			t.Logf("koordlet has %s: state %q, AM %t, source %v, cgroups %+v, pids %v", c.Name, c.State, c.IsAM, c.Source, c.Cgroups, c.Pids)
		}
		t.Logf("informer: %+v", resp.Informer)
		t.FailNow()
	}
	am := find(resp, amID)
	assert.True(t, am.IsAM, "the AM is told apart")
	assert.Equal(t, app.ID, am.ApplicationID)
	for i, id := range launched {
		c := find(resp, id)
		assert.False(t, c.IsAM, "%s is no AM", id)
		assert.Equal(t, "spark", c.User)
		assert.Equal(t, "GUARANTEED", c.ExecutionType)
		wantMB, wantCPU := []int64{512, 768}[i], []int64{1000, 2000}[i]
		assert.Equal(t, wantMB<<20, c.RequestMemoryBytes, "%s's memory request from the real NM", id)
		assert.Equal(t, wantCPU, c.RequestMilliCPU, "%s's vcores from the real NM", id)
		for _, ctrl := range []cgroups.Controller{cgroups.CPU, cgroups.Memory} {
			if ctrl == cgroups.Memory && !memory {
				continue
			}
			assert.Equal(t, y.box.Hierarchy()+"/"+id, c.Cgroups[ctrl].Dir, "%s's %s cgroup is YARN's", id, ctrl)
		}
	}
	if t.Failed() {
		return
	}

	// CPU against the kernel's counter of the burner's cgroup.
	burner := launched[0]
	var cores float64
	require.Eventually(t, func() bool {
		v, ok := value(scrape(t, y.box), "koordlet_yarn_container_cpu_usage_cores", map[string]string{"container_id": burner})
		cores = v
		return ok && v > 0.5
	}, 60*time.Second, 500*time.Millisecond, "the burner's CPU on /metrics")
	// Ground truth: the kernel's run time of every thread of the burner's
	// processes (schedstat, nanoseconds), over the same five seconds.
	bc := find(resp, burner)
	run := func() time.Duration {
		var sum time.Duration
		for _, pid := range bc.Pids {
			tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
			for _, f := range tasks {
				if b, err := os.ReadFile(f); err == nil {
					if v, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64); err == nil {
						sum += time.Duration(v)
					}
				}
			}
		}
		return sum
	}
	r0, t0 := run(), time.Now()
	time.Sleep(5 * time.Second)
	truth := float64(run()-r0) / float64(time.Since(t0))
	cores, _ = value(scrape(t, y.box), "koordlet_yarn_container_cpu_usage_cores", map[string]string{"container_id": burner})
	say(t, "burner %s: koordlet %.3f cores, kernel (schedstat) %.3f cores", burner, cores, truth)
	assert.InDelta(t, truth, cores, 0.25*truth+0.05, "koordlet's CPU matches the kernel's")
	if memory {
		require.Eventually(t, func() bool {
			v, ok := value(scrape(t, y.box), "koordlet_yarn_container_memory_usage_bytes", map[string]string{"container_id": launched[1]})
			return ok && v > 120<<20
		}, 60*time.Second, 500*time.Millisecond, "the allocator's 128 MiB on /metrics")
	}
	require.NoError(t, app.Finish())
}
