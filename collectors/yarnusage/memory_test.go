package yarnusage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

const nmMemory = "kubepods/besteffort/pod-nm/nodemanager"

// cpuOnly puts a container on the fake root as YARN's CPU-only cgroups
// handler leaves it: its own cpu and cpuacct cgroups listing pids, its
// processes' memory in the NodeManager pod's memory cgroup. Each pid's
// /proc/<pid>/cgroup says so (or, for pids in elsewhere, another
// container's cpu cgroup) and its status holds anonKB, fileKB, shmemKB.
// The pids must be live processes (the reader pins them with a pidfd).
func (n *node) cpuOnly(name string, pids []int, elsewhere map[int]bool, anonKB, fileKB, shmemKB int64) {
	d := n.dir(name)
	var procs string
	for _, pid := range pids {
		procs += strconv.Itoa(pid) + "\n"
		in := fmt.Sprintf("5:memory:/%s\n4:cpu,cpuacct:/%s\n", nmMemory, d)
		if elsewhere[pid] {
			in = fmt.Sprintf("5:memory:/%s\n4:cpu,cpuacct:/%s\n", nmMemory, n.dir("container_e17_1700000000000_0042_01_000099"))
		}
		n.helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "cgroup"), in)
		n.helper.WriteProcSubFileContents(filepath.Join(strconv.Itoa(pid), "status"),
			fmt.Sprintf("Name:\tjava\nVmRSS:\t%d kB\nRssAnon:\t%d kB\nRssFile:\t%d kB\nRssShmem:\t%d kB\n", anonKB+fileKB+shmemKB, anonKB, fileKB, shmemKB))
	}
	n.helper.WriteCgroupFileContents(d, system.CPUProcs, procs)
	n.helper.WriteCgroupFileContents(d, system.CPUAcctUsage, "1000")
}

// TestCollectWithoutMemoryCgroup: a container without a memory cgroup of
// its own (CPU-only YARN) gets the same memory series and metric-cache
// samples as one with, from the sum of its processes; the collector's
// status says how each is measured and where the CPU-only containers'
// memory is charged. Before, such a container had no memory figure at all.
func TestCollectWithoutMemoryCgroup(t *testing.T) {
	n := newNode(t, false)
	mc := newMetricCache(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	c := New(Options{Store: n.st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m, NodeName: "n1",
		Interval: func() time.Duration { return time.Second }})
	defer c.Close()

	const cpuOnlyExec = "container_e17_1700000000000_0042_01_000003"
	const lost = "container_e17_1700000000000_0042_01_000004"
	// Live processes for the pidfds; their /proc files are the fake root's.
	self, parent := os.Getpid(), os.Getppid()
	n.set(exec, 5e9, 300<<20, 200<<20, 100, 0) // YARN made its memory cgroup
	n.cpuOnly(cpuOnlyExec, []int{self}, nil, 200<<10, 30<<10, 1<<10)
	n.cpuOnly(lost, []int{parent}, map[int]bool{parent: true}, 999<<10, 0, 0) // its only process is another's now

	own := func(name string) cgroups.Ref { return cgroups.Ref{Dir: n.dir(name), Owned: true} }
	nm := cgroups.Ref{Dir: nmMemory}
	var scan []cgroups.Container
	for name, cg := range map[string]cgroups.Cgroups{
		exec:        {cgroups.CPU: own(exec), cgroups.CPUAcct: own(exec), cgroups.Memory: own(exec)},
		cpuOnlyExec: {cgroups.CPU: own(cpuOnlyExec), cgroups.CPUAcct: own(cpuOnlyExec), cgroups.Memory: nm},
		lost:        {cgroups.CPU: own(lost), cgroups.CPUAcct: own(lost), cgroups.Memory: nm},
	} {
		id, err := yarn.ParseContainerID(name)
		require.NoError(t, err)
		scan = append(scan, cgroups.Container{Name: name, ID: id, Pids: []int{self}, Cgroups: cg})
	}
	n.st.Resync(store.Observation{Scan: scan, ScanOK: true}, time.Now())

	_, ok := c.LastMemoryAccounting()
	assert.False(t, ok, "no status before the first cycle")
	t0 := time.Now()
	c.Collect(t0)
	mem := func(kind metriccache.MetricResource, name string) (float64, bool) {
		return lastValue(t, mc, kind, metriccache.MetricPropertiesFunc.Container(name), t0.Add(-time.Minute), t0.Add(time.Minute))
	}
	v, ok := mem(metriccache.ContainerMemUsageMetric, cpuOnlyExec)
	require.True(t, ok, "a CPU-only container has a memory sample")
	assert.Equal(t, float64(201<<20), v, "RssAnon + RssShmem")
	v, _ = mem(metriccache.ContainerMemoryUsageWithPageCacheMetric, cpuOnlyExec)
	assert.Equal(t, float64(231<<20), v, "+ RssFile")
	labels := []string{"n1", cpuOnlyExec, "application_1700000000000_0042", "", "false"}
	assert.Equal(t, float64(201<<20), testutil.ToFloat64(m.MemoryUsage.WithLabelValues(labels...)))
	assert.Equal(t, float64(231<<20), testutil.ToFloat64(m.MemoryWithPageCache.WithLabelValues(labels...)))
	v, _ = mem(metriccache.ContainerMemUsageMetric, exec)
	assert.Equal(t, float64(300<<20), v, "a container with its own memory cgroup is read from it")
	_, ok = mem(metriccache.ContainerMemUsageMetric, lost)
	assert.False(t, ok, "no process proven in the container: its memory is unknown, not zero")
	agg, _ := lastValue(t, mc, metriccache.HostAppMemoryUsageMetric, metriccache.MetricPropertiesFunc.HostApplication(AggregateName), t0.Add(-time.Minute), t0.Add(time.Minute))
	assert.Equal(t, float64(501<<20), agg)

	st, ok := c.LastMemoryAccounting()
	require.True(t, ok)
	assert.Equal(t, MemoryAccountingStatus{Cgroup: 1, Processes: 2, ChargedTo: []string{nmMemory}}, st)
	assert.Equal(t, 1, c.procMem.OpenFiles(), "the counted process's status is kept open")

	// The CPU-only containers leave: their descriptors are closed and the
	// status counts what is left.
	var left []cgroups.Container
	for _, sc := range scan {
		if sc.Name == exec {
			left = append(left, sc)
		}
	}
	n.st.Resync(store.Observation{Scan: left, ScanOK: true}, time.Now())
	c.Collect(t0.Add(time.Second))
	assert.Equal(t, 0, c.procMem.OpenFiles())
	st, _ = c.LastMemoryAccounting()
	assert.Equal(t, MemoryAccountingStatus{Cgroup: 1}, st)
}
