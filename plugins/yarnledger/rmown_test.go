package yarnledger

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/rmrelease"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

// flakyRM is an emulated RM behind a handler that can fail the next reads
// of a node (503), or apply the next pushes and then answer 500 (a push
// the RM took whose answer koordlet never saw).
type flakyRM struct {
	*rmemu.RM
	URL string

	mu sync.Mutex
	// failReads: how many node reads still fail; lostAnswers: how many
	// pushes are still applied and answered 500.
	failReads, lostAnswers int
}

func startFlakyRM(t *testing.T) (*flakyRM, *yarn.RMClient) {
	t.Helper()
	f := &flakyRM{RM: rmemu.New()}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	client, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{srv.URL}, User: "yarn", Timeout: time.Second})
	require.NoError(t, err)
	return f, client
}

func (f *flakyRM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	isNode := strings.HasPrefix(r.URL.Path, "/ws/v1/cluster/nodes/")
	push := isNode && strings.HasSuffix(r.URL.Path, "/resource") && r.Method == http.MethodPost
	f.mu.Lock()
	failRead := isNode && !push && r.Method == http.MethodGet && f.failReads > 0
	if failRead {
		f.failReads--
	}
	lose := push && f.lostAnswers > 0
	if lose {
		f.lostAnswers--
	}
	f.mu.Unlock()
	switch {
	case failRead:
		http.Error(w, "emulated: the RM's web threads are busy", http.StatusServiceUnavailable)
	case lose:
		f.RM.ServeHTTP(httptest.NewRecorder(), r)
		http.Error(w, "emulated: the answer was lost", http.StatusInternalServerError)
	default:
		f.RM.ServeHTTP(w, r)
	}
}

func (f *flakyRM) set(failReads, lostAnswers int) {
	f.mu.Lock()
	f.failReads, f.lostAnswers = failReads, lostAnswers
	f.mu.Unlock()
}

// TestRMSyncNeverRecordsItsOwnPush (issue 55, item 6): YARN's own capacity
// is never taken from a value koordlet pushed.
//   - The first read of the node fails: the code before pushed all the same;
//     the next read, before the next push, returned koordlet's own shrunk
//     capacity, which was recorded as YARN's and given back ever after.
//     Now nothing is pushed before YARN's own capacity is read and recorded.
//   - A push the RM took but whose answer was lost, then the capacity back
//     to what was pushed before: the read-back finds the lost push's value.
//     The code before took that drift for the NodeManager's yarn-site
//     capacity (YARN's own); a value koordlet sent is never YARN's own.
func TestRMSyncNeverRecordsItsOwnPush(t *testing.T) {
	setRMPreemption(t, false)
	const node = "nm:45454"
	own := yarn.NodeResource{MemoryMB: 8192, VCores: 8}
	origin := Batch{MilliCPU: 8000, MemoryBytes: 8 << 30}

	t.Run("the first read fails", func(t *testing.T) {
		rm, client := startFlakyRM(t)
		rm.RegisterNode(node, own)
		record := filepath.Join(t.TempDir(), "record.json")
		view := Compute(origin, true, Batch{MilliCPU: 2000, MemoryBytes: 2 << 30}, Batch{})
		s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return node },
			View: func() View { return view }, Release: &rmrelease.Window{}, Record: func() string { return record }})
		ctx := context.Background()
		now := time.Now()

		rm.set(1, 0)
		s.Step(ctx, now)
		got, _ := rm.Node(node)
		assert.Equal(t, own, got, "nothing pushed before YARN's own capacity is known")
		assert.NotEmpty(t, s.Status().LastError, "the failed read is an RM error (backoff, read again)")

		// A batch pod arrives: the capacity moves; past any backoff.
		view = Compute(origin, true, Batch{MilliCPU: 3000, MemoryBytes: 3 << 30}, Batch{})
		for i := 1; i <= 3; i++ {
			s.Step(ctx, now.Add(time.Duration(i)*10*time.Minute))
		}
		got, _ = rm.Node(node)
		require.Equal(t, yarn.NodeResource{MemoryMB: 5 << 10, VCores: 5}, got, "pushed once YARN's own capacity is recorded")
		rec, err := readRecord(record)
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.Equal(t, own, rec.Own, "the record holds YARN's own capacity, not one koordlet pushed")
		require.NotNil(t, s.Status().Own)
		assert.Equal(t, own, *s.Status().Own)

		ok, err := s.Restore(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		got, _ = rm.Node(node)
		assert.Equal(t, own, got, "the give-back gives YARN's own capacity")
	})

	t.Run("a lost answer, then a read-back", func(t *testing.T) {
		rm, client := startFlakyRM(t)
		rm.RegisterNode(node, own)
		record := filepath.Join(t.TempDir(), "record.json")
		k8s := Batch{MilliCPU: 2000, MemoryBytes: 2 << 30}
		s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return node },
			View: func() View { return Compute(origin, true, k8s, Batch{}) }, Release: &rmrelease.Window{}, Record: func() string { return record }})
		ctx := context.Background()
		now := time.Now()

		s.Step(ctx, now)
		first, _ := rm.Node(node)
		require.Equal(t, yarn.NodeResource{MemoryMB: 6 << 10, VCores: 6}, first)

		// A batch pod arrives; the RM takes the push, its answer is lost.
		k8s = Batch{MilliCPU: 3000, MemoryBytes: 3 << 30}
		rm.set(0, 1)
		s.Step(ctx, now.Add(time.Minute))
		lost, _ := rm.Node(node)
		require.Equal(t, yarn.NodeResource{MemoryMB: 5 << 10, VCores: 5}, lost, "the RM took the push")
		require.NotEmpty(t, s.Status().LastError)

		// The pod leaves again: the capacity is what the RM last answered
		// for; the read-back after the error finds the lost push's value.
		k8s = Batch{MilliCPU: 2000, MemoryBytes: 2 << 30}
		s.Step(ctx, now.Add(20*time.Minute))
		got, _ := rm.Node(node)
		require.Equal(t, first, got, "pushed again")
		rec, err := readRecord(record)
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.Equal(t, own, rec.Own, "a value koordlet sent is not YARN's own")
		require.NotNil(t, s.Status().Own)
		assert.Equal(t, own, *s.Status().Own)

		// A real drift (the NodeManager restarted with a new yarn-site
		// capacity) is still YARN's own.
		yarnSite := yarn.NodeResource{MemoryMB: 12 << 10, VCores: 12}
		rm.RegisterNode(node, yarnSite)
		s.Step(ctx, now.Add(40*time.Minute))
		rec, err = readRecord(record)
		require.NoError(t, err)
		assert.Equal(t, yarnSite, rec.Own, "the NodeManager's new capacity is YARN's own")
	})

	t.Run("the record cannot be written", func(t *testing.T) {
		rm, client := startFlakyRM(t)
		rm.RegisterNode(node, own)
		record := filepath.Join(t.TempDir(), "no-such-dir", "record.json")
		s := NewRMSync(RMSyncOptions{Client: func() *yarn.RMClient { return client }, NodeID: func() string { return node },
			View:   func() View { return Compute(origin, true, Batch{MilliCPU: 2000, MemoryBytes: 2 << 30}, Batch{}) },
			Record: func() string { return record }})
		s.Step(context.Background(), time.Now())
		got, _ := rm.Node(node)
		assert.Equal(t, own, got, "nothing pushed while YARN's own capacity cannot be recorded: a koordlet after a restart would read back koordlet's push as YARN's own")
		assert.Empty(t, rm.Calls())
		assert.Contains(t, s.Status().LastError, "record")
	})
}
