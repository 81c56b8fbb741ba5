package yarninformer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// TestRealKernelDiscovery creates a container cgroup under a YARN hierarchy
// in the real cgroup v1 cpu controller, starts a real process tree in it and
// checks the informer discovers it, resolves the controllers YARN does not
// manage from /proc, and removes it when it exits.
func TestRealKernelDiscovery(t *testing.T) {
	kerneltest.RequireCgroupV1(t, "cpu")
	kerneltest.UseHostRoots(t)

	hierarchy := kerneltest.UniqueRoot(t) + "/hadoop-yarn"
	name := "container_e17_1700000000000_0042_01_000002"
	dir := kerneltest.MakeCgroup(t, "cpu", hierarchy+"/"+name)
	proc := kerneltest.Start(t, "sleep 300 & exec sleep 300", dir)
	require.NoError(t, proc.Release())
	require.Eventually(t, func() bool { return len(kerneltest.Pids(dir)) == 2 }, 5*time.Second, 10*time.Millisecond,
		"the shell and its forked child run in the container cgroup")

	cfg := testConfig("http://127.0.0.1:1") // no NM: discovery comes from the kernel
	cfg.CgroupHierarchy = hierarchy
	st := store.New()
	p := New(cfg, st, nil)
	p.Setup(nil, nil)
	stats := p.Resync(context.Background())
	assert.Equal(t, 1, stats.Added)

	c, ok := st.Get(name)
	require.True(t, ok)
	assert.ElementsMatch(t, kerneltest.Pids(dir), c.Pids)
	assert.Contains(t, c.Pids, proc.Pid())
	assert.Equal(t, cgroups.Ref{Dir: hierarchy + "/" + name, Owned: true}, c.Cgroups[cgroups.CPU])
	// YARN did not create a memory cgroup: the processes stay where they were.
	assert.Equal(t, cgroups.Ref{Dir: kerneltest.SelfCgroup(t, "memory")}, c.Cgroups[cgroups.Memory])
	assert.Equal(t, store.SourceCgroup, c.Source)

	// The container exits and YARN removes its cgroup.
	kerneltest.RemoveCgroupTree(t, kerneltest.CgroupRoot+"/cpu/"+hierarchy+"/"+name)
	stats = p.Resync(context.Background())
	assert.Equal(t, 1, stats.Removed)
	assert.Equal(t, 0, st.Len())
}
