package store

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

func TestUnsubscribeTwice(t *testing.T) {
	s := New()
	unsubscribe := s.Subscribe("t", func(Event) {})
	assert.NotPanics(t, unsubscribe)
	assert.NotPanics(t, unsubscribe, "unsubscribe is idempotent")
	assert.Empty(t, s.subs)
}

// recorder is a handler that records events and can be held on its first
// event.
type recorder struct {
	mu      sync.Mutex
	events  []Event
	started chan struct{} // closed when the first event arrives
	release chan struct{} // the first event's handler waits for it
}

func newRecorder() *recorder {
	return &recorder{started: make(chan struct{}), release: make(chan struct{})}
}

func (r *recorder) handle(ev Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	first := len(r.events) == 1
	r.mu.Unlock()
	if first {
		close(r.started)
		<-r.release
	}
}

func (r *recorder) types() []EventType {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []EventType{}
	for _, ev := range r.events {
		out = append(out, ev.Type)
	}
	return out
}

// countingWriter counts the klog lines that contain a marker.
type countingWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// lines counts the distinct lines with the marker (klog writes a warning to
// both its WARNING and INFO outputs, here the same writer).
func (w *countingWriter) lines() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]bool{}
	for _, l := range strings.Split(w.buf.String(), "\n") {
		if strings.Contains(l, w.marker) {
			seen[l] = true
		}
	}
	return len(seen)
}

func captureKlog(t *testing.T, marker string) *countingWriter {
	w := &countingWriter{marker: marker}
	klog.LogToStderr(false)
	klog.SetOutput(w)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	return w
}

func observeCreated(s *Store, seq int64, at time.Time) {
	id := cid(seq)
	s.Observe(CgroupEvent{Type: CgroupCreated, Name: id.String(), ID: id, Controller: cgroups.CPU,
		Dir: "kubepods/besteffort/hadoop-yarn/" + id.String()}, at)
}

// TestSubscriberOverflowBecomesResyncNeeded: a handler blocked while more
// than SubscriberQueueCap events arrive gets, once it returns, one
// ResyncNeeded event instead of them (the queue never grows past the cap),
// one line is logged for the episode, and afterwards events flow again.
func TestSubscriberOverflowBecomesResyncNeeded(t *testing.T) {
	logs := captureKlog(t, "fell more than")
	s := New()
	rec := newRecorder()
	unsubscribe := s.Subscribe("blocked", rec.handle)
	defer unsubscribe()
	require.Len(t, s.subs, 1)
	sub := s.subs[0]

	observeCreated(s, 1, t0)
	select {
	case <-rec.started:
	case <-time.After(5 * time.Second):
		t.Fatal("first event not delivered")
	}
	// The handler is blocked on container 1; many more changes arrive.
	n := 2 * SubscriberQueueCap
	for i := 0; i < n; i++ {
		observeCreated(s, int64(2+i), t0)
		sub.mu.Lock()
		queued := len(sub.queue)
		sub.mu.Unlock()
		require.LessOrEqual(t, queued, SubscriberQueueCap, "the queue is bounded")
	}
	sub.mu.Lock()
	assert.Equal(t, []Event{{Type: ResyncNeeded}}, sub.queue, "the queued events were replaced by one ResyncNeeded")
	assert.Equal(t, 1, sub.overflows)
	sub.mu.Unlock()
	assert.Equal(t, 1, logs.lines(), "one log line per overflow episode")

	close(rec.release)
	require.Eventually(t, func() bool { return len(rec.types()) == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []EventType{Added, ResyncNeeded}, rec.types())
	assert.Equal(t, n+1, len(s.Snapshot()), "the snapshot the handler re-reads holds every change")

	// The episode is over: events flow again.
	observeCreated(s, int64(n+2), t0)
	require.Eventually(t, func() bool { return len(rec.types()) == 3 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, Added, rec.types()[2])
	sub.mu.Lock()
	assert.Equal(t, 1, sub.overflows)
	sub.mu.Unlock()
	assert.Equal(t, 1, logs.lines())
}

// TestSubscribeReplayLargerThanCap: a store holding more containers than
// the cap replays them as one ResyncNeeded.
func TestSubscribeReplayLargerThanCap(t *testing.T) {
	captureKlog(t, "")
	s := New()
	for i := 0; i <= SubscriberQueueCap; i++ {
		observeCreated(s, int64(1+i), t0)
	}
	got := make(chan Event, 4)
	unsubscribe := s.Subscribe("late", func(ev Event) { got <- ev })
	defer unsubscribe()
	select {
	case ev := <-got:
		assert.Equal(t, ResyncNeeded, ev.Type)
		assert.Nil(t, ev.Container)
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	assert.Equal(t, "resync-needed", ResyncNeeded.String())
}

// TestSubscriberPanicOnResyncNeededContained: the panic log line of a
// ResyncNeeded event (no container) does not itself panic.
func TestSubscriberPanicOnResyncNeededContained(t *testing.T) {
	sub := newSubscriber("bad", func(Event) { panic("boom") })
	assert.NotPanics(t, func() { sub.deliver(Event{Type: ResyncNeeded}) })
}
