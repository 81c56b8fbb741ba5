package lsslo

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koordinator-sh/koordinator/apis/extension"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
)

// clock is a test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is a collector driven step by step, without its loop.
type harness struct {
	t     *testing.T
	c     *Collector
	clock *clock
	pods  []*corev1.Pod
	ctx   context.Context
}

func newHarness(t *testing.T, cfg config.SLO, nm func(*corev1.Pod) bool) *harness {
	h := &harness{t: t, clock: &clock{t: time.Unix(10000, 0)}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.ctx = ctx
	c, err := New(Options{Enabled: func() bool { return true }, Config: &cfg, Registerer: prometheus.NewRegistry(), Now: h.clock.Now,
		IsNodeManagerPod: nm,
		Pods: func() []*statesinformer.PodMeta {
			var out []*statesinformer.PodMeta
			for _, p := range h.pods {
				out = append(out, &statesinformer.PodMeta{Pod: p})
			}
			return out
		}})
	require.NoError(t, err)
	c.prepare()
	h.c = c
	return h
}

// step runs one interval: a tick, then every scrape it started is applied.
func (h *harness) step() {
	before := h.inFlight()
	h.c.tick(h.ctx)
	for n := h.inFlight() - before; n > 0; n-- {
		h.apply()
	}
	h.clock.Advance(time.Second)
}

// apply waits for one scrape's result and applies it.
func (h *harness) apply() {
	select {
	case r := <-h.c.results:
		h.c.apply(r)
	case <-time.After(30 * time.Second):
		h.t.Fatal("no scrape result within 30s")
	}
}

func (h *harness) inFlight() int {
	n := 0
	for _, lp := range h.c.pods {
		if lp.inFlight {
			n++
		}
	}
	return n
}

func (h *harness) pod(name string) PodSLO {
	sig, ok := h.c.Latest()
	require.True(h.t, ok)
	for _, p := range sig.Pods {
		if p.Pod == "default/"+name {
			return p
		}
	}
	h.t.Fatalf("pod %s not in the signal %+v", name, sig)
	return PodSLO{}
}

func (h *harness) errors(reason string) float64 {
	return testutil.ToFloat64(h.c.metrics.errors.WithLabelValues(reason))
}

func testCfg() config.SLO {
	c := config.DefaultSLO()
	c.ScrapeTimeout = 5 * time.Second
	return c
}

func lsPod(name, ip, annotation string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{extension.LabelPodQoS: string(extension.QoSLS)}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, QOSClass: corev1.PodQOSBurstable},
	}
	if annotation != "" {
		p.Annotations = map[string]string{Annotation: annotation}
	}
	return p
}

// serve starts a server answering handler and returns a pod declaring
// decl (a JSON object's fields without the port) on it.
func serve(t *testing.T, name, decl string, handler http.HandlerFunc) *corev1.Pod {
	s := httptest.NewServer(handler)
	t.Cleanup(s.Close)
	host, port, err := net.SplitHostPort(s.Listener.Addr().String())
	require.NoError(t, err)
	return lsPod(name, host, `{"port":`+port+`,`+decl+`}`)
}

// histogram serves a histogram growing by 10 requests per scrape: 5 under
// 10 ms, 5 in (10, 100] ms, for handler "/", and noise for handler "/x".
func histogram(contentType string, counter *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		n := counter.Add(1)
		w.Header().Set("Content-Type", contentType)
		fmt.Fprintf(w, "# TYPE lat_seconds histogram\n")
		fmt.Fprintf(w, "lat_seconds_bucket{handler=\"/\",le=\"0.01\"} %d\nlat_seconds_bucket{handler=\"/\",le=\"0.1\"} %d\nlat_seconds_bucket{handler=\"/\",le=\"+Inf\"} %d\n", 5*n, 10*n, 10*n)
		fmt.Fprintf(w, "lat_seconds_count{handler=\"/\"} %d\n", 10*n)
		fmt.Fprintf(w, "lat_seconds_bucket{handler=\"/x\",le=\"0.01\"} 0\nlat_seconds_bucket{handler=\"/x\",le=\"0.1\"} 0\nlat_seconds_bucket{handler=\"/x\",le=\"+Inf\"} %d\n", 100*n)
		if contentType == omCT {
			fmt.Fprintf(w, "# EOF\n")
		}
	}
}

const decl = `"metric":"lat_seconds","labels":{"handler":"/"},"targetMilliseconds":200`

