package yarnledger

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	koordfeatures "github.com/koordinator-sh/koordinator/pkg/features"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

func TestAbove(t *testing.T) {
	c := yarn.NodeResource{MemoryMB: 1536, VCores: 2}
	assert.Equal(t, yarn.NodeResource{MemoryMB: 768, VCores: 1}, Above(Batch{MilliCPU: 3000, MemoryBytes: 2304 << 20}, c))
	assert.Equal(t, yarn.NodeResource{}, Above(Batch{MilliCPU: 2000, MemoryBytes: 1536 << 20}, c), "at the capacity: nothing above")
	assert.Equal(t, yarn.NodeResource{MemoryMB: 1, VCores: 1}, Above(Batch{MilliCPU: 2001, MemoryBytes: 1536<<20 + 1}, c), "a part counts whole")
	assert.Equal(t, yarn.NodeResource{VCores: 1}, Above(Batch{MilliCPU: 3000, MemoryBytes: 1 << 20}, c), "each resource apart")
}

// setRMPreemption turns YARNRMPreemption on or off for the test.
func setRMPreemption(t *testing.T, on bool) {
	require.NoError(t, features.Register())
	require.NoError(t, koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNRMPreemption): on}))
	t.Cleanup(func() {
		_ = koordfeatures.DefaultMutableKoordletFeatureGate.SetFromMap(map[string]bool{string(features.YARNRMPreemption): false})
	})
}

// TestRMSyncAsksTheRMToPreempt: a capacity below YARN's allocation goes to
// the RM with the over-commit timeout when YARNRMPreemption is on (-1, never
// preempt, when off), the release is recorded for the evictor and ends when
// YARN's allocation fits again; a capacity that YARN's allocation fits
// carries -1.
func TestRMSyncAsksTheRMToPreempt(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "gate off", true: "gate on"}[on], func(t *testing.T) {
			setRMPreemption(t, on)
			rm, err := rmemu.Start()
			require.NoError(t, err)
			t.Cleanup(func() { _ = rm.Close() })
			client, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}, User: "yarn", Timeout: 300 * time.Millisecond})
			require.NoError(t, err)
			rm.RegisterNode("nm:45454", yarn.NodeResource{MemoryMB: 8192, VCores: 8})
			origin := Batch{MilliCPU: 8000, MemoryBytes: 8 << 30}
			yarnAlloc := Batch{MilliCPU: 3000, MemoryBytes: 2304 << 20}
			view := Compute(origin, true, Batch{MilliCPU: 2000, MemoryBytes: 2 << 30}, yarnAlloc)
			var w rmrelease.Window
			s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return "nm:45454" },
				View: func() View { return view }, Release: &w, PreemptionTimeout: func() time.Duration { return 3 * time.Second }})
			ctx := context.Background()
			now := time.Now()

			s.Step(ctx, now)
			require.Len(t, rm.Calls(), 1)
			assert.EqualValues(t, -1, rm.Calls()[0].OverCommitTimeout, "YARN fits its capacity: never preempt")
			_, pending := w.Pending(now)
			assert.False(t, pending)

			// A Kubernetes batch pod takes 6.5 GiB: YARN's capacity falls
			// to 1.5 GiB, below its 2.25 GiB.
			view = Compute(origin, true, Batch{MilliCPU: 6000, MemoryBytes: 6656 << 20}, yarnAlloc)
			s.Step(ctx, now)
			calls := rm.Calls()
			require.Len(t, calls, 2)
			assert.Equal(t, yarn.NodeResource{MemoryMB: 1536, VCores: 2}, calls[1].Resource)
			held, known := w.HeldByRM()
			require.True(t, known, "the evictor learns that the RM holds the smaller capacity")
			assert.Equal(t, rmrelease.Capacity{MemoryMB: 1536, VCores: 2}, held)
			ask, pending := w.Pending(now)
			if !on {
				assert.EqualValues(t, -1, calls[1].OverCommitTimeout)
				assert.False(t, pending, "nothing asked of the RM with the gate off")
				assert.Nil(t, s.Status().Preemption)
				return
			}
			assert.EqualValues(t, 3000, calls[1].OverCommitTimeout, "the RM preempts after 3 s")
			require.True(t, pending)
			assert.Equal(t, int64(768), ask.MemoryMB)
			assert.Equal(t, int64(1), ask.VCores)
			st := s.Status()
			require.NotNil(t, st.PushedTimeout)
			assert.Equal(t, 3*time.Second, *st.PushedTimeout)
			require.NotNil(t, st.Preemption)
			require.NotNil(t, st.Preemption.Pending)

			s.Step(ctx, now.Add(time.Second))
			assert.Len(t, rm.Calls(), 2, "asked once: pushing again would move the RM's deadline")

			// The RM preempted the 1 GiB executor: YARN fits again.
			view = Compute(origin, true, Batch{MilliCPU: 6000, MemoryBytes: 6656 << 20}, Batch{MilliCPU: 2000, MemoryBytes: 1280 << 20})
			s.Step(ctx, now.Add(4*time.Second))
			_, pending = w.Pending(now.Add(4 * time.Second))
			assert.False(t, pending, "released: the evictor need not wait")
			assert.Equal(t, 1, w.Status().Released)
			assert.Len(t, rm.Calls(), 2)
		})
	}
}

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
	// The NodeManager registered (an RM takes no push for a node it does
	// not list; the standby learns it at the fail-over).
	rm1.RegisterNode("nm-host:45454", yarn.NodeResource{MemoryMB: 16 << 10, VCores: 8})
	rm2.RegisterNode("nm-host:45454", yarn.NodeResource{MemoryMB: 16 << 10, VCores: 8})

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

