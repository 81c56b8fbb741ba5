package yarnusage

import (
	"context"
	"fmt"
	osexec "os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnmemcg"
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
	requirePython(t)
	kerneltest.HoldBoxLock(t, 20*time.Minute)
	kerneltest.UseHostRoots(t)
	const id = "container_e17_1700000000000_0042_01_000002"
	script := "exec " + forkingPython(forkedMiB, false)
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

	got, acc, charges := collectOnce(t, st, informer.Hierarchy, nil, id)
	t.Logf("reported %.1f MiB; recorded as charged to the NodeManager %.1f MiB", got/(1<<20), float64(acc.ChargedToNodeManagerBytes)/(1<<20))
	assert.InEpsilon(t, float64(charge), got, 0.05, "its cgroup's charge, not its processes' sum")
	assert.Less(t, got, float64(forkedMiB<<20)*1.5)
	assert.Zero(t, acc.ChargedToNodeManagerBytes)
	assert.Zero(t, charges.Len(), "nothing recorded as left elsewhere")
}

// TestRealKernelAdoptedForkedWorkerBoundedByPod: a YARN container touches
// 300 MiB in the NodeManager pod's stand-in cgroup, is adopted into memory
// cgroups of its own (the pages stay charged to the pod), and then forks a
// worker that maps the same pages copy-on-write: its processes' RssAnon
// sums to 600 MiB, its cgroup is charged almost nothing, and the pod's
// cgroup holds the 300 MiB. After a koordlet restart (no record) the
// collector reads its processes once (the cgroup is koordlet's) and counts
// as left elsewhere no more than the pod's cgroup holds: 300 MiB, not 600.
func TestRealKernelAdoptedForkedWorkerBoundedByPod(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "cpuacct", "memory")
	requirePython(t)
	kerneltest.HoldBoxLock(t, 20*time.Minute)
	kerneltest.UseHostRoots(t)
	a := adoptContainer(t, 3, forkedMiB, func(id string) string { return "exec env CONTAINER_ID=" + id + " " + forkingPython(forkedMiB, true) })
	procs := cgroups.NewProcessMemoryReader(a.h).NoKeep()
	require.Eventually(t, func() bool {
		a.informer.Resync(context.Background())
		pm, err := procs.Read(cgroups.CPU, a.h.ContainerRelDir(a.id))
		return err == nil && pm.Processes >= 2 && pm.Usage() >= 2*forkedMiB<<20
	}, 30*time.Second, 50*time.Millisecond, "the worker forks in the container's own cgroups")
	cg := cgroups.NewUsageReader(kerneltest.CgroupRoot, false).NoKeep()
	podStat, err := cg.MemoryStat(a.pod)
	require.NoError(t, err)
	ownStat, err := cg.MemoryStat(a.h.ContainerRelDir(a.id))
	require.NoError(t, err)
	pm, err := procs.Read(cgroups.CPU, a.h.ContainerRelDir(a.id))
	require.NoError(t, err)
	t.Logf("processes %.1f MiB; own cgroup charged %.1f MiB; the pod's %.1f MiB",
		float64(pm.Usage())/(1<<20), float64(ownStat.Usage())/(1<<20), float64(podStat.Usage())/(1<<20))

	// A restarted koordlet: no record.
	got, acc, _ := collectOnce(t, a.st, a.informer.Hierarchy, a.nmPodCgroup, a.id)
	t.Logf("after a restart: reported %.1f MiB, %.1f MiB of it charged to the pod", got/(1<<20), float64(acc.ChargedToNodeManagerBytes)/(1<<20))
	assert.InEpsilon(t, float64(forkedMiB<<20), got, 0.1, "its %d MiB once, not once per process", forkedMiB)
	assert.LessOrEqual(t, acc.ChargedToNodeManagerBytes, podStat.Usage()+cgroups.OwnChargeSlack, "no more left elsewhere than the pod's cgroup holds")
}