func TestCollectorGoodHistogram(t *testing.T) {
	for _, ct := range []string{textCT, omCT} {
		t.Run(ct, func(t *testing.T) {
			h := newHarness(t, testCfg(), nil)
			var n atomic.Int64
			h.pods = []*corev1.Pod{serve(t, "web", decl, histogram(ct, &n))}
			h.step()
			assert.True(t, h.pod("web").Quiet, "one scrape: no window yet")
			h.step()
			assert.True(t, h.pod("web").Quiet, "10 requests, fewer than 20")
			h.step()
			p := h.pod("web")
			require.True(t, p.Known, "%+v", p)
			// 20 requests: 10 ≤ 10ms, 10 in (10, 100]: p99 = 10 + 90×9.8/10 ms.
			assert.Equal(t, 98200*time.Microsecond, p.Latency.Round(time.Microsecond))
			assert.InDelta(t, 0.509, p.Slack, 1e-9)
			assert.Equal(t, uint64(20), p.Requests)
			assert.Equal(t, 2*time.Second, p.Window)
			assert.True(t, p.ShortWindow, "3 scrapes span 2 s of the 5 s window")
			assert.Equal(t, 200*time.Millisecond, p.Target)
			sig, ok := h.c.Latest()
			require.True(t, ok)
			assert.Equal(t, 1, sig.Declared)
			assert.Equal(t, "default/web", sig.Worst.Pod)
			assert.InDelta(t, 0.509, testutil.ToFloat64(h.c.metrics.worst.WithLabelValues()), 1e-9)
			assert.InDelta(t, 0.0982, testutil.ToFloat64(h.c.metrics.latency.WithLabelValues("default", "web")), 1e-9)
			assert.Equal(t, 1.0, testutil.ToFloat64(h.c.metrics.pods.WithLabelValues(StateKnown)))
		})
	}
}

func TestCollectorCounterReset(t *testing.T) {
	h := newHarness(t, testCfg(), nil)
	var n atomic.Int64
	h.pods = []*corev1.Pod{serve(t, "web", decl, histogram(textCT, &n))}
	for i := 0; i < 4; i++ {
		h.step()
	}
	require.True(t, h.pod("web").Known)
	n.Store(0) // the service restarted: its counters start over
	h.step()
	p := h.pod("web")
	assert.True(t, p.Quiet, "the window after a reset is quiet, not wrong: %+v", p)
	h.step()
	h.step()
	assert.True(t, h.pod("web").Known)
	assert.Zero(t, h.errors(ReasonMalformed))
}

func TestCollectorFailures(t *testing.T) {
	for _, tc := range []struct {
		name, reason, why string
		cfg               func(*config.SLO)
		handler           http.HandlerFunc
	}{
		{name: "500", reason: ReasonHTTPStatus, why: "HTTP 500",
			handler: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }},
		{name: "malformed", reason: ReasonMalformed, why: "malformed",
			handler: func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "lat_seconds_bucket{le=\"1\" 3\n") }},
		{name: "huge body", reason: ReasonTooLarge, why: "larger than 1024 bytes", cfg: func(c *config.SLO) { c.MaxBodyBytes = 1024 },
			handler: func(w http.ResponseWriter, _ *http.Request) {
				for i := 0; i < 200; i++ {
					fmt.Fprintf(w, "# a comment line to make the body large\n")
				}
			}},
		{name: "too many series", reason: ReasonTooManySeries, why: "more than 2 samples", cfg: func(c *config.SLO) { c.MaxSeries = 2 },
			handler: histogram(textCT, new(atomic.Int64))},
		{name: "no metric", reason: ReasonNoMetric, why: "no metric lat_seconds",
			handler: func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "# TYPE up gauge\nup 1\n") }},
		{name: "not a histogram", reason: ReasonNotHistogram, why: "not a histogram",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprint(w, "# TYPE lat_seconds gauge\nlat_seconds 0.3\n")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCfg()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			h := newHarness(t, cfg, nil)
			h.pods = []*corev1.Pod{serve(t, "web", decl, tc.handler)}
			h.step()
			h.step()
			p := h.pod("web")
			assert.False(t, p.Known || p.Quiet)
			assert.Contains(t, p.Why, tc.why)
			assert.Equal(t, 2.0, h.errors(tc.reason), "counted per failed scrape")
			sig, _ := h.c.Latest()
			assert.Equal(t, 1, sig.Unknown)
			assert.Equal(t, "", sig.Worst.Pod)
			assert.Zero(t, testutil.CollectAndCount(h.c.metrics.worst), "no known pod: no worst slack series")
			assert.Zero(t, testutil.CollectAndCount(h.c.metrics.slack))
		})
	}
}

