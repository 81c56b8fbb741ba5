package yarnusage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// kernelWorkload is a YARN container of a real-kernel test: its id, its
// launch script, the anonymous memory (MiB) its processes allocate and how
// many allocator processes it runs.
type kernelWorkload struct {
	name   string
	script string
	mib    int64
	procs  int
}

// startWorkloads starts each workload in its own cgroup of each controller
// below a fresh YARN hierarchy and returns the hierarchy and a store kept
// by the informer's scan (the NodeManager unreachable).
func startWorkloads(t *testing.T, controllers []string, work []kernelWorkload) (string, *store.Store, *yarninformer.Plugin) {
	t.Helper()
	root := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	for _, w := range work {
		var dirs []string
		for _, ctrl := range controllers {
			dirs = append(dirs, kerneltest.MakeCgroup(t, ctrl, root+"/"+w.name))
		}
		p := kerneltest.Start(t, w.script, dirs...)
		require.NoError(t, p.Release())
	}
	cfg := config.NewDefault()
	cfg.NMEndpoint = "http://127.0.0.1:1"
	cfg.NMTimeout = 100 * time.Millisecond
	cfg.CgroupHierarchy = root
	st := store.New()
	informer := yarninformer.New(cfg, st, nil)
	informer.Setup(nil, nil)
	require.Eventually(t, func() bool {
		informer.Resync(context.Background())
		n := 0
		for _, c := range st.Snapshot() {
			if len(c.Pids) > 0 {
				n++
			}
		}
		return n == len(work)
	}, 10*time.Second, 50*time.Millisecond)
	return root, st, informer
}

// twoAllocators is a launcher that runs two allocators of mib each.
func twoAllocators(mib int) string {
	helper := kerneltest.HelperScript(fmt.Sprintf("alloc=%d", mib))
	return "(" + helper + ") & " + helper
}

// TestRealKernelMemoryWithoutMemoryCgroup: YARN containers as YARN's
// CPU-only cgroups handler makes them (their own cpu and cpuacct cgroups,
// no memory cgroup: their memory is charged to this test's memory cgroup,
// standing for the NodeManager pod's) running real processes that allocate
// known anonymous memory. The collector's memory samples, in the metric
// cache and in Prometheus, are within 3% of what the processes allocated
// (plus each allocator's own runtime, measured apart), and its status says
// where the memory is charged. Before, such containers had no memory sample
// at all.
func TestRealKernelMemoryWithoutMemoryCgroup(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "cpuacct")
	kerneltest.UseHostRoots(t)
	work := []kernelWorkload{
		{"container_e17_1700000000000_0042_01_000002", kerneltest.HelperScript("alloc=256"), 256, 1},
		{"container_e17_1700000000000_0042_01_000003", twoAllocators(96), 192, 2},
	}
	baseline := float64(kerneltest.HelperBaseline(t))
	_, st, informer := startWorkloads(t, []string{"cpu", "cpuacct"}, work)
	for _, c := range st.Snapshot() {
		require.Equal(t, cgroups.MemoryByProcesses, c.Cgroups.MemoryAccounting(), "%s: %+v", c.Name, c.Cgroups)
	}

	mc := newMetricCache(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	c := New(Options{Store: st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m, NodeName: "n1",
		Interval: func() time.Duration { return time.Second }, CgroupHierarchy: informer.Hierarchy})
	defer c.Close()

	// The allocators touch their pages right after they start.
	var at time.Time
	value := func(name string) float64 {
		v, _ := lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(name), at.Add(-time.Millisecond), at.Add(time.Minute))
		return v
	}
	require.Eventually(t, func() bool {
		at = time.Now()
		c.Collect(at)
		for _, w := range work {
			if value(w.name) < float64(w.mib<<20) {
				return false
			}
		}
		return true
	}, 10*time.Second, 100*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	at = time.Now()
	c.Collect(at)
	for _, w := range work {
		got := value(w.name)
		withPC, _ := lastValue(t, mc, metriccache.ContainerMemoryUsageWithPageCacheMetric, metriccache.MetricPropertiesFunc.Container(w.name), at.Add(-time.Millisecond), at.Add(time.Minute))
		sr := c.series[w.name]
		require.NotNil(t, sr)
		want := float64(w.mib<<20) + float64(w.procs)*baseline
		t.Logf("%s: allocated %d MiB in %d processes (+ %.1f MiB runtime each): want %.1f MiB, memory %.1f MiB (%+.2f%%; Prometheus %.1f MiB), with page cache %.1f MiB",
			w.name, w.mib, w.procs, baseline/(1<<20), want/(1<<20), got/(1<<20), 100*(got-want)/want,
			gaugeValue(t, m.MemoryUsage, sr.labels)/(1<<20), withPC/(1<<20))
		assert.InEpsilon(t, want, got, 0.03)
		assert.Equal(t, got, gaugeValue(t, m.MemoryUsage, sr.labels))
		assert.Greater(t, withPC, got, "mapped files (the binary) count with page cache")
	}
	status, ok := c.LastMemoryAccounting()
	require.True(t, ok)
	assert.Equal(t, MemoryAccountingStatus{Processes: len(work), ChargedTo: []string{kerneltest.SelfCgroup(t, "memory")}}, status,
		"the containers' memory is charged to this test's memory cgroup, the NodeManager pod's stand-in")
}

