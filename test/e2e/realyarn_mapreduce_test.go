package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// realYARNMapReduceEviction: a real engine's job under memory pressure.
// Hadoop's own SleepJob (MRAppMaster and task JVMs of the real
// MapReduce) runs three maps, each holding its touched heap; memory
// outside YARN then grows past the BE memory evict threshold by less than
// one map holds, and koordlet evicts one map task's container — not the
// MRAppMaster. The engine's own counts, from the job client's counters:
// the job succeeds, the evicted attempt is one failed map attempt (a kill
// from outside YARN counts against mapreduce.map.maxattempts), its task
// re-run, no map killed.
func realYARNMapReduceEviction(t *testing.T, nm yarnNM) {
	y := startRealYARNOn(t, nm, nodebox.Options{Layout: nodebox.LayoutCgroupfs}, true,
		func(*yarnpeer.Peer) []string { return []string{pressureGatesFor(nm)} })
	if nm.noCgroups() {
		waitAdopter(t, y.box)
	}
	// Each map holds more than 1% of this node (24 GiB: 241 MiB) and the
	// margin, so one covers the release whatever else grew meanwhile.
	const maps, heapMB = 3, 768
	job := runSleepJob(t, y, yarnpeer.SleepJob{Name: "sleep-evicted", Queue: "default", Maps: maps, MapMillis: int(taskHold().Milliseconds()),
		ContainerMB: 1024, HeapMB: heapMB})
	app, amID, mapIDs := mrRunning(t, y, job, maps, heapMB)
	say(t, "MapReduce %s: MRAppMaster %s, maps %v", app, amID, mapIDs)

	evicted, records := evictOnceUnderPressure(t, y)
	assert.Contains(t, mapIDs, evicted, "a map task's container is evicted")
	assert.NotEqual(t, amID, evicted, "the MRAppMaster is spared")
	assert.Equal(t, 1, records, "one map covers the need")

	wctx, cancel := context.WithTimeout(context.Background(), jvmWait(5*time.Minute))
	defer cancel()
	res, err := job.Wait(wctx)
	require.NoError(t, err)
	say(t, "MapReduce %s: succeeded %t in %s (%s); counters: launched maps %d, failed maps %d, killed maps %d",
		res.JobID, res.Succeeded, job.Ended.Sub(job.Started).Round(time.Second), ratio(job.Ended.Sub(job.Started), undisturbedMR),
		res.Counters["Launched map tasks"], res.Counters["Failed map tasks"], res.Counters["Killed map tasks"])
	assert.True(t, res.Succeeded, "the job survives the eviction")
	assert.Equal(t, int64(1), res.Counters["Failed map tasks"], "the evicted attempt: one failed map attempt")
	assert.Equal(t, int64(maps+1), res.Counters["Launched map tasks"], "its task re-run")
	assert.Zero(t, res.Counters["Killed map tasks"], "no attempt killed")
	assert.True(t, alive(y.peer.Pid), "the NodeManager survives")
}

// evictOnceUnderPressure puts the node under memory pressure from outside
// YARN: the BE memory evict threshold two percent above today's usage, the
// lower percent one below it, and an allocator outside YARN 100 MiB past
// the threshold, so that releasing down to the lower percent (about 1% +
// 100 MiB) needs one task's container of the engines' rows. Once koordlet
// evicted, the allocator is killed and the threshold put out of reach (on
// a shared machine memory outside this run keeps moving: a first run here
// evicted an executor every 10 s as another VM's memory grew, until Spark
// gave up on the task after 4 losses blamed on the application; the rows
// are about one eviction). It returns the evicted container and how many
// evictions koordlet recorded.
func evictOnceUnderPressure(t *testing.T, y *realYARN) (string, int) {
	t.Helper()
	total, used, err := nodebox.MemInfo()
	require.NoError(t, err)
	threshold := used*100/total + 2
	lower := threshold - 1
	ctx := context.Background()
	require.NoError(t, y.box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(lower)}
	}))
	time.Sleep(2 * time.Second) // koordlet sees the NodeSLO
	_, used, err = nodebox.MemInfo()
	require.NoError(t, err)
	allocMiB := (threshold*total/100-used)>>20 + 100
	say(t, "node memory %d MiB of %d used; BE memory evict threshold %d%%, lower %d%%; %d MiB allocated outside YARN",
		used>>20, total>>20, threshold, lower, allocMiB)
	alloc := kerneltest.StartPlain(t, kerneltest.HelperScript(fmt.Sprintf("alloc=%d", allocMiB)))

	var evicted string
	require.Eventually(t, func() bool {
		ev, err := y.box.Evictions()
		if err != nil || len(ev.Records) == 0 {
			return false
		}
		evicted = ev.Records[0].Container
		return ev.Records[0].Outcome != ""
	}, jvmWait(90*time.Second), 250*time.Millisecond, "koordlet evicts a container")
	_ = syscall.Kill(-alloc, syscall.SIGKILL) // the pressure is gone
	require.NoError(t, y.box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) {
		s.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true),
			MemoryEvictThresholdPercent: ptr.To[int64](95), MemoryEvictLowerPercent: ptr.To[int64](94)}
	}))
	ev, err := y.box.Evictions()
	require.NoError(t, err)
	for _, r := range ev.Records {
		say(t, "eviction: %s %s released %d MiB: %s", r.Container, r.Outcome, r.Released>>20, r.Why)
	}
	return evicted, len(ev.Records)
}

