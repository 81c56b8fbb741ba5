package lsslo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/apis/extension"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"

	"github.com/koordlet-yarn/koordlet-yarn/framework/config"
)

// DefaultMaxConcurrent is how many scrapes run at once by default.
const DefaultMaxConcurrent = 8

// Options configure a Collector.
type Options struct {
	// Enabled says whether to run (the gate YARNLSSLOControl).
	Enabled func() bool
	// Pods lists the node's pods (koordlet's states informer).
	Pods func() []*statesinformer.PodMeta
	// IsNodeManagerPod excludes the NodeManager pod.
	IsNodeManagerPod func(*corev1.Pod) bool
	// Config is the flags (nil: the defaults).
	Config     *config.SLO
	Registerer prometheus.Registerer
	// Client scrapes (nil: one with Config's timeout; tests).
	Client *http.Client
	// Now is the clock (nil: time.Now; tests).
	Now func() time.Time
	// MaxConcurrent bounds the scrapes running at once (0:
	// DefaultMaxConcurrent).
	MaxConcurrent int
}

// pod is one declared LS pod (the loop's goroutine only).
type pod struct {
	ns, name string
	// annotation is the declaration's text slo was parsed from (declErr:
	// it is bad); gen counts its changes, so that a scrape started under
	// an older one is dropped.
	annotation string
	slo        SLO
	declErr    error
	// gen is the collector's count of declarations when this one was
	// read (one counter for every pod: a pod dropped and seen again never
	// reuses a generation a scrape still running carries); declared: one
	// was read.
	gen      int
	declared bool
	inFlight bool
	// started is when the scrape in flight started.
	started time.Time
	ring    ring
	cur     PodSLO
	// state is what was last logged ("known", "quiet", "unknown: reason").
	state string
}

// result is one finished scrape.
type result struct {
	uid string
	gen int
	at  time.Time
	b   Buckets
	err error
}

// Collector scrapes the declared LS pods' latency histograms each interval.
type Collector struct {
	opts    Options
	cfg     config.SLO
	metrics *metrics
	scraper *scraper
	now     func() time.Time
	sem     chan struct{}
	results chan result

	mu     sync.Mutex
	latest Signal
	ok     bool

	// Loop state (the loop's goroutine only; cfg is written once, by
	// prepare, under mu).
	pods map[string]*pod // by UID
	// gens counts the declarations read (pod.gen).
	gens int
	// said are the lines said once (BE pods' declarations).
	said map[string]bool
}

// New returns a collector; its metrics are registered on opts.Registerer.
// opts.Config is read when the collector starts (after the flags are
// parsed).
func New(opts Options) (*Collector, error) {
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Collector{opts: opts, metrics: m, now: now, pods: map[string]*pod{}, said: map[string]bool{}}, nil
}

// Config is the configuration the collector runs with (opts.Config now,
// or the defaults).
func (c *Collector) Config() config.SLO {
	if c.opts.Config != nil {
		return *c.opts.Config
	}
	return config.DefaultSLO()
}

// prepare reads the configuration and builds the client (Run; tests).
func (c *Collector) prepare() {
	cfg := c.Config()
	client := c.opts.Client
	if client == nil {
		client = newClient(cfg.ScrapeTimeout)
	}
	n := c.opts.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	c.scraper = &scraper{client: client, maxBody: cfg.MaxBodyBytes, maxSeries: cfg.MaxSeries}
	c.sem, c.results = make(chan struct{}, n), make(chan result, n)
	c.mu.Lock()
	c.cfg = cfg
	c.mu.Unlock()
}

// Name names the loop.
func (c *Collector) Name() string { return "YARN LS latency SLO (declared, scraped)" }

// Enabled follows the gate.
func (c *Collector) Enabled() bool { return c.opts.Enabled != nil && c.opts.Enabled() }

// Latest returns the last signal; ok is false before the first or when it
// is older than three intervals (the loop stalled).
func (c *Collector) Latest() (Signal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok || c.now().Sub(c.latest.At) > 3*c.cfg.ScrapeInterval {
		return c.latest, false
	}
	return c.latest, true
}

// Run scrapes every interval until stopCh closes.
func (c *Collector) Run(stopCh <-chan struct{}) {
	c.prepare()
	klog.Infof("yarn: LS latency SLO: scraping the declaring pods (annotation %s) every %v", Annotation, c.cfg.ScrapeInterval)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stopCh
		cancel()
	}()
	go c.loop(ctx)
}

