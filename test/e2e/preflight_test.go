package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// TestPreflight runs bin/koordlet --yarn-preflight on a node in a box with
// the systemd driver and CPU-only YARN (Hadoop's default):
// the driver and hierarchy koordlet resolves, the container the emulated
// NodeManager launched, CPU-only YARN, the NodeManager found through the
// node's pods on the real API server and its version; exit 0. With a YARN
// gate whose upstream gate is off it exits 1 naming the fix.
func TestPreflight(t *testing.T) {
	b := startBox(t, nodebox.Options{Layout: nodebox.LayoutSystemd})
	id, err := b.NM.Launch(nmemu.Spec{AppID: 7, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 1024, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.NM.Pid(id) > 0 }, 10*time.Second, 50*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report, code, err := b.Preflight(ctx)
	require.NoError(t, err)
	t.Logf("preflight on the box:\n%s", report)
	assert.Equal(t, 0, code)
	for _, want := range []string{
		"systemd driver",
		"/" + b.Hierarchy() + " (default for the systemd driver)",
		"1 container cgroup(s) now",
		"CPU-only YARN",
		"ok     NodeManager",
		"pod yarn/nodemanager",
		"3.3.6-emulated",
		"ok     RBAC                     koordlet may do all 12 things checked",
		"NodeSLO host app",
		"0 blocking problem(s)",
	} {
		assert.Contains(t, report, want)
	}

	// The same as JSON, for a Job's log collected from many nodes.
	report, code, err = b.Preflight(ctx, "--yarn-preflight-output=json")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	var out struct {
		Node     string `json:"node"`
		ExitCode int    `json:"exitCode"`
		Findings []struct {
			Check    string `json:"check"`
			Severity string `json:"severity"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(report), &out), report)
	assert.Equal(t, nodebox.NodeName, out.Node)
	checks := map[string]string{}
	for _, f := range out.Findings {
		checks[f.Check] = f.Severity
	}
	assert.Equal(t, "ok", checks["NodeManager"])
	assert.Equal(t, "ok", checks["RBAC"])
	assert.Contains(t, checks, "BE thresholds")

	report, code, err = b.Preflight(ctx, "--feature-gates=YARNBEMemoryEvict=true,BEMemoryEvict=false")
	require.NoError(t, err)
	assert.Equal(t, 1, code, report)
	assert.Contains(t, report, "BLOCK  feature gates")
	assert.Contains(t, report, "fix: --feature-gates=...,BEMemoryEvict=true")
}
