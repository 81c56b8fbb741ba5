package yarnusage

import (
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// TestCollectAdoptedWithMemoryLeftBehind (fake root): a container whose
// process koordlet moved into its own memory cgroup while it held 598 MiB
// (recorded in Charges) has a cgroup charged 2 MiB and a process holding
// 600 MiB: it is reported at 600 MiB (metric cache, Prometheus), the
// 598 MiB still charged to the NM pod are counted (status, metric); once
// the process freed what it left behind, its charge is its own: the record
// goes and the cgroup alone is read.
func TestCollectAdoptedWithMemoryLeftBehind(t *testing.T) {
	n := newNode(t, false)
	mc := newMetricCache(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	charges := cgroups.NewLeftCharges()
	c := New(Options{Store: n.st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m, NodeName: "n1",
		Interval: func() time.Duration { return time.Second }, Charges: charges})
	defer c.Close()

	const adopted = "container_e17_1700000000000_0042_01_000005"
	self := os.Getpid()
	n.set(exec, 5e9, 300<<20, 0, 100, 0)
	n.set(adopted, 5e9, 2<<20, 0, 100, 0)
	n.cpuOnly(adopted, []int{self}, nil, 600<<10, 0, 0) // its process, in its cpu cgroup
	own := func(name string) cgroups.Ref { return cgroups.Ref{Dir: n.dir(name), Owned: true} }
	var scan []cgroups.Container
	for _, name := range []string{exec, adopted} {
		id, err := yarn.ParseContainerID(name)
		require.NoError(t, err)
		scan = append(scan, cgroups.Container{Name: name, ID: id, Pids: []int{self},
			Cgroups: cgroups.Cgroups{cgroups.CPU: own(name), cgroups.CPUAcct: own(name), cgroups.Memory: own(name)}})
	}
	n.st.Resync(store.Observation{Scan: scan, ScanOK: true}, time.Now())
	charges.Add(adopted, 598<<20)

	collect := func(at time.Time, name string) float64 {
		c.Collect(at)
		v, ok := lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(name), at.Add(-time.Millisecond), at.Add(time.Minute))
		require.True(t, ok)
		return v
	}
	t0 := time.Now()
	assert.Equal(t, float64(600<<20), collect(t0, adopted), "its processes' memory, not its cgroup's 2 MiB")
	assert.Equal(t, float64(300<<20), collect(t0, exec), "a container not recorded: its cgroup")
	labels := []string{"n1", adopted, "application_1700000000000_0042", "", "false"}
	assert.Equal(t, float64(600<<20), testutil.ToFloat64(m.MemoryUsage.WithLabelValues(labels...)))
	assert.Equal(t, float64(598<<20), testutil.ToFloat64(m.ChargedToNodeManager.WithLabelValues("n1")))
	st, _ := c.LastMemoryAccounting()
	assert.Equal(t, map[string]ChargeSplit{adopted: {UsageBytes: 600 << 20, ChargeBytes: 2 << 20, ElsewhereBytes: 598 << 20}}, st.ChargedToNodeManager)
	assert.Equal(t, int64(598<<20), st.ChargedToNodeManagerBytes)
	assert.Equal(t, 2, st.Cgroup)
	assert.Zero(t, st.Processes, "still measured as a container with its memory cgroup")

	// It grew by 100 MiB (charged to its own cgroup) and freed 300 MiB of
	// what it left behind.
	n.set(adopted, 5e9, 102<<20, 0, 100, 0)
	n.cpuOnly(adopted, []int{self}, nil, 400<<10, 0, 0)
	assert.Equal(t, float64(400<<20), collect(t0.Add(time.Second), adopted))
	st, _ = c.LastMemoryAccounting()
	assert.Equal(t, int64(298<<20), st.ChargedToNodeManagerBytes)

	// All of it freed: its own charge.
	n.set(adopted, 5e9, 102<<20, 0, 100, 0)
	n.cpuOnly(adopted, []int{self}, nil, 102<<10, 0, 0)
	assert.Equal(t, float64(102<<20), collect(t0.Add(2*time.Second), adopted))
	_, ok := charges.Get(adopted)
	assert.False(t, ok, "settled: its charge is its own")
	st, _ = c.LastMemoryAccounting()
	assert.Empty(t, st.ChargedToNodeManager)
	assert.Zero(t, testutil.ToFloat64(m.ChargedToNodeManager.WithLabelValues("n1")))
	// Later cycles read its cgroup alone (its processes' figure no longer matters).
	n.cpuOnly(adopted, []int{self}, nil, 900<<10, 0, 0)
	assert.Equal(t, float64(102<<20), collect(t0.Add(3*time.Second), adopted))
	assert.Zero(t, c.procMem.OpenFiles(), "no process descriptor kept for a settled container")

	// A recorded container that goes is forgotten.
	charges.Add(adopted, 10<<20)
	n.st.Resync(store.Observation{Scan: scan[:1], ScanOK: true}, time.Now())
	c.Collect(t0.Add(4 * time.Second))
	assert.Zero(t, charges.Len())
}
