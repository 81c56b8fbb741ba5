package yarnusage

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"

	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
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

// TestRealKernelUsageAddsUp runs real CPU burners and memory allocators in
// real YARN container cgroups (cpu, cpuacct and memory, as YARN creates them
// on a co-mounted cpu,cpuacct host) and checks that the per-container
// figures add up to the YARN parent cgroup's own figures within 5%.
func TestRealKernelUsageAddsUp(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "cpuacct", "memory")
	kerneltest.UseHostRoots(t)

	root := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	work := []struct {
		name, mode string
	}{
		{"container_e17_1700000000000_0042_01_000002", "burn"},
		{"container_e17_1700000000000_0042_01_000003", "alloc=96"},
		{"container_e17_1700000000000_0042_01_000004", "alloc=48"},
	}
	for _, w := range work {
		var dirs []string
		for _, ctrl := range []string{"cpu", "cpuacct", "memory"} {
			dirs = append(dirs, kerneltest.MakeCgroup(t, ctrl, root+"/"+w.name))
		}
		p := kerneltest.Start(t, kerneltest.HelperScript(w.mode), dirs...)
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
	time.Sleep(500 * time.Millisecond) // let the allocators touch their pages

	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	c := New(Options{Store: st, Metrics: m, NodeName: "n1", Interval: func() time.Duration { return time.Second }})
	defer c.Close()
	reader := resourceexecutor.NewCgroupReader()

	parentCPU := func() uint64 {
		v, err := reader.ReadCPUAcctUsage(root)
		require.NoError(t, err)
		return v
	}
	t0 := time.Now()
	c.Collect(t0)
	p0 := parentCPU()
	time.Sleep(2 * time.Second)
	t1 := time.Now()
	c.Collect(t1)
	p1 := parentCPU()

	var sumCPU, sumMem float64
	for _, ct := range st.Snapshot() {
		sr, ok := c.series[ct.Name]
		require.True(t, ok)
		labels := sr.labels
		sumCPU += gaugeValue(t, m.CPUUsage, labels)
		sumMem += gaugeValue(t, m.MemoryUsage, labels)
	}
	parentCores := float64(p1-p0) / float64(t1.Sub(t0))
	stat, err := reader.ReadMemoryStat(root)
	require.NoError(t, err)
	parentMem := float64(stat.Usage())
	t.Logf("CPU: containers %.3f cores, parent %.3f cores; memory: containers %.1f MiB, parent %.1f MiB",
		sumCPU, parentCores, sumMem/(1<<20), parentMem/(1<<20))
	assert.Greater(t, sumCPU, 0.3, "the burner burns")
	assert.InEpsilon(t, parentCores, sumCPU, 0.05)
	assert.Greater(t, sumMem, float64(140<<20), "the allocators hold their memory")
	assert.InEpsilon(t, parentMem, sumMem, 0.05)
}

func gaugeValue(t *testing.T, g *prometheus.GaugeVec, labels []string) float64 {
	t.Helper()
	return testutil.ToFloat64(g.WithLabelValues(labels...))
}
