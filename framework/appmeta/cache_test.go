package appmeta

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

const app1 = "application_1700000000000_0007"

func startRM(t *testing.T) (*rmemu.Server, *yarn.RMClient) {
	rm, err := rmemu.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	c, err := yarn.NewRMClient(yarn.RMOptions{Endpoints: []string{rm.URL}, Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	return rm, c
}

func run(t *testing.T, c *Cache) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go c.Run(stop)
}

// eventually looks id up until it is known.
func eventually(t *testing.T, c *Cache, id string, within time.Duration) (App, bool) {
	var app App
	ok := assert.Eventually(t, func() bool {
		var known bool
		app, known = c.Lookup(id)
		return known
	}, within, 10*time.Millisecond)
	return app, ok
}

func TestCacheFetchesOnceAndKeeps(t *testing.T) {
	rm, client := startRM(t)
	rm.AddApp(rmemu.App{ID: app1, User: "alice", Queue: "root.transcode", ApplicationType: "MAPREDUCE",
		Tags: []string{"daily", "video"}, Priority: 3, AMContainer: "container_e17_1700000000000_0007_01_000001"})
	c := New(client, 0, time.Second)
	fetched := make(chan string, 4)
	c.OnFetched(func(id string) { fetched <- id })

	_, known := c.Lookup(app1)
	assert.False(t, known, "a miss answers unknown at once and queues a fetch")
	run(t, c)
	app, ok := eventually(t, c, app1, 2*time.Second)
	require.True(t, ok)
	assert.Equal(t, App{ID: app1, Queue: "root.transcode", Priority: 3, ApplicationType: "MAPREDUCE", Tags: []string{"daily", "video"},
		User: "alice", State: "RUNNING", AMContainer: "container_e17_1700000000000_0007_01_000001", AMAttempt: 1}, app)
	assert.Equal(t, app1, <-fetched)

	rm.SetMode(rmemu.ModeError, "")
	_, known = c.Lookup(app1)
	assert.True(t, known, "kept: fetched once")

	c.Retain(map[string]bool{})
	assert.Zero(t, c.Len(), "dropped when no container of it is left")
}

// TestCacheRMFaults: an RM that is down, standby, slow or answering garbage
// leaves the application unknown (NodeManager-only behaviour) without
// blocking lookups; once it answers, the data comes.
func TestCacheRMFaults(t *testing.T) {
	for _, mode := range []rmemu.Mode{rmemu.ModeStandby, rmemu.ModeSlow, rmemu.ModeGarbage, rmemu.ModeError} {
		t.Run(string(mode), func(t *testing.T) {
			rm, client := startRM(t)
			rm.AddApp(rmemu.App{ID: app1, User: "u", Queue: "root.a"})
			rm.SetMode(mode, "")
			c := New(client, 0, time.Second)
			run(t, c)
			for range 5 {
				_, known := c.Lookup(app1)
				require.False(t, known)
			}
			rm.SetMode(rmemu.ModeActive, "")
			app, ok := eventually(t, c, app1, 5*time.Second)
			require.True(t, ok, "retried with backoff until the RM answers")
			assert.Equal(t, "root.a", app.Queue)
		})
	}
}

// blockingFetcher is an RM that answers nothing until released.
type blockingFetcher struct {
	entered chan string
	release chan struct{}
}

func (f *blockingFetcher) App(ctx context.Context, appID string) (*yarn.RMApp, error) {
	f.entered <- appID
	select {
	case <-f.release:
		return &yarn.RMApp{ID: appID, Queue: "root.a"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestCacheLookupNeverWaitsForTheRM: while a fetch is stuck in the RM (it
// answers only when the test releases it), lookups of that application
// and of others answer unknown: a lookup that waited for the RM would not
// return before the release. Structural, not timed: the bound only turns a
// hang into a failure.
func TestCacheLookupNeverWaitsForTheRM(t *testing.T) {
	f := &blockingFetcher{entered: make(chan string, 4), release: make(chan struct{})}
	c := New(f, 0, time.Hour)
	run(t, c)
	_, known := c.Lookup(app1)
	require.False(t, known)
	select {
	case id := <-f.entered:
		require.Equal(t, app1, id)
	case <-time.After(10 * time.Second):
		t.Fatal("the fetch never started")
	}
	done := make(chan bool)
	go func() {
		_, k1 := c.Lookup(app1)
		_, k2 := c.Lookup("application_1700000000000_0008")
		done <- k1 || k2
	}()
	select {
	case k := <-done:
		assert.False(t, k, "unknown while the RM has not answered")
	case <-time.After(10 * time.Second):
		t.Fatal("a lookup waited for the RM")
	}
	close(f.release)
	app, ok := eventually(t, c, app1, 5*time.Second)
	require.True(t, ok)
	assert.Equal(t, "root.a", app.Queue)
}

func TestCacheUnknownAppAndBound(t *testing.T) {
	rm, client := startRM(t)
	c := New(client, 2, time.Second)
	run(t, c)
	_, known := c.Lookup(app1)
	assert.False(t, known)
	require.Eventually(t, func() bool { return c.Len() == 1 }, 2*time.Second, 10*time.Millisecond, "a 404 is remembered")
	_, known = c.Lookup(app1)
	assert.False(t, known, "unknown to the RM: not asked again at once")

	for i := 1; i <= 3; i++ {
		id := yarn.ContainerID{ClusterTimestamp: 1700000000000, AppID: int64(100 + i), AttemptID: 1, Sequence: 1}.ApplicationID()
		rm.AddApp(rmemu.App{ID: id, Queue: "root.q"})
		_, ok := eventually(t, c, id, 2*time.Second)
		require.True(t, ok)
	}
	assert.Equal(t, 2, c.Len(), "bounded: the least recently used go")
}

func TestNeedsRefresh(t *testing.T) {
	now := time.Unix(1700000000, 0)
	app := App{AMAttempt: 1}
	assert.False(t, NeedsRefresh(app, now.Add(-time.Minute), now, 1))
	assert.True(t, NeedsRefresh(app, now.Add(-time.Minute), now, 2), "a later attempt: a new AM")
	assert.False(t, NeedsRefresh(App{}, now.Add(-time.Minute), now, 2), "AM unknown: by age only")
	assert.True(t, NeedsRefresh(app, now.Add(-RefreshAfter), now, 0), "old")
}

// TestCacheRefreshesOnANewAttempt: the application is fetched while its
// first attempt runs; its AM fails and the RM starts attempt 2 with a new
// AM. A container of attempt 2 makes the cache fetch again, and the new AM
// is named; data older than RefreshAfter is fetched again too. The code
// before fetched each application once: the new AM was taken for an
// executor.
func TestCacheRefreshesOnANewAttempt(t *testing.T) {
	rm, client := startRM(t)
	rm.AddApp(rmemu.App{ID: app1, User: "alice", Queue: "root.a", AMContainer: "container_e17_1700000000000_0007_01_000001"})
	c := New(client, 0, time.Second)
	now := time.Now()
	c.now = func() time.Time { return now }
	run(t, c)
	app, ok := eventually(t, c, app1, 2*time.Second)
	require.True(t, ok)
	assert.Equal(t, int64(1), app.AMAttempt)

	rm.AddApp(rmemu.App{ID: app1, User: "alice", Queue: "root.b", AMContainer: "container_e17_1700000000000_0007_02_000001"})
	app, _ = c.LookupAttempt(app1, 1)
	assert.Equal(t, "root.a", app.Queue, "attempt 1: the data is current")
	require.Eventually(t, func() bool {
		app, _ = c.LookupAttempt(app1, 2)
		return app.AMContainer == "container_e17_1700000000000_0007_02_000001"
	}, 2*time.Second, 10*time.Millisecond, "a container of attempt 2: fetched again")
	assert.Equal(t, "root.b", app.Queue)

	rm.AddApp(rmemu.App{ID: app1, User: "alice", Queue: "root.c", AMContainer: "container_e17_1700000000000_0007_02_000001"})
	now = now.Add(RefreshAfter)
	require.Eventually(t, func() bool {
		app, _ = c.LookupAttempt(app1, 2)
		return app.Queue == "root.c"
	}, 2*time.Second, 10*time.Millisecond, "old data: fetched again")
}
