package yarnadopt

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// blockingNM is a NodeManager list that blocks until released and counts
// its calls.
type blockingNM struct {
	mu      sync.Mutex
	calls   int
	entered chan struct{}
	release chan struct{}
	list    []yarn.NMContainer
}

func newBlockingNM() *blockingNM {
	return &blockingNM{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (b *blockingNM) List(ctx context.Context) ([]yarn.NMContainer, error) {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.list, nil
}

func (b *blockingNM) Calls() int { b.mu.Lock(); defer b.mu.Unlock(); return b.calls }

// The NodeManager is asked at most once per interval however many unknown
// ids arrive, in the background: lookup never waits for it.
func TestNMListerAsksOncePerInterval(t *testing.T) {
	now := time.Unix(1000, 0)
	nm := newBlockingNM()
	known := containerName(2)
	cid, _ := yarn.ParseContainerID(known)
	nm.list = []yarn.NMContainer{{ID: cid, State: yarn.StateRunning, User: "alice"}}
	l := newNMLister(nm.List, func() time.Time { return now })

	for i := 0; i < 100; i++ {
		_, ok, _ := l.lookup(containerName(100 + i)) // returns at once: the list blocks
		require.False(t, ok)
	}
	<-nm.entered
	assert.Equal(t, 1, nm.Calls(), "one list for 100 unknown ids")
	close(nm.release)
	<-l.ready
	user, ok, asked := l.lookup(known)
	assert.True(t, ok)
	assert.False(t, asked)
	assert.Equal(t, "alice", user)

	// Within the interval, a new unknown id is asked for at the
	// interval's end (not left to the next scan): one more list, and ids
	// named meanwhile wait for it too.
	_, ok, asked = l.lookup(containerName(500))
	assert.False(t, ok)
	assert.True(t, asked)
	_, _, asked = l.lookup(containerName(502))
	assert.True(t, asked, "in flight: waits for the same list")
	<-nm.entered
	<-l.ready
	assert.Equal(t, 2, nm.Calls())
	// An id the last list missed is not asked for again before missRetry.
	now = now.Add(2 * l.interval)
	_, _, asked = l.lookup(containerName(100))
	assert.False(t, asked)
	// A new id an interval later: one more list.
	_, _, asked = l.lookup(containerName(501))
	assert.True(t, asked)
	<-nm.entered
	<-l.ready
	assert.Equal(t, 3, nm.Calls())
}