func TestCollectorEndpointDown(t *testing.T) {
	h := newHarness(t, testCfg(), nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close()) // nothing listens there now
	h.pods = []*corev1.Pod{lsPod("web", "127.0.0.1", `{"port":`+strconv.Itoa(port)+`,`+decl+`}`)}
	h.step()
	p := h.pod("web")
	assert.False(t, p.Known || p.Quiet)
	assert.Contains(t, p.Why, "connection refused")
	assert.Equal(t, 1.0, h.errors(ReasonDown))
}

// blocking answers once released (or when the client gives up).
func blocking(hits *atomic.Int64, release chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		histogram(textCT, new(atomic.Int64))(w, r)
	}
}

func TestCollectorSlowEndpoint(t *testing.T) {
	cfg := testCfg()
	cfg.ScrapeTimeout = 200 * time.Millisecond
	h := newHarness(t, cfg, nil)
	var hits atomic.Int64
	release := make(chan struct{})
	defer close(release)
	h.pods = []*corev1.Pod{serve(t, "web", decl, blocking(&hits, release))}
	h.c.tick(h.ctx)
	h.c.tick(h.ctx) // the next interval, the first scrape still running
	assert.Equal(t, 1.0, h.errors(ReasonInFlight))
	h.apply()
	assert.EqualValues(t, 1, hits.Load(), "never a second scrape of the pod while one runs")
	p := h.pod("web")
	assert.False(t, p.Known || p.Quiet)
	assert.Contains(t, p.Why, "timed out")
	assert.Equal(t, 1.0, h.errors(ReasonTimeout))
}

func TestCollectorOneInFlight(t *testing.T) {
	h := newHarness(t, testCfg(), nil)
	var hits atomic.Int64
	release := make(chan struct{})
	h.pods = []*corev1.Pod{serve(t, "web", decl, blocking(&hits, release))}
	h.c.tick(h.ctx)
	require.Eventually(t, func() bool { return hits.Load() == 1 }, 30*time.Second, 10*time.Millisecond)
	for i := 0; i < 5; i++ {
		h.c.tick(h.ctx)
	}
	assert.Equal(t, 5.0, h.errors(ReasonInFlight))
	close(release)
	h.apply()
	h.c.tick(h.ctx)
	h.apply()
	assert.EqualValues(t, 2, hits.Load(), "one scrape per pod at a time: the skipped intervals started none")
}

func TestCollectorPodSelection(t *testing.T) {
	var n atomic.Int64
	good := serve(t, "web", decl, histogram(textCT, &n))
	isNM := func(p *corev1.Pod) bool { return p.Name == "nm" }
	h := newHarness(t, testCfg(), isNM)
	be := lsPod("batch", good.Status.PodIP, good.Annotations[Annotation])
	be.Labels[extension.LabelPodQoS] = string(extension.QoSBE)
	bestEffort := lsPod("besteffort", good.Status.PodIP, good.Annotations[Annotation])
	delete(bestEffort.Labels, extension.LabelPodQoS)
	bestEffort.Status.QOSClass = corev1.PodQOSBestEffort
	nm := lsPod("nm", good.Status.PodIP, good.Annotations[Annotation])
	pending := lsPod("pending", "", good.Annotations[Annotation])
	pending.Status.Phase = corev1.PodPending
	noIP := lsPod("noip", "", good.Annotations[Annotation])
	plain := lsPod("plain", good.Status.PodIP, "")
	bad := lsPod("bad", good.Status.PodIP, `{"port":8080,"metric":"lat_seconds"}`)
	h.pods = []*corev1.Pod{good, be, bestEffort, nm, pending, noIP, plain, bad}
	h.step()
	h.step()
	sig, ok := h.c.Latest()
	require.True(t, ok)
	var names []string
	for _, p := range sig.Pods {
		names = append(names, p.Pod)
	}
	assert.Equal(t, []string{"default/bad", "default/noip", "default/web"}, names, "BE, NM, pending and undeclared pods are not declared")
	assert.Equal(t, 3, sig.Declared)
	assert.Equal(t, 2, sig.Unknown)
	assert.Equal(t, "no pod IP", h.pod("noip").Why)
	assert.Equal(t, 2.0, h.errors(ReasonNoPodIP), "counted per interval it cannot be scraped")
	assert.Contains(t, h.pod("bad").Why, "bad annotation koordlet-yarn.io/latency-slo: targetMilliseconds 0")
	assert.Equal(t, 1.0, h.errors(ReasonAnnotation), "a bad declaration is counted once, not per interval")
	assert.EqualValues(t, 2, n.Load(), "only the good pod was scraped")

	// The pods go: their series go too.
	assert.Equal(t, 2, testutil.CollectAndCount(h.c.metrics.target), "web, noip: targets; bad: none")
	h.pods = nil
	h.step()
	sig, _ = h.c.Latest()
	assert.Zero(t, sig.Declared)
	assert.Empty(t, h.c.pods)
	assert.Zero(t, testutil.CollectAndCount(h.c.metrics.target))
	assert.Zero(t, testutil.CollectAndCount(h.c.metrics.latency))
}

