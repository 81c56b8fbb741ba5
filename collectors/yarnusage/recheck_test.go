package yarnusage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/component-base/featuregate"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metriccache"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// nmPod is the NodeManager pod's cgroup on the fake root.
const nmPod = "kubepods/besteffort/pod-nm"

// writeMemoryStat writes a v1 memory.stat charged anon bytes to dir.
func (n *node) writeMemoryStat(dir string, anon int64) {
	n.helper.WriteCgroupFileContents(dir, system.MemoryStat, fmt.Sprintf("cache 0\nrss %d\ntotal_cache 0\ntotal_rss %d\ntotal_active_anon %d\ntotal_inactive_anon 0\ntotal_active_file 0\ntotal_inactive_file 0\ntotal_unevictable 0\n", anon, anon, anon))
}

// TestRecheckOnlyKoordletMadeCgroups (fake root): with a gate that moves
// processes into memory cgroups on, a koordlet without a record of the
// container (just restarted) reads its processes once when it first sees
// its memory cgroup. Only a cgroup koordlet made (the hooks' marker xattr)
// can hold a container whose memory stayed charged to the cgroup it came
// from: a YARN-made one got its processes at their birth, and what their
// RSS sums beyond its charge is pages counted once per process
// (copy-on-write after fork, shared memory), not memory left elsewhere.
// For a koordlet-made one, what is left elsewhere is bounded by what the
// cgroup it came from (yarnmemcg's recorded origin, else the NodeManager
// pod's) is charged now.
func TestRecheckOnlyKoordletMadeCgroups(t *testing.T) {
	const origin = "kubepods/besteffort/pod-nm/nodemanager"
	for _, tt := range []struct {
		name   string
		gate   featuregate.Feature
		marker string // xattr on the container's memory cgroup ("": YARN made it)
		from   string // cgroups.MemcgFromMarker on it
		// charge is the container's memory cgroup's, procs its processes'
		// (each), pod the NodeManager pod's and origin's the recorded origin's.
		charge, procs int64
		nprocs        int
		pod, fromMem  int64
		podKnown      bool
		want          int64 // reported memory
		elsewhere     int64 // recorded as charged to the NodeManager
	}{
		{name: "YARN made, YARNContainerCgroups on", gate: features.YARNContainerCgroups,
			charge: 300 << 20, procs: 300 << 20, nprocs: 2, pod: 2 << 30, podKnown: true, want: 300 << 20},
		{name: "YARN made, YARNMemoryCgroup on", gate: features.YARNMemoryCgroup,
			charge: 300 << 20, procs: 600 << 20, nprocs: 1, pod: 2 << 30, podKnown: true, want: 300 << 20},
		{name: "adopted before a restart", gate: features.YARNContainerCgroups, marker: cgroups.ContainerCgroupMarker,
			charge: 2 << 20, procs: 600 << 20, nprocs: 1, pod: 2 << 30, podKnown: true, want: 600 << 20, elsewhere: 598 << 20},
		{name: "adopted, the NodeManager pod not known: unbounded", gate: features.YARNContainerCgroups, marker: cgroups.ContainerCgroupMarker,
			charge: 300 << 20, procs: 600 << 20, nprocs: 2, want: 1200 << 20, elsewhere: 900 << 20},
		{name: "adopted, forked workers: no more than the NodeManager pod holds", gate: features.YARNContainerCgroups, marker: cgroups.ContainerCgroupMarker,
			charge: 300 << 20, procs: 600 << 20, nprocs: 2, pod: 400 << 20, podKnown: true, want: 700 << 20, elsewhere: 400 << 20},
		{name: "memory cgroup made by YARNMemoryCgroup", gate: features.YARNMemoryCgroup, marker: cgroups.MemcgMarker,
			charge: 2 << 20, procs: 60 << 20, nprocs: 1, pod: 2 << 30, podKnown: true, want: 60 << 20, elsewhere: 58 << 20},
		{name: "YARNMemoryCgroup: no more than its recorded origin holds", gate: features.YARNMemoryCgroup, marker: cgroups.MemcgMarker,
			from: origin, fromMem: 100 << 20, charge: 300 << 20, procs: 600 << 20, nprocs: 1, pod: 2 << 30, podKnown: true,
			want: 400 << 20, elsewhere: 100 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			enableGate(t, tt.gate)
			n := newNode(t, false)
			mc := newMetricCache(t)
			m, err := NewMetrics(prometheus.NewRegistry())
			require.NoError(t, err)
			charges := cgroups.NewLeftCharges()
			c := New(Options{Store: n.st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m, NodeName: "n1",
				Interval: func() time.Duration { return time.Second }, Charges: charges,
				NMPodCgroup: func() (string, string, bool) { return nmPod, "yarn/nodemanager-0", tt.podKnown }})
			defer c.Close()

			n.set(exec, 5e9, tt.charge, 0, 100, 0)
			pids := []int{os.Getpid(), os.Getppid()}[:tt.nprocs]
			n.cpuOnly(exec, pids, nil, tt.procs>>10, 0, 0) // its processes, in its cpu cgroup
			n.writeMemoryStat(nmPod, tt.pod)
			memDir := filepath.Join(n.helper.TempDir, "memory", n.dir(exec))
			if tt.marker != "" {
				require.NoError(t, unix.Setxattr(memDir, tt.marker, []byte("1"), 0))
			}
			if tt.from != "" {
				require.NoError(t, unix.Setxattr(memDir, cgroups.MemcgFromMarker, []byte(tt.from), 0))
				n.writeMemoryStat(tt.from, tt.fromMem)
			}
			id, err := yarn.ParseContainerID(exec)
			require.NoError(t, err)
			own := cgroups.Ref{Dir: n.dir(exec), Owned: true}
			n.st.Resync(store.Observation{Scan: []cgroups.Container{{Name: exec, ID: id, Pids: pids,
				Cgroups: cgroups.Cgroups{cgroups.CPU: own, cgroups.CPUAcct: own, cgroups.Memory: own}}}, ScanOK: true}, time.Now())

			for i, at := range []time.Time{time.Now(), time.Now().Add(time.Second)} {
				c.Collect(at)
				got, ok := lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(exec), at.Add(-time.Millisecond), at.Add(time.Minute))
				require.True(t, ok)
				assert.Equal(t, tt.want>>20, int64(got)>>20, "cycle %d: reported MiB", i)
				st, _ := c.LastMemoryAccounting()
				assert.Equal(t, tt.elsewhere>>20, st.ChargedToNodeManagerBytes>>20, "cycle %d: MiB recorded as charged to the NodeManager", i)
				assert.Equal(t, float64(tt.elsewhere), testutil.ToFloat64(m.ChargedToNodeManager.WithLabelValues("n1")))
			}
			_, recorded := charges.Get(exec)
			assert.Equal(t, tt.elsewhere > 0, recorded, "recorded as holding memory charged elsewhere")
		})
	}
}