// loop owns the pods: ticks start scrapes, results come back on a channel.
func (c *Collector) loop(ctx context.Context) {
	t := time.NewTicker(c.cfg.ScrapeInterval)
	defer t.Stop()
	c.tick(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.tick(ctx)
		case r := <-c.results:
			c.apply(r)
		}
	}
}

func (c *Collector) defaults() Defaults {
	return Defaults{Window: c.cfg.Window, ScrapeInterval: c.cfg.ScrapeInterval, MinWindow: config.MinSLOWindow, MaxWindow: config.MaxSLOWindow}
}

// declared returns the running declaring LS pods, by UID.
func (c *Collector) declared() map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	if c.opts.Pods == nil {
		return out
	}
	present := map[string]bool{}
	defer func() {
		for k := range c.said { // forget the lines of pods gone
			if !present[k[strings.IndexByte(k, '/')+1:]] {
				delete(c.said, k)
			}
		}
	}()
	for _, pm := range c.opts.Pods() {
		if pm == nil || pm.Pod == nil {
			continue
		}
		p := pm.Pod
		present[string(p.UID)] = true
		if _, ok := p.Annotations[Annotation]; !ok || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if c.opts.IsNodeManagerPod != nil && c.opts.IsNodeManagerPod(p) {
			c.sayOnce("nm/"+string(p.UID), "yarn: LS latency SLO: pod %s/%s is the YARN NodeManager's; its declaration is ignored", p.Namespace, p.Name)
			continue
		}
		if isBE(p) {
			c.sayOnce("be/"+string(p.UID), "yarn: LS latency SLO: pod %s/%s is BE (batch); its declaration is ignored", p.Namespace, p.Name)
			continue
		}
		out[string(p.UID)] = p
	}
	return out
}

// isBE: koordinator's BE QoS, or a BestEffort pod without a QoS label.
func isBE(p *corev1.Pod) bool {
	return extension.GetPodQoSClassWithDefault(p) == extension.QoSBE || p.Status.QOSClass == corev1.PodQOSBestEffort
}

func (c *Collector) sayOnce(key, format string, args ...any) {
	if !c.said[key] {
		c.said[key] = true
		klog.Warningf(format, args...)
	}
}

// tick follows the pod list and starts a scrape of every declared pod whose
// last one has finished.
func (c *Collector) tick(ctx context.Context) {
	now := c.now()
	live := c.declared()
	for uid, lp := range c.pods {
		if _, ok := live[uid]; !ok {
			c.metrics.forget(lp.ns, lp.name)
			delete(c.pods, uid)
		}
	}
	for uid, p := range live {
		lp := c.pods[uid]
		if lp == nil {
			lp = &pod{ns: p.Namespace, name: p.Name}
			lp.cur = PodSLO{Pod: lp.key(), Quiet: true}
			c.pods[uid] = lp
		}
		c.declare(lp, p.Annotations[Annotation])
		switch {
		case lp.declErr != nil:
			why := "bad annotation " + Annotation + ": " + lp.declErr.Error()
			c.set(lp, PodSLO{Why: why}, ReasonAnnotation+": "+why)
		case p.Status.PodIP == "":
			c.metrics.errors.WithLabelValues(ReasonNoPodIP).Inc()
			c.set(lp, PodSLO{Why: "no pod IP"}, ReasonNoPodIP)
		case lp.inFlight:
			c.metrics.errors.WithLabelValues(ReasonInFlight).Inc()
			klog.V(4).Infof("yarn: LS latency SLO: pod %s: the last scrape still runs; this interval's is skipped", lp.key())
			if age := now.Sub(lp.started); age > 2*c.cfg.ScrapeInterval {
				// Its last latency is too old to steer by.
				c.set(lp, PodSLO{Why: fmt.Sprintf("its scrape has not finished for %v", age.Round(time.Millisecond))}, ReasonTimeout)
			}
		default:
			lp.inFlight, lp.started = true, now
			go c.scrape(ctx, uid, lp.gen, scrapeURL(p.Status.PodIP, lp.slo), lp.slo)
		}
	}
	c.publish(now)
}

