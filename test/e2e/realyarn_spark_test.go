package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// The Spark job of these rows: three executors of one core, each in a
// container of 768 MiB heap and 256 MiB overhead (1024 MB; the driver's,
// in the AM container, 512 + 256), so the driver and the executors fill
// the NodeManager's 4096 MB but for 256; three tasks, one an executor,
// each holding 512 MiB of heap (more than 1% of this node, 241 MiB, and
// the eviction row's margin) and sleeping taskHold (40 s on the host).
// The tasks start once all three executors registered (Spark's default
// on YARN starts them at 80% or after 30 s: in the v2 guest, where the
// executors' JVMs register minutes apart, the first executor ran every
// task in turn and the others never held their memory).
func sparkRowJob(name string) yarnpeer.SparkJob {
	return yarnpeer.SparkJob{Name: name, Queue: "default", Partitions: 3, HoldMB: 512, Seconds: int(taskHold().Seconds()),
		Executors: 3, ExecutorMB: 768, DriverMB: 512, OverheadMB: 256,
		Extra: []string{"spark.scheduler.minRegisteredResourcesRatio=1.0",
			fmt.Sprintf("spark.scheduler.maxRegisteredResourcesWaitingTime=%ds", int(jvmWait(4*time.Minute).Seconds()))}}
}

// The undisturbed times of the rows' jobs (spark-undisturbed and
// mapreduce-undisturbed, run before the rows that disturb the same job),
// for the disturbed rows' ratio; zero when not run.
// undisturbedSparkJob is Spark's own job time (the event log's job
// start to end) of spark-undisturbed.
var undisturbedSpark, undisturbedSparkJob, undisturbedMR time.Duration

// realYARNSparkUndisturbed: the rows' Spark job with nothing disturbing
// it, on the same box as spark-eviction (koordlet with the eviction
// gates, no threshold crossed): its time is the other rows' baseline.
func realYARNSparkUndisturbed(t *testing.T, nm yarnNM) {
	y := startRealYARNOn(t, nm, nodebox.Options{Layout: nodebox.LayoutCgroupfs}, true, func(*yarnpeer.Peer) []string { return []string{pressureGates} })
	job := sparkRowJob("spark-undisturbed")
	run := runSparkJob(t, y, job)
	res := waitSpark(t, y, run)
	undisturbedSpark, undisturbedSparkJob = res.Elapsed, res.Events.JobTime
	assert.Equal(t, "SUCCEEDED", res.FinalStatus, "the RM's final status")
	assert.True(t, res.Events.Succeeded(), "Spark's job result")
	assert.Empty(t, res.Events.Removed, "no executor lost")
	assert.Empty(t, res.Events.Failures, "no task failed")
	assert.Equal(t, job.Partitions, res.Events.Tasks, "each task once")
}

// realYARNSparkEviction: a real Spark job under memory pressure. The
// driver runs in the AM container (cluster mode), three executors each
// hold their task's heap; memory outside YARN then grows past the BE
// memory evict threshold by less than one executor holds, and koordlet
// evicts one executor's container — not the driver's. What Spark's event
// log says: the job succeeds, the one executor is removed (its container
// exited 143 on koordlet's signal: "Container from a bad node", Spark
// blames the application, exitCausedByApp, so the loss counts against
// spark.task.maxFailures, 4, and spark.executor.maxNumFailures, left at
// max(2 × 3, 3) = 6), its task re-runs.
func realYARNSparkEviction(t *testing.T, nm yarnNM) {
	y := startRealYARNOn(t, nm, nodebox.Options{Layout: nodebox.LayoutCgroupfs}, true,
		func(*yarnpeer.Peer) []string { return []string{pressureGatesFor(nm)} })
	if nm.noCgroups() {
		waitAdopter(t, y.box)
	}
	job := sparkRowJob("spark-evicted")
	run := runSparkJob(t, y, job)
	app, amID, execIDs := sparkRunning(t, y, run, job.Executors, float64(job.HoldMB))
	say(t, "Spark %s: driver (AM) %s, executors %v", app, amID, execIDs)

	evicted, records := evictOnceUnderPressure(t, y)
	assert.Contains(t, execIDs, evicted, "an executor's container is evicted")
	assert.NotEqual(t, amID, evicted, "the driver (AM) is spared")
	assert.Equal(t, 1, records, "one executor covers the need")

	res := waitSpark(t, y, run)
	assert.Equal(t, "SUCCEEDED", res.FinalStatus, "the job survives the eviction (the RM's final status)")
	assert.True(t, res.Events.Succeeded(), "the job survives the eviction (Spark's job result)")
	if assert.Len(t, res.Events.Removed, 1, "one executor lost") {
		assert.Equal(t, evicted, res.Events.Removed[0].Container, "the evicted container's executor")
	}
	byApp, notByApp := res.Events.ExecutorLost()
	assert.Equal(t, 1, byApp, "its task's loss, blamed on the application (a kill from outside YARN)")
	assert.Zero(t, notByApp)
	assert.Len(t, res.Events.Failures, 1, "no other task failure")
	assert.Equal(t, job.Partitions+1, res.Events.Tasks, "its task re-run")
	assert.True(t, alive(y.peer.Pid), "the NodeManager survives")
}

