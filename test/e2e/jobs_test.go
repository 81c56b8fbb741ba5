package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/jobrun"
	"github.com/koordlet-yarn/koordlet-yarn/test/jobs"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// TestJobsSmoke runs make measure-jobs' harness on a short day: three
// phases of LS load on the node in a box with the real YARN, koord-manager
// and koordlet (the plugin set, eviction by kill), one small Spark job. It
// checks that the harness works and its numbers are sane; the measurement
// itself is make measure-jobs.
func TestJobsSmoke(t *testing.T) {
	if skipReason != "" {
		kerneltest.Skip(t, "node-level e2e: "+skipReason)
	}
	top := repoTop()
	if err := yarnpeer.Built(top, yarnpeer.Hadoop35); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	server, err := sharedAPIServer()
	require.NoError(t, err)
	d := jobs.Day{Phases: 3, Length: 20 * time.Second, Night: 0.15, Peak: 0.5, Noise: 0.1, Seed: 1}
	phases, err := d.Trace()
	require.NoError(t, err)
	job := jobs.Job{Name: "short-01", Kind: jobs.Short, At: time.Second, Executors: 1, Tasks: 2, TaskTime: 5 * time.Second, HoldMB: 64}
	out := t.TempDir()
	var log strings.Builder
	r := jobrun.Runner{Top: top, Out: out, Budget: 4 << 30, Overcommit: 2, Phases: phases, Stream: []jobs.Job{job},
		Drain: 3 * time.Minute, Log: &log, APIServer: server, SLOTarget: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := r.All(ctx, []jobs.Config{jobs.PluginKill}, 1)
	t.Logf("the day's log:\n%s", log.String())
	require.NoError(t, err)
	o := res[jobs.PluginKill][0]

	require.Len(t, o.PhaseP99, len(phases))
	for i, p := range o.PhaseP99 {
		assert.Greater(t, p, time.Duration(0), "phase %d: LS answered", i)
		assert.Less(t, p, time.Second, "phase %d: LS p99 sane", i)
	}
	assert.Equal(t, 1, o.Jobs)
	assert.Zero(t, o.FailedJobs, "the job succeeded")
	assert.Zero(t, o.Unfinished, "the job ended within the drain")
	assert.Contains(t, o.JobTimes, job.Name)
	assert.GreaterOrEqual(t, o.Launched, 2, "the AM and an executor launched (the container-executor's calls)")
	assert.Zero(t, o.Evicted(), "one small job under the memory budget: nothing to relieve")
	assert.Greater(t, o.BatchCPU, time.Duration(0), "YARN did CPU work")
	assert.Greater(t, o.Utilisation, 0.0)
	assert.LessOrEqual(t, o.Utilisation, 1.0)
	assert.Greater(t, o.Koordlet, time.Duration(0), "koordlet's own CPU measured")
	assert.Equal(t, 50*time.Millisecond, o.SLOTarget, "the LS pod declared the SLO (koordlet-yarn.io/latency-slo)")
	assert.Len(t, o.Windows, len(phases), "one whole 5 s SLO window in each phase of 6.7 s")

	svg, err := os.ReadFile(filepath.Join(out, jobrun.DayName(jobs.PluginKill, 1)+".svg"))
	require.NoError(t, err, "the timeline")
	assert.Contains(t, string(svg), "<svg")
	_, err = os.Stat(filepath.Join(out, jobrun.DayName(jobs.PluginKill, 1)+".json"))
	assert.NoError(t, err, "the outcome")
	assert.Contains(t, log.String(), "YARN capacity", "each phase logs the RM's capacity")
	assert.NotContains(t, log.String(), "YARN capacity unknown", "the RM's capacity is read each phase")
}