// TestRealKernelMemcgLeafRechecked: a CPU-only YARN container (its memory
// in the NodeManager pod's stand-in memory cgroup) touches 48 MiB and is
// given a memory cgroup of its own by the real YARNMemoryCgroup applier,
// which marks it and records where the process came from. This kernel
// moves no charges (or does: then nothing is left), so after a koordlet
// restart the collector, reading the applier's marker and origin, reports
// the container at what it holds, counting as left elsewhere no more than
// the origin is charged.
func TestRealKernelMemcgLeafRechecked(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "cpuacct", "memory")
	kerneltest.HoldBoxLock(t, 20*time.Minute)
	kerneltest.UseHostRoots(t)
	const allocMiB = 48 // below the applier's 64 MiB
	top := kerneltest.UniqueRoot(t)
	pod := top + "/pod-nm/nm"
	podMem := kerneltest.MakeCgroup(t, "memory", pod)
	kerneltest.MakeCgroup(t, "memory", top)
	t.Cleanup(func() {
		kerneltest.RemoveCgroupTree(t, filepath.Join(kerneltest.CgroupRoot, "memory", top, "hadoop-yarn"))
	})
	h := cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: top + "/hadoop-yarn",
		NS: cgroups.NewNamespace("/proc", kerneltest.CgroupRoot, false)}
	const id = "container_e17_1700000000000_0042_01_000002"
	dirs := []string{podMem}
	for _, c := range []string{"cpu", "cpuacct"} {
		dirs = append(dirs, kerneltest.MakeCgroup(t, c, h.ContainerRelDir(id)))
	}
	p := kerneltest.Start(t, kerneltest.HelperScript(fmt.Sprintf("alloc=%d", allocMiB)), dirs...)
	require.NoError(t, p.Release())
	require.Eventually(t, func() bool {
		rss, err := kerneltest.RssAnon(p.Pid())
		return err == nil && rss >= allocMiB<<20
	}, 30*time.Second, 50*time.Millisecond, "the container touches its %d MiB in the pod's memory cgroup", allocMiB)
	st := store.New()
	observe := func() {
		res, err := cgroups.NewScanner(h).Scan()
		require.NoError(t, err)
		st.Resync(store.Observation{ScanOK: true, Scan: res.Containers}, time.Now())
	}
	observe()
	ct, ok := st.Get(id)
	require.True(t, ok)
	require.Equal(t, cgroups.MemoryByProcesses, ct.Cgroups.MemoryAccounting())
	a := yarnmemcg.New(yarnmemcg.Options{Store: st, Hierarchy: func() (cgroups.Hierarchy, bool) { return h, true }, Interval: time.Hour})
	require.Equal(t, 1, a.Apply(ct), "the applier moves the process into the memory cgroup it makes")
	observe()
	ct, _ = st.Get(id)
	require.Equal(t, cgroups.MemoryByCgroup, ct.Cgroups.MemoryAccounting())
	pm, err := cgroups.NewProcessMemoryReader(h).NoKeep().Read(cgroups.CPU, h.ContainerRelDir(id))
	require.NoError(t, err)
	cg := cgroups.NewUsageReader(kerneltest.CgroupRoot, false).NoKeep()
	own, err := cg.MemoryStat(h.ContainerRelDir(id))
	require.NoError(t, err)
	origin, err := cg.MemoryStat(pod)
	require.NoError(t, err)
	t.Logf("processes %.1f MiB; own memory cgroup charged %.1f MiB; the origin %.1f MiB",
		float64(pm.Usage())/(1<<20), float64(own.Usage())/(1<<20), float64(origin.Usage())/(1<<20))

	enableGate(t, features.YARNMemoryCgroup)
	got, acc, _ := collectOnce(t, st, func() (cgroups.Hierarchy, bool) { return h, true }, nil, id)
	t.Logf("after a restart: reported %.1f MiB, %.1f MiB of it charged to the origin", got/(1<<20), float64(acc.ChargedToNodeManagerBytes)/(1<<20))
	assert.GreaterOrEqual(t, got, float64(allocMiB<<20), "what its process holds, not its new cgroup's charge")
	assert.InDelta(t, float64(pm.Usage()), got, 8<<20, "(its runtime grows a little meanwhile)")
	assert.LessOrEqual(t, acc.ChargedToNodeManagerBytes, origin.Usage()+cgroups.OwnChargeSlack)
}

// requirePython skips (fails under KOORDLET_YARN_NO_SKIP) without python3,
// the forking workload.
func requirePython(t *testing.T) {
	t.Helper()
	if _, err := osexec.LookPath("python3"); err != nil {
		kerneltest.Skip(t, "python3 (the forking workload) is not installed")
	}
}

// forkingPython is a python3 command that fills mib MiB (bytes * n is a
// memset) and forks once: both processes map the pages copy-on-write until
// one writes (a PySpark daemon and its worker). afterMove waits until it is
// in a memory cgroup below a hadoop-yarn hierarchy first.
func forkingPython(mib int, afterMove bool) string {
	wait := ""
	if afterMove {
		wait = `while "hadoop-yarn" not in [l for l in open("/proc/self/cgroup") if ":memory:" in l][0]:
    time.sleep(0.05)
`
	}
	return fmt.Sprintf(`python3 -c 'import os, time
b = bytearray(b"\x01") * (%d << 20)
%sos.fork()
time.sleep(3600)'`, mib, wait)
}

// collectOnce runs one cycle of a collector as a restarted koordlet's (no
// record, YARNContainerCgroups on) and returns what it reports for
// container id, its status and its record of charges.
func collectOnce(t *testing.T, st *store.Store, hierarchy func() (cgroups.Hierarchy, bool), nmPod func() (string, string, bool), id string) (float64, MemoryAccountingStatus, *cgroups.LeftCharges) {
	t.Helper()
	enableGate(t, features.YARNContainerCgroups)
	mc := newMetricCache(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	charges := cgroups.NewLeftCharges()
	c := New(Options{Store: st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m, NodeName: "n1",
		Interval: func() time.Duration { return time.Second }, CgroupHierarchy: hierarchy, Charges: charges, NMPodCgroup: nmPod})
	defer c.Close()
	at := time.Now()
	c.Collect(at)
	got, ok := lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(id), at.Add(-time.Millisecond), at.Add(time.Minute))
	require.True(t, ok)
	acc, _ := c.LastMemoryAccounting()
	return got, acc, charges
}