// realYARNSparkPreemption: the same job when the node's batch memory
// shrinks below what YARN holds, with YARNRMPreemption (as
// realYARNMapReducePreemption): koordlet pushes the smaller capacity to
// the real RM with an over-commit timeout and the RM preempts an
// executor's container. What Spark's event log says: the job succeeds,
// the executor is removed as preempted and its task's loss is not blamed
// on the application (not counted against spark.task.maxFailures), and
// koordlet killed nothing itself.
func realYARNSparkPreemption(t *testing.T, nm yarnNM) {
	y := startOverCommitBox(t, nm, true)
	job := sparkRowJob("spark-preempted")
	run := runSparkJob(t, y, job)
	app, amID, execIDs := sparkRunning(t, y, run, job.Executors, float64(job.HoldMB))
	say(t, "Spark %s: driver (AM) %s, executors %v", app, amID, execIDs)

	// The batch memory shrinks to 5 GiB: the batch pod's 2 GiB leave YARN
	// 3072 MB, one executor's 1024 MB below the driver's 768 and the
	// executors' 3 × 1024.
	gone := shrinkUntilReleased(t, y, "5Gi", execIDs)

	res := waitSpark(t, y, run)
	assert.Equal(t, "SUCCEEDED", res.FinalStatus, "the job survives the preemption (the RM's final status)")
	assert.True(t, res.Events.Succeeded(), "the job survives the preemption (Spark's job result)")
	if assert.Len(t, res.Events.Removed, 1, "one executor lost") {
		assert.Equal(t, gone, res.Events.Removed[0].Container, "the released container's executor")
		assert.Contains(t, res.Events.Removed[0].Reason, "preempted", "Spark's reason")
	}
	byApp, notByApp := res.Events.ExecutorLost()
	assert.Zero(t, byApp, "a preempted executor is not the application's fault")
	assert.Equal(t, 1, notByApp, "its task's loss, not blamed on the application")
	assert.Len(t, res.Events.Failures, 1, "no other task failure")
	assert.Equal(t, job.Partitions+1, res.Events.Tasks, "its task re-run")
	m, err := y.box.Metrics()
	require.NoError(t, err)
	assert.NotContains(t, m, `reason="MemoryAllocatableEvict",result="succeeded"`, "koordlet killed nothing itself: the RM released in time")
	assert.True(t, alive(y.peer.Pid), "the NodeManager survives")
}

// realYARNMapReduceUndisturbed: mapreduce-eviction's job with nothing
// disturbing it, on the same box: its time is that row's baseline.
func realYARNMapReduceUndisturbed(t *testing.T, nm yarnNM) {
	y := startRealYARNOn(t, nm, nodebox.Options{Layout: nodebox.LayoutCgroupfs}, true, func(*yarnpeer.Peer) []string { return []string{pressureGates} })
	const maps = 3
	job := runSleepJob(t, y, yarnpeer.SleepJob{Name: "sleep-undisturbed", Queue: "default", Maps: maps, MapMillis: int(taskHold().Milliseconds()),
		ContainerMB: 1024, HeapMB: 768})
	ctx, cancel := context.WithTimeout(context.Background(), jvmWait(5*time.Minute))
	defer cancel()
	res, err := job.Wait(ctx)
	require.NoError(t, err)
	undisturbedMR = job.Ended.Sub(job.Started)
	say(t, "MapReduce %s undisturbed: succeeded %t in %s; counters: launched maps %d, failed maps %d, killed maps %d",
		res.JobID, res.Succeeded, undisturbedMR.Round(time.Second),
		res.Counters["Launched map tasks"], res.Counters["Failed map tasks"], res.Counters["Killed map tasks"])
	assert.True(t, res.Succeeded)
	assert.Equal(t, int64(maps), res.Counters["Launched map tasks"], "each map once")
	assert.Zero(t, res.Counters["Failed map tasks"])
	assert.Zero(t, res.Counters["Killed map tasks"])
}