// TestRealKernelProcessVsCgroupMemory measures the per-process accounting
// against the memory cgroup's on the same containers: each has its own cpu,
// cpuacct and memory cgroups, as YARN makes them with
// yarn.nodemanager.resource.memory.enabled, and runs an anonymous-memory
// workload. The sum of the processes' RssAnon + RssShmem is within 5% of
// the cgroup's anon + unevictable for each container (the target).
// Reproduce: go test ./collectors/yarnusage -run TestRealKernelProcessVsCgroupMemory -v
func TestRealKernelProcessVsCgroupMemory(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "cpuacct", "memory")
	kerneltest.UseHostRoots(t)
	work := []kernelWorkload{
		{"container_e17_1700000000000_0042_01_000002", kerneltest.HelperScript("alloc=64"), 64, 1},
		{"container_e17_1700000000000_0042_01_000003", kerneltest.HelperScript("alloc=256"), 256, 1},
		{"container_e17_1700000000000_0042_01_000004", kerneltest.HelperScript("alloc=1024"), 1024, 1},
		{"container_e17_1700000000000_0042_01_000005", twoAllocators(128), 256, 2},
	}
	_, st, informer := startWorkloads(t, []string{"cpu", "cpuacct", "memory"}, work)
	h, ok := informer.Hierarchy()
	require.True(t, ok)
	procs := cgroups.NewProcessMemoryReader(h)
	cg := cgroups.NewUsageReader(h.CgroupRoot, false).NoKeep()

	type figures struct{ byCgroup, byProcs, cgroupPC, procsPC float64 }
	measure := func(c *store.Container) (figures, error) {
		stat, err := cg.MemoryStat(c.Cgroups[cgroups.Memory].Dir)
		if err != nil {
			return figures{}, err
		}
		pm, err := procs.Read(cgroups.CPU, c.Cgroups[cgroups.CPU].Dir)
		if err != nil {
			return figures{}, err
		}
		return figures{float64(stat.Usage()), float64(pm.Usage()), float64(stat.UsageWithPageCache()), float64(pm.UsageWithPageCache())}, nil
	}
	byName := map[string]*store.Container{}
	for _, c := range st.Snapshot() {
		require.Equal(t, cgroups.MemoryByCgroup, c.Cgroups.MemoryAccounting())
		byName[c.Name] = c
	}
	// Wait until every allocator has touched its pages.
	require.Eventually(t, func() bool {
		for _, w := range work {
			f, err := measure(byName[w.name])
			if err != nil || f.byProcs < float64(w.mib<<20) || f.byCgroup < float64(w.mib<<20) {
				return false
			}
		}
		return true
	}, 20*time.Second, 100*time.Millisecond)

	var sumCgroup, sumProcs float64
	for _, w := range work {
		f, err := measure(byName[w.name])
		require.NoError(t, err)
		diff := (f.byProcs - f.byCgroup) / f.byCgroup
		t.Logf("%s (%d MiB allocated): memory cgroup %.2f MiB, processes %.2f MiB, difference %+.2f%%; with page cache: cgroup %.2f MiB, processes %.2f MiB",
			w.name, w.mib, f.byCgroup/(1<<20), f.byProcs/(1<<20), 100*diff, f.cgroupPC/(1<<20), f.procsPC/(1<<20))
		assert.InEpsilon(t, f.byCgroup, f.byProcs, 0.05, w.name)
		sumCgroup += f.byCgroup
		sumProcs += f.byProcs
	}
	t.Logf("all %d containers: memory cgroups %.2f MiB, processes %.2f MiB, difference %+.2f%%",
		len(work), sumCgroup/(1<<20), sumProcs/(1<<20), 100*(sumProcs-sumCgroup)/sumCgroup)
	assert.InEpsilon(t, sumCgroup, sumProcs, 0.05)
}
