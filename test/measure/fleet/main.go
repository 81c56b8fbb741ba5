// Command fleet measures what the batch ledger costs the API server across a
// fleet: N simulated nodes, each with koordlet's own watch on its Node and
// a ledger writer (yarnledger's NeedsWrite, PatchPolicy, NodeWriter) driven
// by YARN container churn, against one real kube-apiserver and etcd (the
// node in a box's control plane alone). For each configuration it reports
// the API requests per second per node (by verb), the Node update events
// every watcher of all Nodes receives, the API server's and etcd's CPU, and
// the staleness of the hadoop-yarn entry as a watcher of all Nodes (a
// scheduler) sees it: sampled every second per node, how old the
// information in the entry is (0 when it is YARN's allocation now, else the
// time since it was); and "under": how long YARN has held more than the
// entry says by at least the hysteresis (where a scheduler could
// over-commit), sampled while it does.
//
// The baseline is koordlet's own NodeMetric reporting: one UpdateStatus per
// node every 60 s (statesinformer's default report interval), modelled, not
// run (the NodeMetric CRD is not in this API server).
//
// Needs the cached kube-apiserver and etcd (make e2e-tools); no root.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/koordlet-yarn/koordlet-yarn/plugins/yarnledger"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// config is one writer configuration.
type config struct {
	Name string `json:"name"`
	// Policy is the ledger's patch policy; Live reads the Node before each
	// patch (the ledger before the policy) instead of the informer's.
	Policy yarnledger.PatchPolicy `json:"policy"`
	Live   bool                   `json:"liveReads"`
}

var configs = map[string]config{
	// The ledger before: every change once a second, a live GET first.
	"before": {Name: "before", Policy: yarnledger.PatchPolicy{MinInterval: time.Second, MaxAge: time.Second}, Live: true},
	// The defaults now.
	"defaults": {Name: "defaults", Policy: yarnledger.PatchPolicy{MinInterval: yarnledger.DefaultPatchInterval,
		Hysteresis: yarnledger.DefaultHysteresis, MaxAge: yarnledger.DefaultMaxAge}},
}

func main() {
	nodes := flag.Int("nodes", 1000, "simulated nodes")
	duration := flag.Duration("duration", 90*time.Second, "measured time per configuration (after the warm-up)")
	warmup := flag.Duration("warmup", 20*time.Second, "time before the measurement (churn reaches its steady state)")
	which := flag.String("configs", "before,defaults", "configurations to run, in order")
	arrival := flag.Duration("arrival", 10*time.Second, "mean time between YARN container starts on a node")
	asJSON := flag.Bool("json", false, "print the results as JSON")
	interval := flag.Duration("interval", yarnledger.DefaultPatchInterval, "the \"custom\" configuration's patch interval")
	hysteresis := flag.Int64("hysteresis", yarnledger.DefaultHysteresis, "the \"custom\" configuration's hysteresis (percent)")
	maxAge := flag.Duration("max-age", yarnledger.DefaultMaxAge, "the \"custom\" configuration's max age")
	flag.Parse()
	configs["custom"] = config{Name: "custom", Policy: yarnledger.PatchPolicy{MinInterval: *interval, Hysteresis: *hysteresis, MaxAge: *maxAge}}
	var results []result
	for _, name := range strings.Split(*which, ",") {
		c, ok := configs[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "measure-fleet: unknown configuration %q\n", name)
			os.Exit(2)
		}
		r, err := run(c, *nodes, *warmup, *duration, *arrival)
		if err != nil {
			fmt.Fprintln(os.Stderr, "measure-fleet:", err)
			os.Exit(1)
		}
		results = append(results, r)
		if !*asJSON {
			r.print()
		}
	}
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(results)
	}
}

// counter counts the requests of the simulated koordlets by verb.
type counter struct {
	mu     sync.Mutex
	byVerb map[string]int
	next   http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	verb := r.Method
	if r.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	c.mu.Lock()
	c.byVerb[verb]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.byVerb {
		out[k] = v
	}
	return out
}

