package yarnpeer

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The samples: two of Spark 4.0.1's event logs from the e2e rows
// spark-eviction and spark-preemption (the environment line left out),
// and a hand-written failed job.
func TestParseSparkEvents(t *testing.T) {
	type removed struct{ id, container, reason string }
	type failure struct {
		index, attempt int
		executor       string
		byApp          bool
		reason         string
	}
	for _, tc := range []struct {
		name, file    string
		app           string
		succeeded     bool
		jobTime       time.Duration
		tasks         int
		added         []string // containers
		removed       []removed
		failures      []failure
		byApp, notApp int
	}{{
		name: "an executor evicted by koordlet (exit 143): blamed on the app, its task re-run on a new executor",
		file: "testdata/spark-4.0.1-evicted.events", app: "application_1795775113050_0001",
		succeeded: true, jobTime: 53723 * time.Millisecond, tasks: 4,
		added: []string{"container_1795775113050_0001_01_000003", "container_1795775113050_0001_01_000004",
			"container_1795775113050_0001_01_000002", "container_1795775113050_0001_01_000005"},
		// Logged twice by Spark, counted once.
		removed:  []removed{{"2", "container_1795775113050_0001_01_000003", "Container from a bad node: container_1795775113050_0001_01_000003 on host: localhost. Exit status: 143."}},
		failures: []failure{{0, 0, "2", true, "Exit status: 143"}},
		byApp:    1,
	}, {
		name: "an executor preempted by the RM: not the app's fault, its task re-run on a surviving executor",
		file: "testdata/spark-4.0.1-preempted.events", app: "application_1795775217540_0001",
		succeeded: true, jobTime: 83373 * time.Millisecond, tasks: 4,
		added: []string{"container_1795775217540_0001_01_000002", "container_1795775217540_0001_01_000003",
			"container_1795775217540_0001_01_000004"},
		removed:  []removed{{"3", "container_1795775217540_0001_01_000004", "Container container_1795775217540_0001_01_000004 on host: localhost was preempted."}},
		failures: []failure{{2, 0, "3", false, "was preempted"}},
		notApp:   1,
	}, {
		name: "a failed job",
		file: "testdata/spark-failed.events", app: "application_1_0002",
		jobTime: 6 * time.Second, tasks: 1,
		added:    []string{"container_1_0002_01_000002"},
		removed:  []removed{{"1", "container_1_0002_01_000002", "was preempted"}},
		failures: []failure{{0, 0, "1", false, "was preempted"}},
		notApp:   1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(tc.file)
			require.NoError(t, err)
			defer f.Close()
			e, err := ParseSparkEvents(f)
			require.NoError(t, err)
			assert.Equal(t, tc.app, e.AppID)
			assert.Equal(t, tc.succeeded, e.Succeeded())
			assert.Equal(t, tc.jobTime, e.JobTime)
			assert.Equal(t, tc.tasks, e.Tasks)
			var added []string
			for _, x := range e.Added {
				added = append(added, x.Container)
			}
			assert.Equal(t, tc.added, added)
			if assert.Len(t, e.Removed, len(tc.removed)) {
				for i, want := range tc.removed {
					got := e.Removed[i]
					assert.Equal(t, want.id, got.ID)
					assert.Equal(t, want.container, got.Container)
					assert.Contains(t, got.Reason, want.reason)
				}
			}
			if assert.Len(t, e.Failures, len(tc.failures)) {
				for i, want := range tc.failures {
					got := e.Failures[i]
					assert.Equal(t, "ExecutorLostFailure", got.Reason)
					assert.Equal(t, []any{want.index, want.attempt, want.executor}, []any{got.Index, got.Attempt, got.Executor})
					if assert.NotNil(t, got.ExitCausedByApp) {
						assert.Equal(t, want.byApp, *got.ExitCausedByApp)
					}
					assert.Contains(t, got.LossReason, want.reason)
				}
			}
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
