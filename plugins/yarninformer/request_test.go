package yarninformer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// TestRequestResync: a requested resync runs at once, long before the
// periodic one, and requests never block (before Start, many at once).
func TestRequestResync(t *testing.T) {
	root := newFakeRoot(t)
	nm := newFakeNM(t)
	st := store.New()
	cfg := testConfig(nm.srv.URL)
	cfg.ResyncInterval = time.Hour
	p := New(cfg, st, nil)
	p.Setup(nil, nil)
	for i := 0; i < 3; i++ {
		p.RequestResync() // before Start: kept (one), never blocks
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { p.Start(stop); close(done) }()
	t.Cleanup(func() { close(stop); <-done })
	require.Eventually(t, p.HasSynced, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return nm.calls.Load() == 2 }, 5*time.Second, 10*time.Millisecond,
		"the request made before Start runs once after the first resync")

	root.addContainer(t, execName, "22\n")
	p.RequestResync()
	require.Eventually(t, func() bool { return st.Len() == 1 }, 2*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, int64(3), nm.calls.Load())
}
