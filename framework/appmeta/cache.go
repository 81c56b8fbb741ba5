// Package appmeta caches what the ResourceManager says of the node's YARN
// applications — queue, priority, type, tags, user and the AM container —
// for the QoS policy. Each application is fetched (GET
// /ws/v1/cluster/apps/{appid}, through the RM client the ledger shares),
// fetched again when a container of a later attempt than the known AM's
// appears (a new attempt has a new AM) and every RefreshAfter, and kept
// until no container of it is left on the node; the cache is bounded. Lookups never wait for the RM: a miss queues a fetch and
// answers "unknown" (the NodeManager-only behaviour). An RM that is down,
// slow, standby or answering garbage gets one log line, and the fetches
// are retried with a backoff; one line says when it answers again.
package appmeta

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/backoff"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Defaults.
const (
	DefaultMaxApps = 4096
	// Backoff of fetches while the RM fails: doubling from min to max.
	minBackoff = time.Second
	maxBackoff = 2 * time.Minute
	// notFoundRetry is when an application the RM did not know (404) is
	// asked again.
	notFoundRetry = 5 * time.Minute
	// RefreshAfter is the age at which a known application is fetched
	// again (its queue, priority or AM may have changed: a move, a new
	// attempt); the old data is served meanwhile.
	RefreshAfter = 5 * time.Minute
)

// App is the ResourceManager's view of one application.
type App struct {
	ID              string   `json:"id"`
	Queue           string   `json:"queue"`
	Priority        int64    `json:"priority"`
	ApplicationType string   `json:"applicationType"`
	Tags            []string `json:"applicationTags,omitempty"`
	User            string   `json:"user"`
	State           string   `json:"state"`
	// AMContainer is the AM container's id (from amContainerLogs); empty
	// when the RM did not name it. AMAttempt is its attempt (0: unknown).
	AMContainer string `json:"amContainer,omitempty"`
	AMAttempt   int64  `json:"amAttempt,omitempty"`
}

// Fetcher fetches an application report (yarn.RMClient).
type Fetcher interface {
	App(ctx context.Context, appID string) (*yarn.RMApp, error)
}

type entry struct {
	app       App
	known     bool      // app holds the RM's answer
	fetchedAt time.Time // when the answer came
	retryAt   time.Time // for an application the RM did not know
	lastUsed  time.Time
}

// Cache is the application cache. The zero value is not usable: use New.
type Cache struct {
	fetch   Fetcher
	max     int
	timeout time.Duration
	now     func() time.Time

	mu      sync.Mutex
	apps    map[string]*entry
	pending map[string]bool
	queue   chan string
	// failing: the RM failed at the last fetch (logged once); backoff
	// holds the wait before the next fetch (from minBackoff, doubling,
	// jittered; 0 while the RM answers).
	failing bool
	backoff *backoff.Backoff
	// onFetched runs after an application's data came.
	onFetched []func(appID string)
}

// New returns a cache fetching through f, with at most max applications
// (0: DefaultMaxApps); each fetch is bounded by timeout (the RM client also
// bounds each request).
func New(f Fetcher, max int, timeout time.Duration) *Cache {
	if max <= 0 {
		max = DefaultMaxApps
	}
	return &Cache{fetch: f, max: max, timeout: timeout, now: time.Now, apps: map[string]*entry{},
		pending: map[string]bool{}, queue: make(chan string, max), backoff: backoff.New(maxBackoff)}
}

