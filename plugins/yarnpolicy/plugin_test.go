package yarnpolicy

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/policy"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

const twoQueues = `
tiers:
  transcode: {evictBeforePods: true}
rules:
- {name: transcode-first, match: {queue: root.transcode}, priority: 5100, tier: transcode}
- {name: spark-protected, match: {applicationTypes: [SPARK]}, priority: 5900}
`

func container(app, seq int64) cgroups.Container {
	id := yarn.ContainerID{ClusterTimestamp: 1700000000000, AppID: app, AttemptID: 1, Sequence: seq}
	return cgroups.Container{Name: id.String(), ID: id, Pids: []int{1},
		Cgroups: cgroups.Cgroups{cgroups.CPU: {Dir: "hadoop-yarn/" + id.String(), Owned: true}}}
}

// TestPluginResolvesFromTheRMAndReloads: two applications in two queues get
// their rules once the RM's data came (their QoS re-applied then); the
// series show queue, rule, tier and effective priority; a policy edit
// changes them without a restart; a container gone loses its series.
func TestPluginResolvesFromTheRMAndReloads(t *testing.T) {
	rm, err := rmemu.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	transcode, spark := container(1, 2), container(2, 2)
	rm.AddApp(rmemu.App{ID: transcode.ID.ApplicationID(), Queue: "root.transcode", ApplicationType: "MAPREDUCE", User: "u"})
	rm.AddApp(rmemu.App{ID: spark.ID.ApplicationID(), Queue: "root.etl", ApplicationType: "SPARK", User: "u"})
	client, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}})
	require.NoError(t, err)

	file := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte(twoQueues), 0o644))
	st := store.New()
	st.Resync(store.Observation{ScanOK: true, Scan: []cgroups.Container{transcode, spark}}, time.Now())
	res := policy.NewResolver(nil, nil)
	var mu sync.Mutex
	reapplied := map[string]int{}
	reg := prometheus.NewRegistry()
	p, err := New(Options{Store: st, Resolver: res, File: func() string { return file }, RM: func() *yarn.RMClient { return client },
		RMTimeout: func() time.Duration { return time.Second }, NMPriority: func() int64 { return 5500 }, Interval: time.Hour,
		Registerer: reg, NodeName: "n1", Reapply: func(cs []*store.Container) {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range cs {
				reapplied[c.Name]++
			}
		}})
	require.NoError(t, err)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	p.Run(stop)

	prio := func(name string) int64 {
		c, _ := st.Get(name)
		return policy.EffectivePriority(res.For(c).Effective, "", 5500)
	}
	require.Eventually(t, func() bool { return prio(transcode.Name) == 5100 && prio(spark.Name) == 5900 }, 5*time.Second, 20*time.Millisecond)
	mu.Lock()
	assert.GreaterOrEqual(t, reapplied[transcode.Name], 2, "at start and when its application's data came")
	mu.Unlock()

	p.Export()
	assert.Equal(t, 5100.0, testutil.ToFloat64(p.prio.WithLabelValues("n1", transcode.Name, transcode.ID.ApplicationID(), "root.transcode", "transcode-first", "transcode")))
	assert.Equal(t, 5900.0, testutil.ToFloat64(p.prio.WithLabelValues("n1", spark.Name, spark.ID.ApplicationID(), "root.etl", "spark-protected", "")))

	// A reload turns the order around.
	require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(twoQueues, "priority: 5100", "priority: 5950")), 0o644))
	require.Eventually(t, func() bool { return prio(transcode.Name) == 5950 }, 5*time.Second, 20*time.Millisecond)
	p.Export()
	assert.Equal(t, 5950.0, testutil.ToFloat64(p.prio.WithLabelValues("n1", transcode.Name, transcode.ID.ApplicationID(), "root.transcode", "transcode-first", "transcode")))

	st.Resync(store.Observation{ScanOK: true, Scan: []cgroups.Container{spark}}, time.Now())
	p.Export()
	assert.Equal(t, 1, testutil.CollectAndCount(p.prio), "the gone container's series is removed")
	assert.Equal(t, 1, p.Apps().Len(), "its application is dropped from the cache")

	// --yarn-container-metrics other than container: no per-container
	// series; the application cache is kept as before.
	p.opts.PerContainerSeries = func() bool { return false }
	p.Export()
	assert.Equal(t, 0, testutil.CollectAndCount(p.prio), "no per-container series")
	assert.Equal(t, 1, p.Apps().Len())

	d := Describe(res, st.Snapshot(), 5500)
	assert.Equal(t, ContainerQoS{Queue: "root.etl", ApplicationType: "SPARK", AppKnown: true, Rule: "spark-protected", EffectivePriority: 5900}, d[spark.Name])
}

// TestPluginWithoutRM: rules on NodeManager data still match; application
// rules do not, and nothing waits.
func TestPluginWithoutRM(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte(twoQueues+"- {name: oppo, match: {executionTypes: [OPPORTUNISTIC]}, priority: 5000}\n"), 0o644))
	st := store.New()
	c := container(1, 2)
	st.Resync(store.Observation{ScanOK: true, Scan: []cgroups.Container{c}, NMOK: true,
		NM: []yarn.NMContainer{{ID: c.ID, State: "RUNNING", ExecutionType: "OPPORTUNISTIC"}}}, time.Now())
	res := policy.NewResolver(nil, nil)
	p, err := New(Options{Store: st, Resolver: res, File: func() string { return file }, RM: func() *yarn.RMClient { return nil },
		RMTimeout: func() time.Duration { return time.Second }, NMPriority: func() int64 { return 5500 }, Interval: time.Hour})
	require.NoError(t, err)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	p.Run(stop)
	got, _ := st.Get(c.Name)
	assert.Equal(t, "oppo", res.For(got).Rule)
}
