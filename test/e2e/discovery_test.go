package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

func find(resp koordletyarn.ContainersResponse, id string) *store.Container {
	for _, c := range resp.Containers {
		if c.Name == id {
			return c
		}
	}
	return nil
}

// TestDiscovery: containers appear in /yarn/containers with the right ids,
// AM flags, requests and cgroups, and disappear when they exit.
func TestDiscovery(t *testing.T) {
	b := startBox(t, nodebox.Options{})
	am, err := b.NM.Launch(nmemu.Spec{AppID: 42, Attempt: 1, Sequence: 1, User: "spark", MemoryMB: 1024, VCores: 1,
		Script: "sleep 3600 & exec sleep 3600"})
	require.NoError(t, err)
	exec1, err := b.NM.Launch(nmemu.Spec{AppID: 42, Attempt: 1, Sequence: 2, User: "spark", MemoryMB: 4096, VCores: 2,
		Opportunistic: true, Script: "exec sleep 3600"})
	require.NoError(t, err)

	var resp koordletyarn.ContainersResponse
	require.Eventually(t, func() bool {
		resp, err = b.Containers()
		if err != nil {
			return false
		}
		a, e := find(resp, am), find(resp, exec1)
		return a != nil && e != nil && a.Source == store.SourceBoth && e.Source == store.SourceBoth &&
			len(a.Pids) == 2 && len(e.Pids) == 1
	}, 20*time.Second, 200*time.Millisecond, "koordlet lists both containers from cgroups and the NM")

	a := find(resp, am)
	assert.True(t, a.IsAM)
	assert.Equal(t, "application_1700000000000_0042", a.ApplicationID)
	assert.Equal(t, "spark", a.User)
	assert.Equal(t, "RUNNING", a.State)
	assert.Equal(t, int64(1000), a.RequestMilliCPU)
	assert.Equal(t, int64(1024)<<20, a.RequestMemoryBytes)
	assert.Contains(t, a.Pids, b.NM.Pid(am))
	assert.Equal(t, cgroups.Ref{Dir: nodebox.YARNHierarchy + "/" + am, Owned: true}, a.Cgroups[cgroups.CPU])
	assert.Equal(t, cgroups.Ref{Dir: nodebox.YARNHierarchy + "/" + am, Owned: true}, a.Cgroups[cgroups.Memory])
	assert.False(t, a.Cgroups[cgroups.CPUSet].Owned, "cpuset is not managed by YARN: the NM pod's cgroup")
	assert.Contains(t, a.Cgroups[cgroups.CPUSet].Dir, "kubepods/besteffort/pod")

	e := find(resp, exec1)
	assert.False(t, e.IsAM)
	assert.Equal(t, "OPPORTUNISTIC", e.ExecutionType)
	assert.Equal(t, int64(2000), e.RequestMilliCPU)
	assert.Equal(t, "yarn/nodemanager", resp.Informer.NMPod)
	require.Eventually(t, func() bool {
		r, err := b.Containers()
		return err == nil && r.Discovery == "ebpf"
	}, 20*time.Second, 200*time.Millisecond, "this machine kind has BTF and CAP_BPF: koordlet discovers by eBPF")

	// The executor exits: it disappears; the AM stays.
	b.NM.Exit(exec1)
	<-b.NM.Exited(exec1)
	require.Eventually(t, func() bool {
		resp, err = b.Containers()
		return err == nil && find(resp, exec1) == nil && find(resp, am) != nil
	}, 20*time.Second, 200*time.Millisecond)
}