// origin is each simulated node's batch allocatable: 32 cores, 64 GiB.
var origin = yarnledger.Batch{MilliCPU: 32000, MemoryBytes: 64 << 30}

// sim is one node: its YARN containers (the truth) and its ledger writer.
type sim struct {
	name     string
	start    time.Time
	rng      *rand.Rand
	mu       sync.Mutex
	running  []container
	truth    yarnledger.Batch
	informer cache.SharedIndexInformer
	writer   *yarnledger.NodeWriter
	// The writer's state, as the ledger keeps it.
	written   *yarnledger.Batch
	lastWrite time.Time
	// asOf is when each value written was YARN's allocation (for the
	// staleness of what a watcher sees).
	asOf map[yarnledger.Batch]time.Time
}

type container struct {
	until time.Time
	use   yarnledger.Batch
}

// churn starts and ends containers up to now (Poisson starts, lifetimes 30 s
// to 3 min, 1–2 cores and 1–4 GiB each) and returns YARN's allocation.
func (s *sim) churn(now time.Time, arrival time.Duration) yarnledger.Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.running[:0]
	for _, c := range s.running {
		if c.until.After(now) {
			kept = append(kept, c)
		}
	}
	s.running = kept
	// Starts in the last second: Poisson with mean 1s/arrival (Knuth).
	limit, p := math.Exp(-float64(time.Second)/float64(arrival)), s.rng.Float64()
	for ; p >= limit; p *= s.rng.Float64() {
		life := 30*time.Second + time.Duration(s.rng.Int63n(int64(150*time.Second)))
		s.running = append(s.running, container{until: now.Add(life),
			use: yarnledger.Batch{MilliCPU: 1000 + 1000*s.rng.Int63n(2), MemoryBytes: (1 + s.rng.Int63n(4)) << 30}})
	}
	var b yarnledger.Batch
	for _, c := range s.running {
		b.MilliCPU += c.use.MilliCPU
		b.MemoryBytes += c.use.MemoryBytes
	}
	if len(s.running) > 40 { // bound the population (never reached at the default rate)
		s.running = s.running[len(s.running)-40:]
	}
	s.truth = b
	return b
}

// step is one pass of the ledger's Sync for the node.
func (s *sim) step(ctx context.Context, c config, want yarnledger.Batch, now time.Time) {
	var node *corev1.Node
	if !c.Live {
		if objs := s.informer.GetStore().List(); len(objs) == 1 {
			node = objs[0].(*corev1.Node)
		}
	}
	write, correction := yarnledger.NeedsWrite(node, want, s.written, s.lastWrite, now)
	if c.Live {
		write, correction = s.written == nil || *s.written != want, false
	}
	if !write {
		return
	}
	var onNode yarnledger.Batch
	present := false
	if node != nil {
		onNode, present, _ = yarnledger.Entry(node.Annotations[yarnledger.AnnotationKey])
	} else if s.written != nil {
		onNode, present = *s.written, true
	}
	if c.Policy.Due(onNode, want, origin, s.lastWrite, now, correction || !present) > 0 {
		return
	}
	var err error
	if c.Live {
		_, err = s.writer.Write(ctx, want)
	} else {
		_, err = s.writer.WriteFrom(ctx, node, want)
	}
	if err == nil {
		w := want
		s.written, s.lastWrite = &w, now
		s.mu.Lock()
		if len(s.asOf) > 64 {
			clear(s.asOf)
		}
		s.asOf[want] = now
		s.mu.Unlock()
	}
}