func TestCollectorDeclarationChange(t *testing.T) {
	var n atomic.Int64
	h := newHarness(t, testCfg(), nil)
	p := serve(t, "web", decl, histogram(textCT, &n))
	h.pods = []*corev1.Pod{p}
	h.step()
	good := p.Annotations[Annotation]
	p.Annotations[Annotation] = `{"port":0}`
	h.step()
	assert.Contains(t, h.pod("web").Why, "port 0")
	p.Annotations[Annotation] = good
	h.step()
	assert.True(t, h.pod("web").Quiet, "a new declaration starts its window over")
}

func TestCollectorStale(t *testing.T) {
	h := newHarness(t, testCfg(), nil)
	_, ok := h.c.Latest()
	assert.False(t, ok, "before the first signal")
	h.step()
	_, ok = h.c.Latest()
	assert.True(t, ok, "no declared pod is a signal too (Declared 0)")
	h.clock.Advance(3 * time.Second)
	_, ok = h.c.Latest()
	assert.False(t, ok, "three intervals without a signal: stale")
}

func TestCollectorRun(t *testing.T) {
	var n atomic.Int64
	cfg := testCfg()
	cfg.ScrapeInterval, cfg.ScrapeTimeout = 100*time.Millisecond, 100*time.Millisecond
	p := serve(t, "web", decl, histogram(textCT, &n))
	c, err := New(Options{Config: &cfg, Registerer: prometheus.NewRegistry(), Pods: func() []*statesinformer.PodMeta {
		return []*statesinformer.PodMeta{{Pod: p}}
	}})
	require.NoError(t, err)
	stop := make(chan struct{})
	c.Run(stop)
	require.Eventually(t, func() bool { return n.Load() >= 3 }, 30*time.Second, 10*time.Millisecond)
	// Latest is stale after 3 intervals (300 ms): a loaded machine may
	// delay one publication, never every one.
	assert.Eventually(t, func() bool { _, ok := c.Latest(); return ok }, 30*time.Second, 10*time.Millisecond)
	close(stop)
}

// TestCollectorScrapeTooLongIsUnknown: a scrape still running after two
// intervals makes the pod's SLO unknown: its last latency is too old to
// steer by.
func TestCollectorScrapeTooLongIsUnknown(t *testing.T) {
	h := newHarness(t, testCfg(), nil)
	var hits atomic.Int64
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	h.pods = []*corev1.Pod{serve(t, "web", decl, blocking(&hits, release))}
	h.c.tick(h.ctx)
	require.Eventually(t, func() bool { return hits.Load() == 1 }, 30*time.Second, 10*time.Millisecond)
	h.c.tick(h.ctx)
	assert.True(t, h.pod("web").Quiet, "in flight for less than two intervals: as it was")
	h.clock.Advance(3 * time.Second)
	h.c.tick(h.ctx)
	p := h.pod("web")
	assert.False(t, p.Known || p.Quiet)
	assert.Contains(t, p.Why, "has not finished")
}

// TestCollectorGenerationNotReused: a pod whose declaration went and came
// back never reuses the generation a scrape still running carries, so
// that scrape's result is dropped.
func TestCollectorGenerationNotReused(t *testing.T) {
	h := newHarness(t, testCfg(), nil)
	var hits atomic.Int64
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	web := serve(t, "web", decl, blocking(&hits, release))
	h.pods = []*corev1.Pod{web}
	h.c.tick(h.ctx)
	gen := func() int {
		for _, lp := range h.c.pods {
			return lp.gen
		}
		return -1
	}
	first := gen()
	h.pods = nil
	h.c.tick(h.ctx)
	require.Empty(t, h.c.pods)
	h.pods = []*corev1.Pod{web}
	h.c.tick(h.ctx)
	assert.NotEqual(t, first, gen(), "a new generation for the declaration seen again")
}
