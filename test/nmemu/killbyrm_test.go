package nmemu

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// TestKillByRM: the RM's view of the node (Allocations: the AM told apart,
// the launch time) holds the running containers only; a container the RM
// asks to clean up ends CONTAINER_CLEANEDUP_AFTER_KILL with
// KILLED_BY_RESOURCEMANAGER (-106), not as one that failed (137), and
// leaves the view.
func TestKillByRM(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	nm := New(Config{NoContainerCgroups: true})
	t.Cleanup(nm.Close)
	before := time.Now()
	am, err := nm.Launch(Spec{AppID: 4, Attempt: 1, Sequence: 1, User: "u", MemoryMB: 256, VCores: 1, Script: "exec sleep 3600"})
	require.NoError(t, err)
	exec, err := nm.Launch(Spec{AppID: 4, Attempt: 1, Sequence: 2, User: "u", MemoryMB: 1024, VCores: 2, AM: ptr.To(false),
		Opportunistic: true, Script: "exec sleep 3600"})
	require.NoError(t, err)

	got := nm.Allocations()
	require.Len(t, got, 2)
	assert.Equal(t, am, got[0].ID)
	assert.True(t, got[0].AM)
	assert.Equal(t, exec, got[1].ID)
	assert.False(t, got[1].AM)
	assert.Equal(t, "OPPORTUNISTIC", got[1].ExecutionType)
	assert.EqualValues(t, 1024, got[1].MemoryMB)
	assert.False(t, got[1].Launched.Before(before))

	nm.KillByRM(exec)
	waitExited(t, nm, exec)
	c, _ := nm.Get(exec)
	assert.Equal(t, yarn.StateContainerCleanedupAfterKill, c.State)
	assert.Equal(t, -106, c.ExitCode)
	assert.Equal(t, "Container Killed by ResourceManager", c.Diagnostics)
	left := nm.Allocations()
	require.Len(t, left, 1)
	assert.Equal(t, am, left[0].ID)

	nm.Exit(am)
	waitExited(t, nm, am)
	c, _ = nm.Get(am)
	assert.Equal(t, 137, c.ExitCode, "an ordinary kill is still the signal's")
}
