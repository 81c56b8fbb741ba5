package yarnmemcg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// TestRealKernelMoveWithoutPidfd (issue 31 item 2): on a kernel without
// pidfd_open the memory-cgroup mover pins by start time, as every other
// mover does (cgroups.Pin); before, it gave up on every process (failed)
// and no container got its memory cgroup. Gate-off restore likewise.
func TestRealKernelMoveWithoutPidfd(t *testing.T) {
	n := newNode(t)
	t.Cleanup(cgroups.SetPidfdOpen(nil))
	name := "container_e17_1700000000000_0042_01_000005"
	p, rel := n.container(name, "exec sleep 3600")
	require.NoError(t, p.Release())
	n.observe()
	a := n.applier(Options{MaxResidentWithoutChargeMove: -1})
	require.Equal(t, 1, a.Apply(n.get(name)))
	assert.True(t, n.h.Contains(p.Pid(), cgroups.Memory, rel), "in its own memory cgroup")
	assert.Equal(t, 1.0, testutil.ToFloat64(a.Moves().WithLabelValues(ResultMoved)))
	assert.Equal(t, 0.0, testutil.ToFloat64(a.Moves().WithLabelValues(ResultFailed)))

	off := n.applier(Options{})
	assert.Equal(t, 1, off.RestoreDisabled())
	assert.True(t, n.h.Contains(p.Pid(), cgroups.Memory, n.top+"/nmpod"), "back in the NodeManager pod's memory cgroup")
}
