package yarnpeer

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

func TestParseSparkEvents(t *testing.T) {
	for _, tc := range []struct {
		name, file    string
		succeeded     bool
		jobTime       time.Duration
		tasks         int
		added         []SparkExecutor
		removed       []SparkExecutor
		failures      []SparkTaskFailure
		byApp, notApp int
	}{{
		name: "an executor killed from outside YARN (exit 137): blamed on the app, its task re-run",
		file: "testdata/spark-evicted.events", succeeded: true, jobTime: 65 * time.Second, tasks: 3,
		added: []SparkExecutor{{ID: "1", Container: "container_1_0001_01_000002"}, {ID: "2", Container: "container_1_0001_01_000003"},
			{ID: "3", Container: "container_1_0001_01_000004"}},
		removed: []SparkExecutor{{ID: "2", Container: "container_1_0001_01_000003",
			Reason: "Container marked as failed: container_1_0001_01_000003 on host: 127.0.0.1. Exit status: 137. Diagnostics: [2026-11-27 10:30:00.000]Container killed on request. Exit code is 137"}},
		failures: []SparkTaskFailure{{Index: 1, Executor: "2", Reason: "ExecutorLostFailure", ExitCausedByApp: ptr.To(true),
			LossReason: "Container marked as failed: container_1_0001_01_000003 on host: 127.0.0.1. Exit status: 137."}},
		byApp: 1,
	}, {
		name: "a preempted executor: not the app's fault; a failed job",
		file: "testdata/spark-preempted.events", jobTime: 6 * time.Second, tasks: 1,
		added:   []SparkExecutor{{ID: "1", Container: "container_1_0002_01_000002"}},
		removed: []SparkExecutor{{ID: "1", Container: "container_1_0002_01_000002", Reason: "Container container_1_0002_01_000002 was preempted."}},
		failures: []SparkTaskFailure{{Index: 0, Executor: "1", Reason: "ExecutorLostFailure", ExitCausedByApp: ptr.To(false),
			LossReason: "Container container_1_0002_01_000002 was preempted."}},
		notApp: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(tc.file)
			require.NoError(t, err)
			defer f.Close()
			e, err := ParseSparkEvents(f)
			require.NoError(t, err)
			assert.Equal(t, tc.succeeded, e.Succeeded())
			assert.Equal(t, tc.jobTime, e.JobTime)
			assert.Equal(t, tc.tasks, e.Tasks)
			assert.Equal(t, tc.added, e.Added)
			assert.Equal(t, tc.removed, e.Removed)
			assert.Equal(t, tc.failures, e.Failures)
			byApp, notApp := e.ExecutorLost()
			assert.Equal(t, tc.byApp, byApp)
			assert.Equal(t, tc.notApp, notApp)
		})
	}
}

func TestParseSparkEventsErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":  "{\"Event\":\"SparkListenerLogStart\"}\nSpark\n",
		"truncated": "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":0",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSparkEvents(strings.NewReader(in))
			assert.Error(t, err)
		})
	}
	e, err := ParseSparkEvents(strings.NewReader(""))
	require.NoError(t, err)
	assert.False(t, e.Succeeded(), "no job: not a success")
}