func TestNextAction(t *testing.T) {
	now := time.Unix(1700000000, 0)
	want := yarn.NodeResource{MemoryMB: 4096, VCores: 4}
	other := yarn.NodeResource{MemoryMB: 8192, VCores: 4}
	for _, tc := range []struct {
		name           string
		pushed         *yarn.NodeResource
		timeoutMissing bool
		lastRead       time.Time
		errorSince     bool
		want           Action
	}{
		{"never pushed", nil, false, now, false, Push},
		{"changed", &other, false, now, false, Push},
		{"unchanged, read back recently", &want, false, now.Add(-time.Minute), false, Wait},
		{"unchanged, read-back due", &want, false, now.Add(-2 * time.Minute), false, ReadBack},
		{"unchanged, an RM error since", &want, false, now, true, ReadBack},
		{"unchanged, but below YARN's allocation without a timeout", &want, true, now, false, Push},
	} {
		assert.Equal(t, tc.want, NextAction(tc.pushed, want, tc.timeoutMissing, tc.lastRead, now, 2*time.Minute, tc.errorSince), tc.name)
	}
}

// TestRMSyncPushesAgainAfterTheRMForgets: the RM resets the node to its
// yarn-site capacity (an RM restart, a failover, the NM re-registering);
// the periodic read-back finds it and pushes again. The code before pushed
// only when its own last push differed from the wanted value: never again.
func TestRMSyncPushesAgainAfterTheRMForgets(t *testing.T) {
	rm, err := rmemu.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	client, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}, User: "yarn", Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	const node = "nm-host:45454"
	yarnSite := yarn.NodeResource{MemoryMB: 16 << 10, VCores: 8}
	rm.RegisterNode(node, yarnSite)
	view := Compute(Batch{MilliCPU: 8000, MemoryBytes: 16 << 30}, true, Batch{MilliCPU: 2500, MemoryBytes: 4 << 30}, Batch{})
	s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return node },
		View: func() View { return view }, Interval: func() time.Duration { return time.Second },
		ReadBack: func() time.Duration { return time.Minute }})
	ctx := context.Background()
	now := time.Now()

	s.Step(ctx, now)
	require.Len(t, rm.Calls(), 1)
	wanted := yarn.NodeResource{MemoryMB: 12 << 10, VCores: 5}
	got, _ := rm.Node(node)
	require.Equal(t, wanted, got)

	s.Step(ctx, now.Add(10*time.Second))
	assert.Len(t, rm.Calls(), 1, "unchanged and the read-back not due: nothing sent")
	assert.Equal(t, 1, rm.NodeReads(), "one read before the first push: YARN's own capacity")

	rm.RegisterNode(node, yarnSite) // the NM reconnects
	s.Step(ctx, now.Add(30*time.Second))
	assert.Len(t, rm.Calls(), 1, "not found before the read-back is due")
	s.Step(ctx, now.Add(61*time.Second))
	assert.Equal(t, 2, rm.NodeReads())
	require.Len(t, rm.Calls(), 2, "the read-back found the yarn-site capacity and pushed again")
	got, _ = rm.Node(node)
	assert.Equal(t, wanted, got)
	st := s.Status()
	assert.Equal(t, 1, st.Drifts)
	assert.Equal(t, 1, st.ReadBacks)

	// An RM error: the next try reads back first, even before the period.
	rm.SetMode(rmemu.ModeError, "")
	s.Step(ctx, now.Add(200*time.Second))
	require.NotEmpty(t, s.Status().LastError)
	rm.SetMode(rmemu.ModeActive, "")
	rm.RegisterNode(node, yarnSite) // a restarted RM
	s.Step(ctx, s.Status().NextTry.Add(time.Millisecond))
	require.Len(t, rm.Calls(), 3, "read back after the error, found reset, pushed")
	assert.Empty(t, s.Status().LastError)
	got, _ = rm.Node(node)
	assert.Equal(t, wanted, got)
}

// An RM error forgets what the RM holds: the evictor cannot take a push
// that failed as the RM holding the smaller capacity.
func TestRMSyncForgetsWhatTheRMHoldsOnError(t *testing.T) {
	rm, err := rmemu.Start()
	require.NoError(t, err)
	client, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}, User: "yarn", Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	rm.RegisterNode("nm:45454", yarn.NodeResource{MemoryMB: 8192, VCores: 8})
	origin := Batch{MilliCPU: 8000, MemoryBytes: 8 << 30}
	view := Compute(origin, true, Batch{MilliCPU: 2000, MemoryBytes: 2 << 30}, Batch{})
	var w rmrelease.Window
	s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return "nm:45454" },
		View: func() View { return view }, Release: &w})
	s.Step(context.Background(), time.Now())
	held, known := w.HeldByRM()
	require.True(t, known)
	assert.Equal(t, rmrelease.Capacity{MemoryMB: 6 << 10, VCores: 6}, held)

	require.NoError(t, rm.Close())
	view = Compute(origin, true, Batch{MilliCPU: 6000, MemoryBytes: 6 << 30}, Batch{})
	s.Step(context.Background(), time.Now())
	require.NotEmpty(t, s.Status().LastError)
	_, known = w.HeldByRM()
	assert.False(t, known, "the push failed: what the RM holds is not known")
}