// runSleepJob starts job on y's cluster; the client is killed and, when
// t failed, its output logged at the end.
func runSleepJob(t *testing.T, y *realYARN, job yarnpeer.SleepJob) *yarnpeer.MRJob {
	t.Helper()
	j, err := y.peer.RunSleepJob(job)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("MapReduce job client output:\n%s", tailLines(j.Output(), 60))
		}
		j.Kill()
	})
	return j
}

// mrRunning waits until koordlet lists the job's MRAppMaster and its maps
// maps, each holding at least heapMB, and returns the application id and
// their container ids.
func mrRunning(t *testing.T, y *realYARN, job *yarnpeer.MRJob, maps int, heapMB float64) (app, amID string, mapIDs []string) {
	t.Helper()
	// The condition runs in a goroutine of its own, where a FailNow
	// would end that goroutine and leave Eventually waiting it out: the
	// job's end ends the wait, and is failed after it.
	ended := false
	require.Eventually(t, func() bool {
		select {
		case <-job.Done():
			ended = true
			return true
		default:
		}
		out := job.Output()
		i := strings.Index(out, "Running job: job_")
		if i < 0 {
			return false
		}
		app = "application_" + strings.Fields(out[i+len("Running job: job_"):])[0]
		var ok bool
		amID, mapIDs, ok = appHolding(t, y, app, maps, heapMB)
		return ok
	}, jvmWait(4*time.Minute), time.Second, "the MRAppMaster and %d maps running, each holding its %.0f MiB heap", maps, heapMB)
	require.False(t, ended, "the MapReduce job ended before its maps ran")
	return app, amID, mapIDs
}

// appHolding reports app's AM and its other containers as koordlet lists
// them, and whether there are tasks of them, each holding at least mb of
// memory by koordlet's metric.
func appHolding(t *testing.T, y *realYARN, app string, tasks int, mb float64) (amID string, ids []string, ok bool) {
	t.Helper()
	fams := scrape(t, y.box)
	for _, c := range mustContainers(t, y.box).Containers {
		if !strings.Contains(c.Name, strings.TrimPrefix(app, "application_")) {
			continue
		}
		if c.IsAM {
			amID = c.Name
			continue
		}
		v, found := value(fams, "koordlet_yarn_container_memory_usage_bytes", map[string]string{"container_id": c.Name})
		if !found || v < mb*(1<<20) {
			return amID, ids, false
		}
		ids = append(ids, c.Name)
	}
	return amID, ids, amID != "" && len(ids) == tasks
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// realYARNMapReducePreemption: the same job when the node's batch memory
// shrinks below what YARN holds, with YARNRMPreemption: koordlet pushes
// the smaller capacity to the real RM with an over-commit timeout, the RM
// preempts a map's container and the MRAppMaster hears PREEMPTED. The
// engine's own counts: the job succeeds, the preempted attempt is a killed
// map attempt (not counted against mapreduce.map.maxattempts), no map
// failed, and koordlet killed nothing itself.
func realYARNMapReducePreemption(t *testing.T, nm yarnNM) {
	y := startOverCommitBox(t, nm, true)
	const maps, heapMB = 3, 256
	job := runSleepJob(t, y, yarnpeer.SleepJob{Name: "sleep-preempted", Queue: "default", Maps: maps, MapMillis: int(taskHold().Milliseconds()),
		ContainerMB: 768, HeapMB: heapMB})
	app, amID, mapIDs := mrRunning(t, y, job, maps, heapMB)
	say(t, "MapReduce %s: MRAppMaster %s, maps %v", app, amID, mapIDs)

	// The batch memory shrinks to 4 GiB: the driver's 2 GiB leave YARN
	// 2048 MB, one map's 768 MB below the MRAppMaster's 512 and the maps'
	// 3 × 768.
	shrinkUntilReleased(t, y, "4Gi", mapIDs)
	ctx, cancel := context.WithTimeout(context.Background(), jvmWait(5*time.Minute))
	defer cancel()
	res, err := job.Wait(ctx)
	require.NoError(t, err)
	say(t, "MapReduce %s: succeeded %t in %s; counters: launched maps %d, failed maps %d, killed maps %d",
		res.JobID, res.Succeeded, job.Ended.Sub(job.Started).Round(time.Second),
		res.Counters["Launched map tasks"], res.Counters["Failed map tasks"], res.Counters["Killed map tasks"])
	assert.True(t, res.Succeeded, "the job survives the preemption")
	assert.Zero(t, res.Counters["Failed map tasks"], "a preempted attempt is not a failure")
	assert.Equal(t, int64(1), res.Counters["Killed map tasks"], "the preempted attempt: one killed map attempt")
	assert.Equal(t, int64(maps+1), res.Counters["Launched map tasks"], "its task re-run")
	m, err := y.box.Metrics()
	require.NoError(t, err)
	assert.NotContains(t, m, `reason="MemoryAllocatableEvict",result="succeeded"`, "koordlet killed nothing itself: the RM released in time")
	assert.True(t, alive(y.peer.Pid), "the NodeManager survives")
}
