package yarnledger

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

// giveBack runs the give-back of a koordlet started with the gate off to
// its end.
func giveBack(s *RMSync) {
	g := &GiveBack{Sync: s, Retry: time.Millisecond}
	stop := make(chan struct{})
	defer close(stop)
	g.Run(stop)
	<-g.done
}

func startRMEmu(t *testing.T) (*rmemu.Server, *yarn.RMClient) {
	t.Helper()
	rm, err := rmemu.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	client, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}, User: "yarn", Timeout: time.Second})
	require.NoError(t, err)
	return rm, client
}

// TestRMSyncDeadlineHoldsWhileCapacityMoves (issue 31, item 9): batch pods
// keep arriving on an over-committed node, so YARN's capacity moves at
// every sync. Each push sends the RM the time left to the first deadline
// (the RM restarts its timer at every push that changes the node), and
// koordlet's own deadline stays the first one. YARN's own capacity is the
// one the NodeManager registered with, never one of the pushes (issue 55,
// item 6: the RM did not list the node here, the read before the first push
// failed, the push went all the same and the second read recorded it).
func TestRMSyncDeadlineHoldsWhileCapacityMoves(t *testing.T) {
	setRMPreemption(t, true)
	rm, client := startRMEmu(t)
	own := yarn.NodeResource{MemoryMB: 8192, VCores: 8}
	rm.RegisterNode("nm:45454", own)
	origin := Batch{MilliCPU: 8000, MemoryBytes: 8 << 30}
	yarnAlloc := Batch{MilliCPU: 3000, MemoryBytes: 2304 << 20}
	k8s := Batch{MilliCPU: 6000, MemoryBytes: 6656 << 20}
	view := Compute(origin, true, k8s, yarnAlloc)
	var w rmrelease.Window
	s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return "nm:45454" },
		View: func() View { return view }, Release: &w, PreemptionTimeout: func() time.Duration { return 3 * time.Second }})
	ctx := context.Background()
	now := time.Now()
	for i := range 3 {
		s.Step(ctx, now.Add(time.Duration(i)*time.Second))
		// Another batch pod: 100 MiB more for Kubernetes, less for YARN.
		k8s.MemoryBytes += 100 << 20
		view = Compute(origin, true, k8s, yarnAlloc)
	}
	calls := rm.Calls()
	require.Len(t, calls, 3, "the capacity changed at every sync: pushed each time")
	for i, c := range calls {
		t.Logf("push %d: %d MB, over-commit timeout %d ms", i, c.Resource.MemoryMB, c.OverCommitTimeout)
		assert.InDelta(t, 3000-1000*i, c.OverCommitTimeout, 500, "push %d carries the time left to the first deadline", i)
	}
	ask, pending := w.Pending(now.Add(3 * time.Second))
	require.True(t, pending)
	assert.WithinDuration(t, now.Add(3*time.Second+rmrelease.DefaultGrace), ask.Deadline(), 500*time.Millisecond, "koordlet's deadline is the first push's")
	_, pending = w.Pending(now.Add(3*time.Second + rmrelease.DefaultGrace + time.Second))
	assert.False(t, pending, "past the first deadline the evictor acts, however often the capacity moved")
	require.NotNil(t, s.Status().Own)
	assert.Equal(t, own, *s.Status().Own, "YARN's own capacity is the registered one, not a push")
}

// TestRMSyncGraceFromASlowRM (item 11): an RM whose node heartbeat is 10 s
// preempts up to a heartbeat after the timeout, and the NodeManager hears
// of it a heartbeat later: koordlet's deadline leaves it that time (two
// heartbeats, the NM resync and a second) instead of a fixed 5 s.
func TestRMSyncGraceFromASlowRM(t *testing.T) {
	setRMPreemption(t, true)
	rm, client := startRMEmu(t)
	rm.SetConf(yarn.ConfNMHeartbeatInterval, "10000")
	rm.RegisterNode("nm:45454", yarn.NodeResource{MemoryMB: 8192, VCores: 8})
	view := Compute(Batch{MilliCPU: 8000, MemoryBytes: 8 << 30}, true, Batch{MilliCPU: 6000, MemoryBytes: 6656 << 20}, Batch{MilliCPU: 3000, MemoryBytes: 2304 << 20})
	var w rmrelease.Window
	s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return "nm:45454" },
		View: func() View { return view }, Release: &w, PreemptionTimeout: func() time.Duration { return 3 * time.Second },
		NMResync: func() time.Duration { return time.Second }})
	now := time.Now()
	s.Step(context.Background(), now)
	require.Len(t, rm.Calls(), 1)
	// The slow RM preempts at its first heartbeat after the timeout (up to
	// 10 s later); koordlet must still be waiting then.
	rmPreempts := now.Add(3*time.Second + 10*time.Second)
	_, pending := w.Pending(rmPreempts)
	assert.True(t, pending, "koordlet still waits when the slow RM preempts")
	ask, _ := w.Pending(now)
	assert.Equal(t, 10*time.Second, s.Status().RMHeartbeat)
	assert.Equal(t, 22*time.Second, ask.Grace, "2 × 10 s heartbeat + 1 s resync + 1 s")

	// An RM whose /conf does not answer: the configured grace.
	rm2, client2 := startRMEmu(t)
	rm2.RegisterNode("nm:45454", yarn.NodeResource{MemoryMB: 8192, VCores: 8})
	var w2 rmrelease.Window
	s2 := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client2 }, NodeID: func() string { return "nm:45454" },
		View: func() View { return view }, Release: &w2, PreemptionTimeout: func() time.Duration { return 3 * time.Second },
		PreemptionGrace: func() time.Duration { return 7 * time.Second }})
	s2.Step(context.Background(), now)
	require.Len(t, rm2.Calls(), 1)
	ask2, _ := w2.Pending(now)
	assert.Equal(t, 7*time.Second, ask2.Grace)
}