// OnFetched registers f to run (in the fetching goroutine) after an
// application's data came, e.g. to apply its QoS tier at once.
func (c *Cache) OnFetched(f func(appID string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onFetched = append(c.onFetched, f)
}

// Lookup returns the application's data when known. It never blocks: a
// miss queues a fetch (at most once at a time per application), and so does
// data older than RefreshAfter (served meanwhile).
func (c *Cache) Lookup(appID string) (App, bool) {
	return c.LookupAttempt(appID, 0)
}

// NeedsRefresh reports whether known data fetched at fetchedAt is to be
// fetched again for a container of attempt (0: unknown): a later attempt
// than the AM the data names has a new AM, and data older than
// RefreshAfter may be stale.
func NeedsRefresh(app App, fetchedAt, now time.Time, attempt int64) bool {
	if attempt > 0 && app.AMAttempt > 0 && attempt > app.AMAttempt {
		return true
	}
	return now.Sub(fetchedAt) >= RefreshAfter
}

// LookupAttempt is Lookup for a container of the given attempt: a container
// of a later attempt than the known AM's queues a fetch at once, so that
// the new attempt's AM is told apart. It never blocks.
func (c *Cache) LookupAttempt(appID string, attempt int64) (App, bool) {
	if c == nil || appID == "" {
		return App{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if e, ok := c.apps[appID]; ok {
		e.lastUsed = now
		if e.known {
			if NeedsRefresh(e.app, e.fetchedAt, now, attempt) {
				c.enqueue(appID)
			}
			return e.app, true
		}
		if now.Before(e.retryAt) {
			return App{}, false
		}
	}
	c.enqueue(appID)
	return App{}, false
}

// enqueue queues a fetch of appID unless one is pending; mu held.
func (c *Cache) enqueue(appID string) {
	if c.pending[appID] {
		return
	}
	select {
	case c.queue <- appID:
		c.pending[appID] = true
	default: // full: asked again at the next lookup
	}
}

// Len returns the number of applications held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.apps)
}

// Retain drops the applications not in live (they ended on this node: no
// container of theirs is left), and queued fetches of them.
func (c *Cache) Retain(live map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.apps {
		if !live[id] {
			delete(c.apps, id)
		}
	}
	for id := range c.pending {
		if !live[id] {
			delete(c.pending, id) // the worker skips it
		}
	}
}

// Run fetches queued applications one at a time until stopCh closes.
func (c *Cache) Run(stopCh <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stopCh
		cancel()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-c.queue:
			c.fetchOne(ctx, id)
			c.mu.Lock()
			wait := c.backoff.Delay()
			c.mu.Unlock()
			if wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
		}
	}
}

// fetchOne fetches id and records the outcome.
func (c *Cache) fetchOne(ctx context.Context, id string) {
	c.mu.Lock()
	if !c.pending[id] {
		c.mu.Unlock()
		return // dropped by Retain
	}
	c.mu.Unlock()
	fctx, cancel := context.WithTimeout(ctx, c.timeout)
	report, err := c.fetch.App(fctx, id)
	cancel()
	if ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	var notFound *yarn.RMHTTPError
	switch {
	case err == nil:
		app := fromReport(report)
		if app.ID != id {
			err = errors.New("the ResourceManager answered for application " + app.ID)
			break
		}
		c.store(id, &entry{app: app, known: true, fetchedAt: c.now()})
	case errors.As(err, &notFound) && notFound.StatusCode == http.StatusNotFound:
		delete(c.pending, id)
		c.store(id, &entry{retryAt: c.now().Add(notFoundRetry)})
		c.recovered()
		c.mu.Unlock()
		klog.V(2).Infof("yarn: the ResourceManager does not know application %s; asked again in %v", id, notFoundRetry)
		return
	}
	if err != nil {
		// Down, slow, standby, garbage: keep it queued, back off.
		c.backoff.Fail(minBackoff)
		if !c.failing {
			c.failing = true
			klog.Warningf("yarn: ResourceManager application data unavailable, the QoS policy uses the NodeManager's data only (retrying with backoff up to %v): %v", maxBackoff, err)
		}
		select {
		case c.queue <- id:
		default:
			delete(c.pending, id)
		}
		c.mu.Unlock()
		return
	}
	delete(c.pending, id)
	c.recovered()
	hooks := append([]func(string){}, c.onFetched...)
	c.mu.Unlock()
	for _, f := range hooks {
		f(id)
	}
}

// recovered resets the backoff after an answer; mu held.
func (c *Cache) recovered() {
	c.backoff.Reset()
	if c.failing {
		c.failing = false
		klog.Infof("yarn: the ResourceManager answers again; application data is fetched")
	}
}

// store adds e under id, dropping the least recently used entries beyond
// the bound; mu held.
func (c *Cache) store(id string, e *entry) {
	e.lastUsed = c.now()
	c.apps[id] = e
	if len(c.apps) <= c.max {
		return
	}
	ids := make([]string, 0, len(c.apps))
	for k := range c.apps {
		ids = append(ids, k)
	}
	sort.Slice(ids, func(i, j int) bool { return c.apps[ids[i]].lastUsed.Before(c.apps[ids[j]].lastUsed) })
	for _, k := range ids[:len(c.apps)-c.max] {
		delete(c.apps, k)
	}
}

func fromReport(r *yarn.RMApp) App {
	a := App{ID: r.ID, Queue: r.Queue, Priority: r.Priority, ApplicationType: r.ApplicationType,
		Tags: r.ApplicationTags, User: r.User, State: r.State}
	if id, ok := r.AMContainerID(); ok {
		a.AMContainer, a.AMAttempt = id.String(), id.AttemptID
	}
	return a
}
