package yarnusage

import (
	"fmt"
	osexec "os/exec"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// forkedMiB is what the forking container's parent touches before it forks.
const forkedMiB = 300

// TestRealKernelYARNMadeCgroupForkedWorker: a YARN container in memory and
// cpu cgroups YARN made (this test, unmarked) whose process touches 300 MiB
// and then forks a worker (a PySpark daemon and its workers): the worker
// maps the same pages copy-on-write, so the processes' RssAnon sums to
// 600 MiB while the cgroup is charged 300 MiB. With YARNContainerCgroups on
// the collector, without a record (as after a restart), reports the
// container at its cgroup's 300 MiB and records nothing as charged to the
// NodeManager. Before, it read the processes and reported 600 MiB.
func TestRealKernelYARNMadeCgroupForkedWorker(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "cpuacct", "memory")
	if _, err := osexec.LookPath("python3"); err != nil {
		kerneltest.Skip(t, "python3 (the forking workload) is not installed")
	}
	kerneltest.HoldBoxLock(t, 20*time.Minute)
	kerneltest.UseHostRoots(t)
	const id = "container_e17_1700000000000_0042_01_000002"
	// Fill the pages (bytes * n is a memset), then fork: both processes map
	// them until one writes.
	script := fmt.Sprintf(`exec python3 -c 'import os, time
b = bytearray(b"\x01") * (%d << 20)
os.fork()
time.sleep(3600)'`, forkedMiB)
	_, st, informer := startWorkloads(t, []string{"cpu", "cpuacct", "memory"}, []kernelWorkload{{id, script, forkedMiB, 2}})
	h, ok := informer.Hierarchy()
	require.True(t, ok)
	ct, ok := st.Get(id)
	require.True(t, ok)
	require.Equal(t, cgroups.MemoryByCgroup, ct.Cgroups.MemoryAccounting())
	procs := cgroups.NewProcessMemoryReader(h).NoKeep()
	cg := cgroups.NewUsageReader(h.CgroupRoot, false).NoKeep()
	var charge, byProcs int64
	require.Eventually(t, func() bool {
		pm, err := procs.Read(cgroups.CPU, ct.Cgroups[cgroups.CPU].Dir)
		if err != nil || pm.Processes < 2 {
			return false
		}
		stat, err := cg.MemoryStat(ct.Cgroups[cgroups.Memory].Dir)
		if err != nil {
			return false
		}
		charge, byProcs = stat.Usage(), pm.Usage()
		return charge >= forkedMiB<<20 && byProcs >= 2*forkedMiB<<20
	}, 30*time.Second, 100*time.Millisecond, "the parent touches %d MiB and forks", forkedMiB)
	t.Logf("cgroup charged %.1f MiB; processes' RssAnon + RssShmem %.1f MiB", float64(charge)/(1<<20), float64(byProcs)/(1<<20))

	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNContainerCgroups): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNContainerCgroups): false})
	})
	mc := newMetricCache(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	charges := cgroups.NewLeftCharges()
	c := New(Options{Store: st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m, NodeName: "n1",
		Interval: func() time.Duration { return time.Second }, CgroupHierarchy: informer.Hierarchy, Charges: charges})
	defer c.Close()
	at := time.Now()
	c.Collect(at)
	got, ok := lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(id), at.Add(-time.Millisecond), at.Add(time.Minute))
	require.True(t, ok)
	acc, _ := c.LastMemoryAccounting()
	t.Logf("reported %.1f MiB; recorded as charged to the NodeManager %.1f MiB", got/(1<<20), float64(acc.ChargedToNodeManagerBytes)/(1<<20))
	assert.InEpsilon(t, float64(charge), got, 0.05, "its cgroup's charge, not its processes' sum")
	assert.Less(t, got, float64(forkedMiB<<20)*1.5)
	assert.Zero(t, acc.ChargedToNodeManagerBytes)
	assert.Zero(t, charges.Len(), "nothing recorded as left elsewhere")
}