// TestRMSyncGivesYARNsCapacityBack (item 10): the RM's capacity for the node
// before koordlet's first push is recorded in a file; a koordlet that
// crashed after shrinking it and starts again with the gate off gives it
// back (with the longest timeout the RM takes, since ours stays at the RM
// otherwise) and removes the record. A clean stop gives it back only
// without a record file (TestRMSyncRolloutKeepsTheCapacity: with one, it
// keeps the capacity).
func TestRMSyncGivesYARNsCapacityBack(t *testing.T) {
	setRMPreemption(t, true)
	rm, client := startRMEmu(t)
	const node = "nm:45454"
	own := yarn.NodeResource{MemoryMB: 4096, VCores: 8}
	rm.RegisterNode(node, own)
	record := filepath.Join(t.TempDir(), "yarn-rm-node-resource.json")
	view := Compute(Batch{MilliCPU: 8000, MemoryBytes: 8 << 30}, true, Batch{MilliCPU: 6000, MemoryBytes: 6656 << 20}, Batch{MilliCPU: 3000, MemoryBytes: 2304 << 20})
	newSync := func() *RMSync {
		return NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return node },
			View: func() View { return view }, Release: &rmrelease.Window{}, PreemptionTimeout: func() time.Duration { return 3 * time.Second },
			Record: func() string { return record }})
	}
	s := newSync()
	s.Step(context.Background(), time.Now())
	got, _ := rm.Node(node)
	require.Equal(t, yarn.NodeResource{MemoryMB: 1536, VCores: 2}, got, "shrunk below YARN's allocation")
	_, err := os.Stat(record)
	require.NoError(t, err, "YARN's own capacity recorded before the push")

	// koordlet crashes here; the next one starts with the gate off.
	giveBack(newSync())
	got, _ = rm.Node(node)
	assert.Equal(t, own, got, "YARN's own capacity given back")
	calls := rm.Calls()
	assert.EqualValues(t, math.MaxInt32, calls[len(calls)-1].OverCommitTimeout, "the RM's stale over-commit deadline moved out of the way")
	_, err = os.Stat(record)
	assert.ErrorIs(t, err, os.ErrNotExist, "the record is gone once given back")
	n := len(rm.Calls())
	giveBack(newSync())
	assert.Len(t, rm.Calls(), n, "nothing recorded: nothing sent")

	// Without a record file, a clean stop gives it back: the next koordlet
	// could not tell YARN's own capacity from koordlet's push.
	record = ""
	s, stop := newSync(), make(chan struct{})
	s.Run(stop)
	require.Eventually(t, func() bool { got, _ := rm.Node(node); return got != own }, 10*time.Second, 10*time.Millisecond)
	close(stop)
	s.Stop(context.Background())
	got, _ = rm.Node(node)
	assert.Equal(t, own, got)
	before := len(rm.Calls())
	s.Step(context.Background(), time.Now())
	assert.Len(t, rm.Calls(), before, "nothing pushed after the give-back")
}

