package yarnevict

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnevict/kill"
)

// countingSink is the API server side of Events: it counts what the
// event correlator lets through (created or patched Events).
type countingSink struct {
	mu    sync.Mutex
	calls int
}

func (s *countingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return e, nil
}
func (s *countingSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.Create(e) }
func (s *countingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.Create(e)
}
func (s *countingSink) n() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }

// TestEvictionStormIsAudited: 50 evictions in a storm, reported with a real
// event broadcaster: the event correlator lets far fewer than 50 Events on
// the NodeManager pod through (it merges similar ones and drops past its
// burst), while the audit keeps all 50, in the file (one JSON line each)
// and at /yarn/evictions (Recent). The code before had only the Events.
func TestEvictionStormIsAudited(t *testing.T) {
	sink := &countingSink{}
	b := record.NewBroadcaster()
	defer b.Shutdown()
	b.StartRecordingToSink(sink)
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "koordlet"})
	nmPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "yarn", Name: "nodemanager", UID: "nm"}}
	path := filepath.Join(t.TempDir(), "yarn-evictions.jsonl")
	audit := kill.NewAudit(func() string { return path }, 0, 0)
	const storm = 50
	for i := 0; i < storm; i++ {
		c := &store.Container{Name: fmt.Sprintf("container_1700000000000_0042_01_%06d", i+2), ApplicationID: "application_1700000000000_0042", User: "spark"}
		v := ContainerVictim(c, 0, int64(i+1)<<20, 0)
		v.Why = "priority 0"
		var err error
		if i%10 == 9 {
			err = fmt.Errorf("boom: %w", kill.ErrNothingReleased)
		}
		report(rec, nil, audit, "n1", nmPod, &v, kill.ReasonBEMemoryEvict, kill.KillResult{Signalled: 1, Passes: 1}, err)
	}
	require.Eventually(t, func() bool { return sink.n() > 0 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the broadcaster is asynchronous
	assert.Less(t, sink.n(), storm, "the correlator merged or dropped Events")

	records, total := audit.Recent()
	assert.Equal(t, storm, total)
	require.Len(t, records, storm)
	assert.Equal(t, "container_1700000000000_0042_01_000002", records[0].Container, "oldest first")
	assert.Equal(t, int64(1<<20), records[0].Released)
	assert.Equal(t, "succeeded", records[0].Outcome)
	assert.Equal(t, "failed", records[9].Outcome)
	assert.Zero(t, records[9].Released, "a failed eviction released nothing")
	assert.Contains(t, records[9].Error, "no memory was released")

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var r kill.AuditRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		assert.Equal(t, kill.ReasonBEMemoryEvict, r.Reason)
		assert.Equal(t, "spark", r.User)
	}
	assert.Equal(t, storm, lines)
}