// enableGate turns gate on until the test ends.
func enableGate(t *testing.T, gate featuregate.Feature) {
	t.Helper()
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(gate): true}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(gate): false})
	})
}

// TestLeftChargeBoundedByNodeManagerPod (fake root): the adopter recorded
// 598 MiB left behind by a container (RSS summed over a daemon and its
// already-forked worker, which share their pages); its processes sum to
// 1200 MiB, its cgroup is charged 2 MiB, and the NodeManager pod's cgroup,
// where the pages stay, holds 400 MiB: it is reported at 402 MiB, not
// 600. Once the pod's cgroup holds no more than the slack, nothing can be
// left there: the record settles and its cgroup alone counts.
func TestLeftChargeBoundedByNodeManagerPod(t *testing.T) {
	n := newNode(t, false)
	mc := newMetricCache(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	charges := cgroups.NewLeftCharges()
	c := New(Options{Store: n.st, MetricCache: func() metriccache.MetricCache { return mc }, Metrics: m, NodeName: "n1",
		Interval: func() time.Duration { return time.Second }, Charges: charges,
		NMPodCgroup: func() (string, string, bool) { return nmPod, "yarn/nodemanager-0", true }})
	defer c.Close()

	pids := []int{os.Getpid(), os.Getppid()}
	n.set(exec, 5e9, 2<<20, 0, 100, 0)
	n.cpuOnly(exec, pids, nil, 600<<10, 0, 0)
	n.writeMemoryStat(nmPod, 400<<20)
	id, err := yarn.ParseContainerID(exec)
	require.NoError(t, err)
	own := cgroups.Ref{Dir: n.dir(exec), Owned: true}
	n.st.Resync(store.Observation{Scan: []cgroups.Container{{Name: exec, ID: id, Pids: pids,
		Cgroups: cgroups.Cgroups{cgroups.CPU: own, cgroups.CPUAcct: own, cgroups.Memory: own}}}, ScanOK: true}, time.Now())
	charges.Add(exec, 598<<20)

	collect := func(at time.Time) float64 {
		c.Collect(at)
		v, ok := lastValue(t, mc, metriccache.ContainerMemUsageMetric, metriccache.MetricPropertiesFunc.Container(exec), at.Add(-time.Millisecond), at.Add(time.Minute))
		require.True(t, ok)
		return v
	}
	t0 := time.Now()
	assert.Equal(t, float64(402<<20), collect(t0), "its charge and what the pod's cgroup holds")
	st, _ := c.LastMemoryAccounting()
	assert.Equal(t, ChargeSplit{UsageBytes: 402 << 20, ChargeBytes: 2 << 20, ElsewhereBytes: 400 << 20}, st.ChargedToNodeManager[exec])

	n.writeMemoryStat(nmPod, 512<<10)
	assert.Equal(t, float64(2<<20), collect(t0.Add(time.Second)))
	_, ok := charges.Get(exec)
	assert.False(t, ok, "settled: nothing can be left in a pod cgroup holding no more than the slack")
}