// TestRMSyncRolloutKeepsTheCapacity (issue 55, item 7): a rollout stops
// koordlet and starts the next one with the gate on. Between the two the RM
// must keep the capacity koordlet pushed: the code before gave YARN's own
// capacity back at every clean stop, the RM placed a container in the gap
// up to it, and the next koordlet found YARN over its capacity and asked
// the RM to preempt (a fleet rollout as a wave of preemptions). The
// capacity is given back only by a koordlet started with the gate off.
func TestRMSyncRolloutKeepsTheCapacity(t *testing.T) {
	setRMPreemption(t, true)
	rm, client := startRMEmu(t)
	const node = "nm:45454"
	own := yarn.NodeResource{MemoryMB: 8192, VCores: 8}
	rm.RegisterNode(node, own)
	record := filepath.Join(t.TempDir(), "yarn-rm-node-resource.json")
	origin := Batch{MilliCPU: 8000, MemoryBytes: 8 << 30}
	k8s := Batch{MilliCPU: 2000, MemoryBytes: 2 << 30} // YARN's capacity: 6 GiB, 6 vcores
	yarnAlloc := Batch{MilliCPU: 3000, MemoryBytes: 4 << 30}
	newSync := func() *RMSync {
		return NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return node },
			View: func() View { return Compute(origin, true, k8s, yarnAlloc) }, Release: &rmrelease.Window{},
			PreemptionTimeout: func() time.Duration { return 3 * time.Second }, Record: func() string { return record }})
	}
	pushed := yarn.NodeResource{MemoryMB: 6 << 10, VCores: 6}

	old, stop := newSync(), make(chan struct{})
	old.Run(stop) // the gate on: the sync runs
	require.Eventually(t, func() bool { got, _ := rm.Node(node); return got == pushed }, 10*time.Second, 10*time.Millisecond)
	close(stop) // the rollout's SIGTERM: koordlet's daemon returns, then its shutdown
	old.Stop(context.Background())

	// The gap: the RM places a 3 GiB container if the node has room for it.
	held, _ := rm.Node(node)
	assert.Equal(t, pushed, held, "the RM keeps koordlet's capacity while no koordlet runs")
	if held.MemoryMB-yarnAlloc.MemoryBytes>>20 >= 3<<10 {
		yarnAlloc = yarnAlloc.Add(Batch{MilliCPU: 1000, MemoryBytes: 3 << 30})
	}

	// The next koordlet, gate on: it continues from the record.
	calls := len(rm.Calls())
	next := newSync()
	next.Step(context.Background(), time.Now())
	for _, c := range rm.Calls()[calls:] {
		assert.EqualValues(t, -1, c.OverCommitTimeout, "nothing over YARN's capacity: no preemption asked")
	}
	assert.LessOrEqual(t, yarnAlloc.MemoryBytes>>20, pushed.MemoryMB, "no container placed in the gap beyond YARN's capacity")
	held, _ = rm.Node(node)
	assert.Equal(t, pushed, held)
	require.NotNil(t, next.Status().Own)
	assert.Equal(t, own, *next.Status().Own, "YARN's own capacity from the record")

	// Turning the gate off gives it back, at that koordlet's start.
	next.Stop(context.Background())
	giveBack(newSync())
	held, _ = rm.Node(node)
	assert.Equal(t, own, held)
}

// TestGiveBackRetries (issue 55, item 5): the gate-off give-back goes on in
// the background, retried with backoff while the RM fails, until the RM
// takes it; the record counts it pending until then. Without an RM
// configured it ends at once (nothing can change before the next start),
// keeping the record.
func TestGiveBackRetries(t *testing.T) {
	rm, client := startRMEmu(t)
	const node = "nm:45454"
	own := yarn.NodeResource{MemoryMB: 8192, VCores: 8}
	rm.RegisterNode(node, yarn.NodeResource{MemoryMB: 4096, VCores: 4})
	record := filepath.Join(t.TempDir(), "yarn-rm-node-resource.json")
	require.NoError(t, writeRecord(record, capacityRecord{NodeID: node, Own: own, Since: time.Now()}))
	rm.SetMode(rmemu.ModeError, "")

	s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return node },
		View: func() View { return View{} }, Record: func() string { return record }})
	g := &GiveBack{Sync: s, Retry: time.Millisecond}
	stop := make(chan struct{})
	defer close(stop)
	g.Run(stop)
	require.Eventually(t, func() bool { return len(rm.Calls()) >= 2 }, 10*time.Second, time.Millisecond, "tried again after a failure")
	assert.Equal(t, 1, s.RestorePending(), "pending while the RM fails")
	rm.SetMode(rmemu.ModeActive, "")
	<-g.done
	got, _ := rm.Node(node)
	assert.Equal(t, own, got, "given back once the RM takes it")
	assert.Equal(t, 0, s.RestorePending())

	require.NoError(t, writeRecord(record, capacityRecord{NodeID: node, Own: own, Since: time.Now()}))
	none := &GiveBack{Sync: NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return nil }, Record: func() string { return record }})}
	none.Run(stop)
	<-none.done
	assert.Equal(t, 1, none.Sync.RestorePending(), "no RM: the record stays for a start with one")
}