// declare parses the pod's declaration when it changed; a bad one is
// logged and counted once per distinct error.
func (c *Collector) declare(lp *pod, value string) {
	if lp.declared && value == lp.annotation {
		return
	}
	prevErr, again := lp.declErr, lp.declared
	// A scrape still running under the old declaration is dropped when it
	// ends (it still counts as in flight: never two at once).
	c.gens++
	lp.annotation, lp.gen, lp.declared, lp.ring = value, c.gens, true, ring{}
	lp.slo, lp.declErr = ParseDeclaration(value, c.defaults())
	if lp.declErr == nil && again {
		c.set(lp, PodSLO{Quiet: true}, "") // the new declaration's window starts empty
	}
	if lp.declErr != nil && (prevErr == nil || prevErr.Error() != lp.declErr.Error()) {
		c.metrics.errors.WithLabelValues(ReasonAnnotation).Inc()
	}
}

// scrape runs one scrape (bounded by the semaphore) and hands the result
// to the loop.
func (c *Collector) scrape(ctx context.Context, uid string, gen int, url string, s SLO) {
	r := result{uid: uid, gen: gen}
	wait := time.NewTimer(c.cfg.ScrapeTimeout)
	defer wait.Stop()
	select {
	case c.sem <- struct{}{}:
		r.b, r.err = c.scraper.scrape(ctx, url, s)
		<-c.sem
	case <-wait.C:
		r.err = fail(ReasonTimeout, "no scrape slot within %v: %d scrapes of other pods run", c.cfg.ScrapeTimeout, cap(c.sem))
	case <-ctx.Done():
		r.err = ctx.Err()
	}
	r.at = c.now()
	select {
	case c.results <- r:
	case <-ctx.Done():
	}
}

// apply records a finished scrape.
func (c *Collector) apply(r result) {
	lp := c.pods[r.uid]
	if lp == nil {
		return // the pod went meanwhile
	}
	lp.inFlight = false
	if r.gen != lp.gen {
		return // its declaration changed meanwhile
	}
	if r.err != nil {
		if errors.Is(r.err, context.Canceled) {
			return
		}
		reason := ReasonOf(r.err)
		c.metrics.errors.WithLabelValues(reason).Inc()
		c.set(lp, PodSLO{Why: r.err.Error()}, reason)
		c.publish(r.at)
		return
	}
	reset := lp.ring.add(sample{at: r.at, b: r.b}, lp.slo.Window)
	d, ok := lp.ring.window(lp.slo.Window)
	switch {
	case !ok:
		if reset {
			klog.V(2).Infof("yarn: LS latency SLO: pod %s: the histogram was reset; its window starts over", lp.key())
		}
		c.set(lp, PodSLO{Quiet: true}, "")
	default:
		c.set(lp, Evaluate(lp.slo, d), "")
	}
	c.publish(r.at)
}

// set makes p the pod's SLO (with its declared figures) and logs when its
// state changes; reason tells unknown states apart (a Reason*, with the
// error for a bad declaration: one line per distinct error).
func (c *Collector) set(lp *pod, p PodSLO, reason string) {
	p.Pod = lp.key()
	if lp.declErr == nil {
		p.Quantile, p.Target = lp.slo.Quantile, lp.slo.Target
	}
	state := StateUnknown + ": " + reason
	switch {
	case p.Known:
		state = StateKnown
	case p.Quiet:
		state = StateQuiet
	}
	if state != lp.state {
		switch {
		case !p.Known && !p.Quiet:
			klog.Warningf("yarn: LS latency SLO: pod %s: SLO unknown: %s", p.Pod, p.Why)
		case lp.state != "" && lp.state != StateKnown && lp.state != StateQuiet:
			klog.Infof("yarn: LS latency SLO: pod %s: scraped again (%s)", p.Pod, state)
		default:
			klog.V(4).Infof("yarn: LS latency SLO: pod %s: %s", p.Pod, state)
		}
		lp.state = state
	}
	lp.cur = p
	c.metrics.observePod(lp.ns, lp.name, p)
}

func (lp *pod) key() string { return lp.ns + "/" + lp.name }

// publish makes the pods' SLOs the latest signal.
func (c *Collector) publish(at time.Time) {
	pods := make([]PodSLO, 0, len(c.pods))
	for _, lp := range c.pods {
		pods = append(pods, lp.cur)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Pod < pods[j].Pod })
	sig := Summarize(at, pods)
	c.metrics.observeNode(sig)
	c.mu.Lock()
	c.latest, c.ok = sig, true
	c.mu.Unlock()
}
