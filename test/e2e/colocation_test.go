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

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
)

// TestColocationSmoke runs the co-location benchmark (make
// measure-colocation) short: one load level, one repeat, seconds-long
// windows, every configuration. It checks only that the harness works and
// its numbers are sane — the LS service answered in its pod, latencies are
// positive and ordered, few errors, batch did CPU work beside LS and none
// with LS alone, utilisation is a share — never how configurations compare:
// the figures come from the full command on a quiet machine.
func TestColocationSmoke(t *testing.T) {
	b := startBox(t, colocation.BoxOptions())
	o := colocation.DefaultOptions()
	o.Levels, o.Repeats = []float64{0.3}, 1
	o.Warmup, o.Window, o.Settle = 2*time.Second, 4*time.Second, 2*time.Second
	// And the controller's step response, short, with its plot.
	plot := filepath.Join(t.TempDir(), "step.svg")
	o.Step = &colocation.StepOptions{Target: 50 * time.Microsecond, From: 0.2, To: 0.4, Before: 4 * time.Second, After: 4 * time.Second,
		Plot: plot, Thresholds: o.Thresholds}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := colocation.Run(ctx, b, o)
	require.NoError(t, err)
	var out strings.Builder
	rep.Print(&out)
	t.Logf("co-location smoke:\n%s", out.String())

	require.Len(t, rep.Episodes, len(colocation.AllConfigs))
	assert.Greater(t, rep.Passes, 0)
	assert.Greater(t, rep.RequestCPU, time.Duration(0))
	for _, ep := range rep.Episodes {
		name := ep.Config.String()
		assert.Greater(t, ep.LS.Requests, 0, name)
		assert.Greater(t, ep.LS.P50, time.Duration(0), name)
		assert.LessOrEqual(t, ep.LS.P50, ep.LS.P99, name)
		assert.LessOrEqual(t, ep.LS.P99, ep.LS.P999, name)
		assert.Less(t, ep.LS.ErrorRate(), 0.05, "%s: LS errors %d of %d", name, ep.LS.Errors, ep.LS.Requests)
		assert.Greater(t, ep.LSCPUSeconds, 0.0, "%s: the LS pod's cgroup did the work", name)
		assert.Greater(t, ep.NodeUtilisation, 0.0, name)
		assert.LessOrEqual(t, ep.NodeUtilisation, 1.0, name)
		if ep.Config.Batch() {
			assert.Greater(t, ep.BatchCPUSeconds, 0.0, "%s: YARN batch did CPU work", name)
		} else {
			assert.Zero(t, ep.BatchCPUSeconds, "%s: no YARN container runs", name)
		}
	}
	assert.Len(t, rep.Rows, len(colocation.AllConfigs))
	assert.NotEmpty(t, rep.Targets)

	// Interference control: BE suppress put a budget on the besteffort
	// cgroup at the controller's threshold, koordlet published its signal
	// and its threshold, which the step sampled.
	for _, ep := range rep.Episodes {
		if ep.Config == colocation.Controlled {
			assert.NotContains(t, ep.Knobs, "besteffort cfs_quota_us -1", "BE suppress set a budget: %s", ep.Knobs)
		}
	}
	require.NotNil(t, rep.Step)
	assert.NotEmpty(t, rep.Step.Bins)
	budgets, signals := 0, 0
	for _, s := range rep.Step.Samples {
		if s.Budget > 0 {
			budgets++
		}
		if s.Signal >= 0 {
			signals++
		}
	}
	assert.Greater(t, budgets, 0, "the besteffort cgroup had a budget during the step")
	assert.Greater(t, signals, 0, "koordlet published the interference signal")
	st, err := os.Stat(plot)
	require.NoError(t, err, "the step plot was written")
	assert.Greater(t, st.Size(), int64(1000))
}
