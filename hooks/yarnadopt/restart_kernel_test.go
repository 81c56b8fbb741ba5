package yarnadopt

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
)

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// killRecorder is the adopter's Kill: it records the names and ends
// nothing.
type killRecorder struct {
	mu    sync.Mutex
	names map[string]bool
}

func (k *killRecorder) kill(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.names == nil {
		k.names = map[string]bool{}
	}
	k.names[name] = true
	return nil
}

// started returns the kills a's sweeps started: those Kill saw and those
// still in flight (each runs in its own goroutine), sorted.
func (k *killRecorder) started(a *Adopter) []string {
	set := map[string]bool{}
	a.life.mu.Lock()
	for n := range a.life.killing {
		set[n] = true
	}
	a.life.mu.Unlock()
	k.mu.Lock()
	for n := range k.names {
		set[n] = true
	}
	k.mu.Unlock()
	out := []string{}
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// resync is the container informer's resync on the test's node: a real
// scan of the YARN hierarchy, and the NodeManager's answer listing running
// (nmOK false: the NodeManager could not be asked).
func (n *node) resync(t *testing.T, now time.Time, nmOK bool, running ...string) {
	t.Helper()
	scan, err := cgroups.NewScanner(n.h).Scan()
	require.NoError(t, err)
	var nm []yarn.NMContainer
	for _, name := range running {
		id, err := yarn.ParseContainerID(name)
		require.NoError(t, err)
		nm = append(nm, yarn.NMContainer{ID: id, State: yarn.StateRunning})
	}
	n.st.Resync(store.Observation{Scan: scan.Containers, ScanOK: true, NM: nm, NMOK: nmOK, Started: now}, now)
}

// restarted is a node whose earlier koordlet adopted containers c2 and c3
// (their processes run in the cgroups it made), and the adopter of the
// koordlet started after it, with a fresh store, a NodeManager pod that
// runs, a fake clock and a Kill that records.
func restarted(t *testing.T) (n *node, a *Adopter, clk *fakeClock, kills *killRecorder, c2, c3 string) {
	n = newNode(t)
	c2, c3 = containerName(2), containerName(3)
	for _, id := range []string{c2, c3} {
		dirs, err := ensureLeaf(n.h, id, nil)
		require.NoError(t, err)
		p := kerneltest.Start(t, "exec sleep 3600", dirs...)
		require.NoError(t, p.Release())
	}
	clk = &fakeClock{t: time.Now()}
	kills = &killRecorder{}
	a = New(Options{Store: n.st, ScanInterval: time.Second, Now: clk.now, Kill: kills.kill,
		Hierarchy:   func() (cgroups.Hierarchy, bool) { return n.h, true },
		NMPodCgroup: func() (string, string, bool) { return n.pod, "test/nodemanager", true }})
	return n, a, clk, kills, c2, c3
}

// step moves the clock on by d, resyncs (see node.resync) and sweeps.
func step(t *testing.T, n *node, a *Adopter, clk *fakeClock, d time.Duration, nmOK bool, running ...string) {
	t.Helper()
	clk.add(d)
	n.resync(t, clk.now(), nmOK, running...)
	a.Scan()
}

// TestRealKernelRestartWithTheNMUnreachable (issue 55 item 1): koordlet
// restarted while the NodeManager's REST port refuses connections (its
// pod runs). The store is rebuilt from the cgroup scan alone; 10 minutes
// on, nothing is killed: a NodeManager that cannot be asked is no evidence
// that a container is gone, however long. Before, every adopted container
// was killed at orphanGrace ("listed by no NodeManager for 10m0s").
func TestRealKernelRestartWithTheNMUnreachable(t *testing.T) {
	n, a, clk, kills, c2, c3 := restarted(t)
	step(t, n, a, clk, 0, false)
	for range 11 {
		step(t, n, a, clk, time.Minute, false)
	}
	assert.Empty(t, kills.started(a), "nothing is killed while the NodeManager cannot be asked")
	for _, id := range []string{c2, c3} {
		assert.True(t, leafBusy(n.h, id), "%s runs on in its cgroup", id)
	}
}

// TestRealKernelRestartNMAnswersOnceThenDown: after the restart the
// NodeManager answers once, listing both containers, then cannot be asked
// for more than orphanGrace: its last answer stands (lifecycle.go), nothing
// is killed.
func TestRealKernelRestartNMAnswersOnceThenDown(t *testing.T) {
	n, a, clk, kills, c2, c3 := restarted(t)
	step(t, n, a, clk, 0, false)
	step(t, n, a, clk, 10*time.Second, true, c2, c3)
	for range 11 {
		step(t, n, a, clk, time.Minute, false)
	}
	assert.Empty(t, kills.started(a))
}

// TestRealKernelRestartNMOmitsAContainer: after the restart the
// NodeManager answers without c2 (it was restarted without recovery):
// that is evidence, and c2 is ended once that has held for orphanGrace;
// while the NodeManager cannot be asked in between, its stale word holds
// the count (no kill then), and the next answer that still omits c2 ends
// it. c3, listed throughout, runs on.
func TestRealKernelRestartNMOmitsAContainer(t *testing.T) {
	n, a, clk, kills, c2, c3 := restarted(t)
	step(t, n, a, clk, 0, false)
	step(t, n, a, clk, 10*time.Second, true, c3) // c2 omitted: its count begins
	step(t, n, a, clk, 5*time.Minute, true, c3)
	for range 6 { // the NodeManager cannot be asked past the grace
		step(t, n, a, clk, time.Minute, false)
	}
	assert.Empty(t, kills.started(a), "no kill on the stale word of a NodeManager that cannot be asked now")
	step(t, n, a, clk, 10*time.Second, true, c3)
	assert.Equal(t, []string{c2}, kills.started(a), "an answer that still omits c2: ended")
}