// ratio says d against the undisturbed time base, when that row ran.
func ratio(d, base time.Duration) string {
	if base == 0 {
		return "no undisturbed run to compare"
	}
	return fmt.Sprintf("%.2f× the undisturbed %s", float64(d)/float64(base), base.Round(time.Second))
}

// runSparkJob submits job on y's cluster; the client is killed, the
// application too, and when t failed the client's output is logged at
// the end.
func runSparkJob(t *testing.T, y *realYARN, job yarnpeer.SparkJob) *yarnpeer.SparkRun {
	t.Helper()
	r, err := y.peer.RunSparkJob(job)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("spark-submit output:\n%s", tailLines(r.Output(), 60))
		}
		r.Kill()
		if id := r.AppID(); id != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = y.peer.Do(ctx, "kill "+id)
		}
	})
	return r
}

// waitSpark waits for the application's end and says what the RM and
// Spark's event log report.
func waitSpark(t *testing.T, y *realYARN, run *yarnpeer.SparkRun) yarnpeer.SparkResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jvmWait(6*time.Minute))
	defer cancel()
	res, err := run.Wait(ctx)
	require.NoError(t, err)
	if keep := os.Getenv("KOORDLET_YARN_KEEP_SPARK_EVENTS"); keep != "" {
		_ = exec.Command("cp", res.EventLog, filepath.Join(keep, t.Name()[strings.LastIndex(t.Name(), "/")+1:]+".events")).Run()
	}
	e := res.Events
	byApp, notByApp := e.ExecutorLost()
	say(t, "Spark %s: RM %s %s; spark-submit %s (exit %v; %s), Spark's job time %s (%s); jobs %v; executors added %d, removed %d; task ends %d, failed %d (executor lost: %d blamed on the app, %d not)",
		res.AppID, res.State, res.FinalStatus, res.Elapsed.Round(time.Second), res.ClientExit, ratio(res.Elapsed, undisturbedSpark),
		e.JobTime.Round(time.Second), ratio(e.JobTime, undisturbedSparkJob), e.Jobs, len(e.Added), len(e.Removed), e.Tasks, len(e.Failures), byApp, notByApp)
	for _, x := range e.Removed {
		say(t, "Spark: executor %s (%s) removed: %s", x.ID, x.Container, x.Reason)
	}
	for _, f := range e.Failures {
		caused := "-"
		if f.ExitCausedByApp != nil {
			caused = fmt.Sprint(*f.ExitCausedByApp)
		}
		say(t, "Spark: task %d attempt %d on executor %s: %s, exit caused by app %s: %s", f.Index, f.Attempt, f.Executor, f.Reason, caused, f.LossReason)
	}
	return res
}

// sparkRunning waits until koordlet lists the application's driver (AM)
// container and its executors executors, each holding at least holdMB,
// and returns the application id and their container ids.
func sparkRunning(t *testing.T, y *realYARN, run *yarnpeer.SparkRun, executors int, holdMB float64) (app, amID string, execIDs []string) {
	t.Helper()
	ended := false // (see mrRunning)
	require.Eventually(t, func() bool {
		select {
		case <-run.Done():
			ended = true
			return true
		default:
		}
		if app = run.AppID(); app == "" {
			return false
		}
		var ok bool
		amID, execIDs, ok = appHolding(t, y, app, executors, holdMB)
		return ok
	}, jvmWait(4*time.Minute), time.Second, "the driver and %d executors running, each holding its %.0f MiB", executors, holdMB)
	require.False(t, ended, "the Spark application ended before its executors ran")
	return app, amID, execIDs
}
