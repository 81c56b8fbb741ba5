package yarnusage

import (
	"context"
	"fmt"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/hooks/yarnadopt"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarninformer"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// adoptedMiB is what the adopted container holds before its move.
const adoptedMiB = 600

// TestRealKernelAdoptedLargeContainer: a YARN container that allocated and
// touched 600 MiB in a memory cgroup this test made (the NodeManager pod's
// stand-in) is moved by the adopter (YARNContainerCgroups' scan, as after
// a koordlet restart) into a memory cgroup of its own. This kernel moves no
// charges, so the new cgroup is charged almost nothing: the collector's
// memory sample for the container must still be its 600 MiB (measured by
// its processes until its charge is its own), and what stays charged to
// the pod's cgroup is reported.
func TestRealKernelAdoptedLargeContainer(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu", "cpuacct", "memory")
	// 600 MiB moves node memory: not while another test's memory
	// thresholds are set on it (they hold the same lock).
	kerneltest.HoldBoxLock(t, 20*time.Minute)
	kerneltest.UseHostRoots(t)
	top := kerneltest.UniqueRoot(t)
	pod := top + "/pod-nm"
	var podAbs []string
	for _, c := range []string{"memory", "cpu", "cpuacct"} {
		podAbs = append(podAbs, kerneltest.MakeCgroup(t, c, pod+"/nm"))
		kerneltest.MakeCgroup(t, c, top)
		t.Cleanup(func() { kerneltest.RemoveCgroupTree(t, filepath.Join(kerneltest.CgroupRoot, c, top, "hadoop-yarn")) })
	}
	h := cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: top + "/hadoop-yarn"}
	id := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 9, AttemptID: 1, Sequence: 2}.String()

	script := strings.Replace(kerneltest.HelperScript("alloc=600"), "exec env ", "exec env CONTAINER_ID="+id+" ", 1)
	p := kerneltest.Start(t, script, podAbs...)
	require.NoError(t, p.Release())
	require.Eventually(t, func() bool {
		rss, err := kerneltest.RssAnon(p.Pid())
		return err == nil && rss >= adoptedMiB<<20
	}, 30*time.Second, 50*time.Millisecond, "the container touches its %d MiB in the pod's cgroup", adoptedMiB)

	st := store.New()
	charges := cgroups.NewLeftCharges()
	a := yarnadopt.New(yarnadopt.Options{Store: st, ScanInterval: time.Second, Charges: charges,
		Hierarchy:   func() (cgroups.Hierarchy, bool) { return h, true },
		NMPodCgroup: func() (string, string, bool) { return pod, "test/nodemanager", true },
		ListNM: func(context.Context) ([]yarn.NMContainer, error) {
			cid, _ := yarn.ParseContainerID(id)
			return []yarn.NMContainer{{ID: cid, State: yarn.StateRunning}}, nil
		}})
	require.Eventually(t, func() bool {
		a.Scan()
		_, ok := a.Status().Containers[id]
		return ok
	}, 10*time.Second, 50*time.Millisecond, "the scan adopts the container")
	memDir := filepath.Join(kerneltest.CgroupRoot, "memory", h.ContainerRelDir(id))
	require.Contains(t, kerneltest.Pids(memDir), p.Pid(), "the process is in the container's own memory cgroup")
	ad := a.Status().Containers[id]
	t.Logf("adopted: %d processes moved, %d MiB charged to the pod's cgroup at the move", ad.ProcessesMoved, ad.MemoryChargedToNodeManagerBytes>>20)

	cfg := config.NewDefault()
	cfg.NMEndpoint = "http://127.0.0.1:1"
	cfg.NMTimeout = 100 * time.Millisecond
	cfg.CgroupHierarchy = h.Dir
	informer := yarninformer.New(cfg, st, nil)
	informer.Setup(nil, nil)
	require.Eventually(t, func() bool {
		informer.Resync(context.Background())
		c, ok := st.Get(id)
		return ok && c.Cgroups[cgroups.Memory].Owned && len(c.Pids) > 0
	}, 10*time.Second, 50*time.Millisecond)

	mc := newMetricCache(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	c := New(Options{Store: st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m, NodeName: "n1",
		Interval: func() time.Duration { return time.Second }, CgroupHierarchy: informer.Hierarchy, Charges: charges})
	defer c.Close()
	at := time.Now()
	c.Collect(at)
	got, ok := lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(id), at.Add(-time.Millisecond), at.Add(time.Minute))
	require.True(t, ok, "a memory sample for the adopted container")
	stat, err := cgroups.NewUsageReader(kerneltest.CgroupRoot, false).MemoryStat(h.ContainerRelDir(id))
	require.NoError(t, err)
	acc, _ := c.LastMemoryAccounting()
	t.Logf("container cgroup charged %.1f MiB; reported %.1f MiB; left charged to the pod: %.1f MiB (status %+v)",
		float64(stat.Usage())/(1<<20), got/(1<<20), float64(acc.ChargedToNodeManagerBytes)/(1<<20), acc)
	assert.GreaterOrEqual(t, got, float64(adoptedMiB<<20)*0.97, "the adopted container is reported at its %d MiB, not at its new cgroup's charge", adoptedMiB)
	assert.Less(t, got, float64(adoptedMiB<<20)*1.1)
	assert.Equal(t, got, gaugeValue(t, m.MemoryUsage, c.series[id].labels), "Prometheus says the same")
	assert.InDelta(t, float64(adoptedMiB<<20), float64(acc.ChargedToNodeManagerBytes), float64(adoptedMiB<<20)*0.1, "what stays charged to the pod's cgroup is counted")
	assert.Equal(t, acc.ChargedToNodeManagerBytes, acc.ChargedToNodeManager[id].ElsewhereBytes)

	// koordlet restarts: the record, kept in memory, is gone. With
	// YARNContainerCgroups on, the new collector reads the processes of
	// each container once at first sight and finds the memory left behind.
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNContainerCgroups): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNContainerCgroups): false})
	})
	m2, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	restarted := New(Options{Store: st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m2, NodeName: "n1",
		Interval: func() time.Duration { return time.Second }, CgroupHierarchy: informer.Hierarchy, Charges: cgroups.NewLeftCharges(),
		NMPodCgroup: func() (string, string, bool) { return pod, "test/nodemanager", true }})
	defer restarted.Close()
	at = time.Now().Add(time.Second)
	restarted.Collect(at)
	got, ok = lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(id), at.Add(-time.Millisecond), at.Add(time.Minute))
	require.True(t, ok)
	t.Logf("after a restart: reported %.1f MiB", got/(1<<20))
	assert.GreaterOrEqual(t, got, float64(adoptedMiB<<20)*0.97, "after a restart too (the pod's cgroup still holds what it left)")
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
	if _, err := osexec.LookPath("python3"); err != nil {
		kerneltest.Skip(t, "python3 (the forking workload) is not installed")
	}
	kerneltest.HoldBoxLock(t, 20*time.Minute)
	kerneltest.UseHostRoots(t)
	top := kerneltest.UniqueRoot(t)
	pod := top + "/pod-nm"
	var podAbs []string
	for _, c := range []string{"memory", "cpu", "cpuacct"} {
		podAbs = append(podAbs, kerneltest.MakeCgroup(t, c, pod+"/nm"))
		kerneltest.MakeCgroup(t, c, top)
		t.Cleanup(func() { kerneltest.RemoveCgroupTree(t, filepath.Join(kerneltest.CgroupRoot, c, top, "hadoop-yarn")) })
	}
	h := cgroups.Hierarchy{CgroupRoot: kerneltest.CgroupRoot, ProcRoot: "/proc", Dir: top + "/hadoop-yarn"}
	id := yarn.ContainerID{Epoch: 17, ClusterTimestamp: 1700000000000, AppID: 9, AttemptID: 1, Sequence: 3}.String()
	// Fill the pages, wait to be moved into the container's memory cgroup,
	// then fork: both processes map the pages until one writes.
	script := fmt.Sprintf(`exec env CONTAINER_ID=%s python3 -c 'import os, time
b = bytearray(b"\x01") * (%d << 20)
while "hadoop-yarn" not in [l for l in open("/proc/self/cgroup") if ":memory:" in l][0]:
    time.sleep(0.05)
os.fork()
time.sleep(3600)'`, id, forkedMiB)
	p := kerneltest.Start(t, script, podAbs...)
	require.NoError(t, p.Release())
	require.Eventually(t, func() bool {
		rss, err := kerneltest.RssAnon(p.Pid())
		return err == nil && rss >= forkedMiB<<20
	}, 30*time.Second, 50*time.Millisecond, "the container touches its %d MiB in the pod's cgroup", forkedMiB)

	st := store.New()
	a := yarnadopt.New(yarnadopt.Options{Store: st, ScanInterval: time.Second, Charges: cgroups.NewLeftCharges(),
		Hierarchy:   func() (cgroups.Hierarchy, bool) { return h, true },
		NMPodCgroup: func() (string, string, bool) { return pod, "test/nodemanager", true },
		ListNM: func(context.Context) ([]yarn.NMContainer, error) {
			cid, _ := yarn.ParseContainerID(id)
			return []yarn.NMContainer{{ID: cid, State: yarn.StateRunning}}, nil
		}})
	require.Eventually(t, func() bool {
		a.Scan()
		_, ok := a.Status().Containers[id]
		return ok
	}, 10*time.Second, 50*time.Millisecond, "the scan adopts the container")

	cfg := config.NewDefault()
	cfg.NMEndpoint = "http://127.0.0.1:1"
	cfg.NMTimeout = 100 * time.Millisecond
	cfg.CgroupHierarchy = h.Dir
	informer := yarninformer.New(cfg, st, nil)
	informer.Setup(nil, nil)
	procs := cgroups.NewProcessMemoryReader(h).NoKeep()
	require.Eventually(t, func() bool {
		informer.Resync(context.Background())
		pm, err := procs.Read(cgroups.CPU, h.ContainerRelDir(id))
		return err == nil && pm.Processes >= 2 && pm.Usage() >= 2*forkedMiB<<20
	}, 30*time.Second, 50*time.Millisecond, "the worker forks in the container's own cgroups")
	cg := cgroups.NewUsageReader(kerneltest.CgroupRoot, false).NoKeep()
	podStat, err := cg.MemoryStat(pod)
	require.NoError(t, err)
	ownStat, err := cg.MemoryStat(h.ContainerRelDir(id))
	require.NoError(t, err)
	pm, err := procs.Read(cgroups.CPU, h.ContainerRelDir(id))
	require.NoError(t, err)
	t.Logf("processes %.1f MiB; own cgroup charged %.1f MiB; the pod's %.1f MiB",
		float64(pm.Usage())/(1<<20), float64(ownStat.Usage())/(1<<20), float64(podStat.Usage())/(1<<20))

	// A restarted koordlet: no record.
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNContainerCgroups): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNContainerCgroups): false})
	})
	mc := newMetricCache(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	c := New(Options{Store: st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m, NodeName: "n1",
		Interval: func() time.Duration { return time.Second }, CgroupHierarchy: informer.Hierarchy, Charges: cgroups.NewLeftCharges(),
		NMPodCgroup: func() (string, string, bool) { return pod, "test/nodemanager", true }})
	defer c.Close()
	at := time.Now()
	c.Collect(at)
	got, ok := lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(id), at.Add(-time.Millisecond), at.Add(time.Minute))
	require.True(t, ok)
	acc, _ := c.LastMemoryAccounting()
	t.Logf("after a restart: reported %.1f MiB, %.1f MiB of it charged to the pod", got/(1<<20), float64(acc.ChargedToNodeManagerBytes)/(1<<20))
	assert.InEpsilon(t, float64(forkedMiB<<20), got, 0.1, "its %d MiB once, not once per process", forkedMiB)
	assert.LessOrEqual(t, acc.ChargedToNodeManagerBytes, podStat.Usage()+cgroups.OwnChargeSlack, "no more left elsewhere than the pod's cgroup holds")
}
