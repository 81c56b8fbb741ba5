package yarnledger

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

func TestCapacityRoundsDown(t *testing.T) {
	assert.Equal(t, yarn.NodeResource{MemoryMB: 1023, VCores: 3}, Capacity(Batch{MilliCPU: 3999, MemoryBytes: 1<<30 - 1}))
	assert.Equal(t, yarn.NodeResource{}, Capacity(Batch{}))
}

func TestRMSync(t *testing.T) {
	rm1, err := rmemu.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm1.Close() })
	rm2, err := rmemu.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm2.Close() })
	client, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm1.URL, rm2.URL}, User: "yarn", Timeout: 300 * time.Millisecond})
	require.NoError(t, err)

	view := View{}
	nodeID := ""
	s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return nodeID }, View: func() View { return view },
		Interval: func() time.Duration { return 100 * time.Millisecond }})
	ctx := context.Background()
	now := time.Now()

	s.Step(ctx, now)
	assert.Contains(t, s.Status().Skipped, "origin")
	view = Compute(Batch{MilliCPU: 8000, MemoryBytes: 16 << 30}, true, Batch{MilliCPU: 2500, MemoryBytes: 4 << 30}, Batch{})
	s.Step(ctx, now)
	assert.Contains(t, s.Status().Skipped, "node id")
	assert.Empty(t, rm1.Calls())

	nodeID = "nm-host:45454"
	s.Step(ctx, now)
	s.Step(ctx, now) // unchanged: not pushed again
	calls := rm1.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, yarn.NodeResource{MemoryMB: 12 << 10, VCores: 5}, calls[0].Resource)
	assert.Equal(t, "nm-host:45454", calls[0].NodeID)
	assert.Equal(t, "yarn", calls[0].User)

	// Fail-over: rm1 becomes standby and redirects to rm2; the change goes to rm2.
	rm1.SetMode(rmemu.ModeStandby, rm2.URL)
	view = Compute(Batch{MilliCPU: 8000, MemoryBytes: 16 << 30}, true, Batch{MilliCPU: 6000, MemoryBytes: 8 << 30}, Batch{})
	s.Step(ctx, now)
	require.Len(t, rm2.Calls(), 1)
	assert.Equal(t, yarn.NodeResource{MemoryMB: 8 << 10, VCores: 2}, rm2.Calls()[0].Resource)
	assert.Equal(t, rm2.URL, s.Status().Active)

	// Both down: the error is kept, retried only after the backoff.
	rm1.SetMode(rmemu.ModeError, "")
	rm2.SetMode(rmemu.ModeStandby, "")
	view = Compute(Batch{MilliCPU: 8000, MemoryBytes: 16 << 30}, true, Batch{}, Batch{})
	s.Step(ctx, now)
	st := s.Status()
	require.NotEmpty(t, st.LastError)
	assert.True(t, st.NextTry.After(now))
	n1, n2 := len(rm1.Calls()), len(rm2.Calls())
	s.Step(ctx, now) // within the backoff: nothing sent
	assert.Equal(t, n1, len(rm1.Calls()))
	assert.Equal(t, n2, len(rm2.Calls()))

	rm2.SetMode(rmemu.ModeActive, "")
	s.Step(ctx, st.NextTry.Add(time.Millisecond))
	got, ok := rm2.Node("nm-host:45454")
	require.True(t, ok)
	assert.Equal(t, yarn.NodeResource{MemoryMB: 16 << 10, VCores: 8}, got)
	assert.Empty(t, s.Status().LastError)
}