// valueAge is how old the information in value (seen on the Node) is at
// now: 0 when it is YARN's allocation now, else the time since it was.
func (s *sim) valueAge(value, truth yarnledger.Batch, now time.Time) time.Duration {
	if value == truth {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.asOf[value]; ok {
		return now.Sub(at)
	}
	return now.Sub(s.start) // never written in this run: as old as the run
}

// result is one configuration's figures.
type result struct {
	Config          config         `json:"config"`
	Nodes           int            `json:"nodes"`
	Seconds         float64        `json:"seconds"`
	Requests        map[string]int `json:"requests"`
	PerNodePerSec   float64        `json:"requestsPerNodePerSecond"`
	WritesPerNode   float64        `json:"writesPerNodePerSecond"`
	WatchEvents     int            `json:"nodeUpdateEventsPerWatcher"`
	APIServerCPU    float64        `json:"apiserverCPUSeconds"`
	EtcdCPU         float64        `json:"etcdCPUSeconds"`
	StaleP50        time.Duration  `json:"staleP50"`
	StaleP99        time.Duration  `json:"staleP99"`
	StaleMax        time.Duration  `json:"staleMax"`
	UnderP99        time.Duration  `json:"underP99"`
	UnderShare      float64        `json:"underShare"`
	BaselinePerNode float64        `json:"nodeMetricPerNodePerSecond"`
}

func (r result) print() {
	fmt.Printf("%s (interval %v, hysteresis %d%%, max age %v, live reads %v), %d nodes, %.0f s:\n", r.Config.Name, r.Config.Policy.MinInterval,
		r.Config.Policy.Hysteresis, r.Config.Policy.MaxAge, r.Config.Live, r.Nodes, r.Seconds)
	fmt.Printf("  requests/s per node %.4f (writes %.4f; by verb %v); koordlet's NodeMetric reporting: %.4f; at 5,000 nodes %.0f req/s vs %.0f\n",
		r.PerNodePerSec, r.WritesPerNode, r.Requests, r.BaselinePerNode, r.PerNodePerSec*5000, r.BaselinePerNode*5000)
	fmt.Printf("  Node update events each watcher of all Nodes received: %d (%.1f/s); CPU: kube-apiserver %.1f s, etcd %.1f s\n",
		r.WatchEvents, float64(r.WatchEvents)/r.Seconds, r.APIServerCPU, r.EtcdCPU)
	fmt.Printf("  entry staleness as a scheduler sees it (age of its information): p50 %v, p99 %v, max %v; YARN above the entry by ≥ hysteresis in %.2f%% of node-seconds, for p99 %v\n",
		r.StaleP50.Round(100*time.Millisecond), r.StaleP99.Round(100*time.Millisecond), r.StaleMax.Round(100*time.Millisecond), 100*r.UnderShare, r.UnderP99.Round(100*time.Millisecond))
}

func run(c config, n int, warmup, duration, arrival time.Duration) (result, error) {
	top, err := nodebox.RepoTop()
	if err != nil {
		return result{}, err
	}
	api, err := nodebox.StartAPIServer(top)
	if err != nil {
		return result{}, err
	}
	defer api.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < n; i++ {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i)}}
		if _, err := api.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return result{}, fmt.Errorf("create %s: %w", node.Name, err)
		}
	}
	// The simulated koordlets share one client (high QPS: the client is
	// not the bottleneck), counted.
	cnt := &counter{byVerb: map[string]int{}}
	cfg := rest.CopyConfig(api.Config)
	cfg.QPS, cfg.Burst = 20000, 40000
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { cnt.next = rt; return cnt })
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return result{}, err
	}
	sims := make([]*sim, n)
	for i := range sims {
		name := fmt.Sprintf("node-%04d", i)
		f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
		s := &sim{name: name, start: time.Now(), asOf: map[yarnledger.Batch]time.Time{}, rng: rand.New(rand.NewSource(int64(i))), informer: f.Core().V1().Nodes().Informer(),
			writer: &yarnledger.NodeWriter{Client: kube, NodeName: name}}
		go s.informer.Run(ctx.Done())
		sims[i] = s
	}
	for _, s := range sims {
		if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
			return result{}, fmt.Errorf("informer of %s not synced", s.name)
		}
	}
	// A watcher of all Nodes (a scheduler): what it sees, and when.
	var events atomic.Int64
	seen := make([]struct {
		sync.Mutex
		entry yarnledger.Batch
	}, n)
	index := map[string]int{}
	for i, s := range sims {
		index[s.name] = i
	}
	all := informers.NewSharedInformerFactory(api.Kube, 0).Core().V1().Nodes().Informer()
	record := func(obj any) {
		node, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		i, ok := index[node.Name]
		if !ok {
			return
		}
		b, _, _ := yarnledger.Entry(node.Annotations[yarnledger.AnnotationKey])
		seen[i].Lock()
		seen[i].entry = b
		seen[i].Unlock()
	}
	_, _ = all.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, obj any) { events.Add(1); record(obj) }})
	go all.Run(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), all.HasSynced)

	// Every node once a second, spread over the second.
	var wg sync.WaitGroup
	measuring := atomic.Bool{}
	var smu sync.Mutex
	var stale, under []time.Duration
	samples := 0
	for i, s := range sims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * time.Second / time.Duration(n))
			t := time.NewTicker(time.Second)
			defer t.Stop()
			var underSince time.Time // when YARN first held more than the entry by the hysteresis
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-t.C:
					want := s.churn(now, arrival)
					s.step(ctx, c, want, now)
					seen[i].Lock()
					onNode := seen[i].entry
					seen[i].Unlock()
					isUnder := yarnledger.Grew(onNode, want, origin, max(c.Policy.Hysteresis, 1))
					switch {
					case !isUnder:
						underSince = time.Time{}
					case underSince.IsZero():
						underSince = now
					}
					if !measuring.Load() {
						continue
					}
					age := s.valueAge(onNode, want, now)
					smu.Lock()
					samples++
					stale = append(stale, age)
					if isUnder {
						under = append(under, now.Sub(underSince)+time.Second/2) // began within the last second
					}
					smu.Unlock()
				}
			}
		}()
	}
	time.Sleep(warmup)
	apiPID, etcdPID := api.PIDs()
	api0, etcd0 := cpuSeconds(apiPID), cpuSeconds(etcdPID)
	req0 := cnt.snapshot()
	ev0 := events.Load()
	measuring.Store(true)
	start := time.Now()
	time.Sleep(duration)
	measuring.Store(false)
	secs := time.Since(start).Seconds()
	req1 := cnt.snapshot()
	ev1 := events.Load()
	api1, etcd1 := cpuSeconds(apiPID), cpuSeconds(etcdPID)
	cancel()
	wg.Wait()

	r := result{Config: c, Nodes: n, Seconds: secs, Requests: map[string]int{}, WatchEvents: int(ev1 - ev0),
		APIServerCPU: api1 - api0, EtcdCPU: etcd1 - etcd0, BaselinePerNode: 1.0 / 60}
	total := 0
	for verb, v := range req1 {
		if d := v - req0[verb]; d > 0 {
			r.Requests[verb] = d
			if verb != "WATCH" {
				total += d
			}
		}
	}
	r.PerNodePerSec = float64(total) / secs / float64(n)
	r.WritesPerNode = float64(r.Requests["PATCH"]) / secs / float64(n)
	r.StaleP50, r.StaleP99, r.StaleMax = quantiles(stale)
	_, r.UnderP99, _ = quantiles(under)
	if samples > 0 {
		r.UnderShare = float64(len(under)) / float64(samples)
	}
	return r, nil
}

// quantiles returns p50, p99 and the max of ds (sorted in place).
func quantiles(ds []time.Duration) (p50, p99, mx time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	sortDurations(ds)
	return ds[len(ds)/2], ds[len(ds)*99/100], ds[len(ds)-1]
}

func sortDurations(ds []time.Duration) { slices.Sort(ds) }

// cpuSeconds is the user + system CPU time of pid so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces): state is field 3.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+2:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}
