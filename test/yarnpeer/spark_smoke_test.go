package yarnpeer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSparkSmoke runs the tests' Spark job undisturbed on a peer with the
// DefaultContainerExecutor (no root, no cgroups), when
// KOORDLET_YARN_SPARK_SMOKE is set (to a Hadoop version of Versions, or 1:
// 3.5.0): a check of the Spark engine's wiring without koordlet (the e2e
// rows need root).
func TestSparkSmoke(t *testing.T) {
	version := os.Getenv("KOORDLET_YARN_SPARK_SMOKE")
	if version == "" {
		t.Skip("KOORDLET_YARN_SPARK_SMOKE not set")
	}
	if !slices.Contains(Versions, version) {
		version = Hadoop35
	}
	top, err := filepath.Abs("../..")
	require.NoError(t, err)
	require.NoError(t, Built(top, version))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := Start(ctx, Options{Top: top, Hadoop: version, Kind: DCE, Dir: t.TempDir()})
	require.NoError(t, err)
	defer p.Stop()
	run, err := p.RunSparkJob(SparkJob{Name: "smoke", Queue: "default", Partitions: 2, HoldMB: 64, Seconds: 5, Executors: 2})
	require.NoError(t, err)
	res, err := run.Wait(ctx)
	if err != nil || res.FinalStatus != "SUCCEEDED" {
		t.Logf("spark-submit output:\n%s", tail(run.Output(), 80))
	}
	require.NoError(t, err)
	t.Logf("%s: %s %s in %s; job time %s; executors added %d, removed %d; tasks %d, failures %d",
		res.AppID, res.State, res.FinalStatus, res.Elapsed.Round(time.Second), res.Events.JobTime,
		len(res.Events.Added), len(res.Events.Removed), res.Events.Tasks, len(res.Events.Failures))
	require.Equal(t, "SUCCEEDED", res.FinalStatus)
	require.True(t, res.Events.Succeeded())
}
