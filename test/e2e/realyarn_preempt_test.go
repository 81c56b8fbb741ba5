package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnledger"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// preemptedExit is YARN's ContainerExitStatus.PREEMPTED: the exit status an
// AM sees for a container the scheduler preempted (MapReduce and Spark do
// not count it against the job).
const preemptedExit = "-102"

// realYARNOverCommit: the node's batch memory shrinks (koord-manager lowers
// the origin batch allocatable) below what the Kubernetes pods and YARN
// hold together, so one executor of the real YARN must go. With
// YARNRMPreemption koordlet pushes the smaller capacity to the real
// ResourceManager with an over-commit timeout, the RM preempts an executor
// and the AM sees PREEMPTED; without it koordlet's allocatable evict kills
// one itself and the AM sees a failed container (143/137). Either way the
// AM, the other executor and the NodeManager live on and the node is back
// within its batch capacity. The time from the shrink to the AM hearing of
// the release is logged (make measure-rm-preemption repeats it). The AM
// asks for the executor again; the capacity keeps it off the node.
func realYARNOverCommit(t *testing.T, nm yarnNM, preempt bool) {
	y := startOverCommitBox(t, nm, preempt)
	ctx := context.Background()
	app, err := y.peer.Submit(ctx, yarnpeer.App{Name: "etl", Queue: "default", Type: "SPARK", User: "spark",
		Containers: []yarnpeer.Container{{MB: 1024, Vcores: 1, Command: "exec sleep 3600", Replace: true},
			{MB: 1024, Vcores: 1, Command: "exec sleep 3600", Replace: true}}})
	require.NoError(t, err)
	executors := launchedBy(t, app, 2)
	st, err := y.peer.Do(ctx, "app "+app.ID)
	require.NoError(t, err)
	am := strings.Fields(st)[3]
	// The AM's 256 MB and the executors' 2 × 1024 MB.
	waitEntry(t, y.box, yarnledger.Batch{MilliCPU: 3000, MemoryBytes: 2304 << 20}, 60*time.Second, "the ledger entry is the real NM's allocations")
	nothingWithinCapacity(t, y, app, executors)

	// The batch memory shrinks to 4 GiB: the driver's 2 GiB leave YARN
	// 2048 MB, 256 MB below its 2304.
	start := time.Now()
	setNodeAnnotations(t, y.box, map[string]string{
		slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey: originValue(t, 16000, "4Gi"),
	})
	var (
		victim string
		done   yarnpeer.Event
	)
	require.Eventually(t, func() bool {
		for _, id := range executors {
			if e, ok := completion(app, id); ok {
				victim, done = id, e
				return true
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "an executor is released")
	released := time.Since(start)
	f := strings.Fields(done.Rest)
	require.GreaterOrEqual(t, len(f), 2, done.Rest)
	preemptionMessage := false
	for _, e := range app.Events() {
		if e.Kind == "preemption-message" {
			preemptionMessage = true
		}
	}
	how := "killed by koordlet"
	if f[1] == preemptedExit {
		how = "preempted by the ResourceManager"
	}
	say(t, "YARNRMPreemption=%t: shrink → the AM hears of %s in %v: exit %s (%s), a preemption message first: %t; the AM's report: %s",
		preempt, victim, released.Round(10*time.Millisecond), f[1], how, preemptionMessage, done.Rest)
	if preempt {
		assert.Equal(t, preemptedExit, f[1], "the RM preempted it: PREEMPTED, not a failure")
		assert.True(t, preemptionMessage, "the AM was asked to give a container back before the timeout")
	} else {
		assert.Contains(t, []string{"143", "137"}, f[1], "killed from outside YARN: a failed container")
	}

	// One executor is enough: the AM and the other run on, the node is
	// within its batch capacity.
	l, err := y.box.Ledger()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		l, err = y.box.Ledger()
		return err == nil && l.OverCommit == (yarnledger.Batch{})
	}, 30*time.Second, 200*time.Millisecond, "the node is back within its batch capacity")
	// The AM asks for the lost executor again (as MapReduce and Spark do
	// for a preempted or a failed task; only the failure counts against
	// the job), and the RM does not place it here: the node's capacity
	// has no room for it. Asserted on events, not after a sleep: the AM
	// asked, the RM holds the ask, and the scheduler ran on the node (its
	// only one) twice after that without placing it.
	require.Eventually(t, func() bool {
		for _, e := range app.Events() {
			if e.Kind == "replacement" && e.Container == victim {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the AM asks for a replacement of %s", victim)
	require.Eventually(t, func() bool { return rmOutstanding(t, y.peer.RMWeb, app.ID) > 0 },
		30*time.Second, 100*time.Millisecond, "the RM holds the AM's ask for a replacement")
	for i := range 2 {
		run := rmSchedulerLastRun(t, y.peer.RMWeb)
		require.Eventually(t, func() bool { return rmSchedulerLastRun(t, y.peer.RMWeb) > run },
			30*time.Second, 100*time.Millisecond, "scheduler run %d on the node after the ask", i+1)
	}
	launched := 0
	for _, e := range app.Events() {
		if e.Kind == "launched" {
			launched++
		}
	}
	assert.Equal(t, 2, launched, "no replacement lands on the node while YARN is at its capacity")
	assert.Positive(t, rmOutstanding(t, y.peer.RMWeb, app.ID), "the replacement is still asked for, not placed")
	resp := mustContainers(t, y.box)
	for _, id := range append([]string{am}, executors...) {
		if id == victim {
			continue
		}
		_, gone := completion(app, id)
		assert.False(t, gone, "%s lives on", id)
		if c := find(resp, id); assert.NotNil(t, c, "%s still listed", id) {
			assert.Equal(t, "RUNNING", c.State, "%s survives", id)
		}
	}
	assert.True(t, alive(y.peer.Pid), "the NodeManager (the peer's JVM) survives")
	m, err := y.box.Metrics()
	require.NoError(t, err)
	kills := strings.Contains(m, `koordlet_yarn_container_evictions_total{node="`+nodebox.NodeName+`",reason="MemoryAllocatableEvict",result="succeeded"}`)
	if preempt {
		assert.False(t, kills, "koordlet killed nothing itself: the RM released in time")
		// At least one push with the timeout: a capacity that moves during
		// the over-commit is pushed again with the time left (issue 31).
		n, _ := value(scrape(t, y.box), "koordlet_yarn_rm_node_resource_updates_total", map[string]string{"result": "preempt"})
		assert.GreaterOrEqual(t, n, 1.0, "the RM was asked to preempt")
		// The grace after the timeout comes from the real RM's /conf: the
		// peer's 500 ms node heartbeat (issue 31, item 11).
		if lr, err := y.box.Ledger(); assert.NoError(t, err) {
			assert.Equal(t, 500*time.Millisecond, lr.RM.RMHeartbeat, "the real RM's heartbeat interval read from its /conf")
			say(t, "the real RM's node heartbeat %v: preemption grace %v", lr.RM.RMHeartbeat, lr.RM.PreemptionGrace)
		}
	} else {
		assert.True(t, kills, "koordlet's allocatable evict released it")
	}
	require.NoError(t, app.Finish())
}

// nothingWithinCapacity: while YARN fits its batch capacity koordlet acts
// on none of its containers. Asserted on what koordlet decided, not after a
// sleep: the ledger sees YARN within the origin, the real RM holds the
// capacity koordlet pushed with no over-commit timeout (so it preempts
// nothing), and koordlet's memory evict slot, which runs the allocatable
// trigger, has run three whole checks since, none of which killed a
// container or asked the RM to preempt. A kill is counted before its check
// returns, and a preempting push when it is made, so a wrong decision in
// the window fails here, however long the AM would take to hear of it.
func nothingWithinCapacity(t *testing.T, y *realYARN, app yarnpeer.Submitted, executors []string) {
	t.Helper()
	ctx := context.Background()
	var lr koordletyarn.LedgerResponse
	require.Eventually(t, func() bool {
		var err error
		lr, err = y.box.Ledger()
		return err == nil && lr.OriginKnown && lr.RM.Pushed != nil && *lr.RM.Pushed == yarnledger.Capacity(lr.YARNCapacity)
	}, 30*time.Second, 100*time.Millisecond, "koordlet pushed YARN's capacity to the real RM")
	require.Equal(t, yarnledger.Batch{}, lr.OverCommit, "YARN fits its capacity: %+v", lr.View)
	assert.Nil(t, lr.RM.PushedTimeout, "pushed without an over-commit timeout")
	var node string
	require.Eventually(t, func() bool {
		out, err := y.peer.Do(ctx, "node")
		node = out
		f := strings.Fields(out)
		return err == nil && len(f) >= 3 && f[1] == strconv.FormatInt(lr.RM.Pushed.MemoryMB, 10) && f[2] == strconv.FormatInt(lr.RM.Pushed.VCores, 10)
	}, 30*time.Second, 250*time.Millisecond, "the real RM holds the pushed %+v", *lr.RM.Pushed)
	say(t, "YARN within its capacity: %d MB allocated of %d MB; the real RM's node: %s",
		lr.YARNAllocated.MemoryBytes>>20, lr.YARNCapacity.MemoryBytes>>20, node)

	afterMemoryEvictChecks(t, y.box, 3, 30*time.Second)
	fams := scrape(t, y.box)
	evicted, _ := total(fams, "koordlet_yarn_container_evictions_total", map[string]string{"node": nodebox.NodeName})
	assert.Zero(t, evicted, "koordlet evicts nothing while YARN fits its capacity")
	preempts, _ := total(fams, "koordlet_yarn_rm_node_resource_updates_total", map[string]string{"node": nodebox.NodeName, "result": "preempt"})
	assert.Zero(t, preempts, "koordlet asks the RM to preempt nothing while YARN fits its capacity")
	if ev, err := y.box.Evictions(); assert.NoError(t, err) {
		assert.Zero(t, ev.Total, "no eviction in koordlet's audit: %+v", ev.Records)
	}
	pod, err := y.box.Kube.CoreV1().Pods("default").Get(ctx, "spark-driver", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, pod.DeletionTimestamp, "the batch pod is not evicted either")
	for _, id := range executors {
		_, done := completion(app, id)
		require.False(t, done, "%s runs while YARN fits its capacity", id)
	}
}

// rmGetJSON decodes GET path of the real RM's REST API at web (host:port).
func rmGetJSON(t *testing.T, web, path string, v any) {
	t.Helper()
	resp, err := http.Get("http://" + web + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v), path)
}

// rmOutstanding is the number of containers application id still asks for
// at the RM (its off-switch "*" resource requests).
func rmOutstanding(t *testing.T, web, id string) int {
	var doc struct {
		App struct {
			ResourceRequests []struct {
				ResourceName  string `json:"resourceName"`
				NumContainers int    `json:"numContainers"`
			} `json:"resourceRequests"`
		} `json:"app"`
	}
	rmGetJSON(t, web, "/ws/v1/cluster/apps/"+id, &doc)
	n := 0
	for _, r := range doc.App.ResourceRequests {
		if r.ResourceName == "*" {
			n += r.NumContainers
		}
	}
	return n
}

// rmSchedulerLastRun is when the CapacityScheduler last ran on a node's
// heartbeat (its health's lastrun, ms).
func rmSchedulerLastRun(t *testing.T, web string) int64 {
	var doc struct {
		Scheduler struct {
			SchedulerInfo struct {
				Health struct {
					LastRun int64 `json:"lastrun"`
				} `json:"health"`
			} `json:"schedulerInfo"`
		} `json:"scheduler"`
	}
	rmGetJSON(t, web, "/ws/v1/cluster/scheduler", &doc)
	return doc.Scheduler.SchedulerInfo.Health.LastRun
}

// startOverCommitBox starts the real YARN against nm for an over-commit:
// a batch pod of 2 cores and 2 GiB beside it, the ledger and the RM sync
// (and YARNRMPreemption with preempt) with short intervals, the allocatable
// evict releasing down to the origin as soon as the requests are above it
// (the over-commit, no more), and the node's batch capacity 16 cores and
// 8 GiB.
func startOverCommitBox(t *testing.T, nm yarnNM, preempt bool) *realYARN {
	t.Helper()
	gates := "YARNBatchLedger=true,YARNRMNodeResourceSync=true,YARNAllocatableEvict=true,MemoryAllocatableEvict=true"
	if preempt {
		gates += ",YARNRMPreemption=true"
	}
	y := startRealYARNOn(t, nm, nodebox.Options{Layout: nodebox.LayoutCgroupfs,
		Pods: []nodebox.PodSpec{batchPod("spark-driver", 2000, "2Gi")},
		NodeSLO: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable:                                 ptr.To(true),
			MemoryAllocatableEvictThresholdPercent: ptr.To[int64](101),
			MemoryAllocatableEvictLowerPercent:     ptr.To[int64](100),
			AllocatableEvictPriorityThreshold:      ptr.To[int32](apiext.PriorityBatchValueMax),
		}}}, true,
		func(p *yarnpeer.Peer) []string {
			return []string{"--feature-gates=" + gates,
				"--yarn-ledger-patch-interval=300ms", "--yarn-ledger-max-age=300ms", "--yarn-rm-sync-interval=500ms",
				"--yarn-rm-endpoints=http://" + p.RMWeb, "--yarn-rm-user=yarn", "--yarn-rm-timeout=2s",
				// The grace after the timeout for the RM's preemption to
				// show: the default on the host; in the v2 guest the RM's
				// and the NM's JVMs under the emulated CPU take longer.
				"--yarn-rm-preemption-timeout=3s", "--yarn-rm-preemption-grace=" + jvmWait(5*time.Second).String()}
		})
	setNodeAnnotations(t, y.box, map[string]string{
		slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey: originValue(t, 16000, "8Gi"),
	})
	return y
}

// shrinkUntilReleased sets the node's batch memory (Koordinator's origin
// extended allocatable, 16 cores) to memory and waits until one of the
// containers ids is no longer running at the NM: the release (with
// YARNRMPreemption, the RM's preemption). It logs how long after the
// shrink and returns the released container.
func shrinkUntilReleased(t *testing.T, y *realYARN, memory string, ids []string) string {
	t.Helper()
	start := time.Now()
	setNodeAnnotations(t, y.box, map[string]string{
		slov1alpha1.NodeOriginExtendedAllocatableAnnotationKey: originValue(t, 16000, memory),
	})
	var gone string
	require.Eventually(t, func() bool {
		listed := map[string]bool{}
		for _, c := range mustContainers(t, y.box).Containers {
			listed[c.Name] = c.State == "RUNNING"
		}
		for _, id := range ids {
			if !listed[id] {
				gone = id
				return true
			}
		}
		return false
	}, jvmWait(90*time.Second), 250*time.Millisecond, "a container is released after the batch memory shrank to %s", memory)
	say(t, "YARNRMPreemption: %s released %v after the shrink", gone, time.Since(start).Round(10*time.Millisecond))
	return gone
}
