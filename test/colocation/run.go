// Package colocation measures the co-location trade on the node in a box:
// the latency of a latency-sensitive (LS) HTTP service in a Kubernetes LS
// pod's cgroups, driven open-loop by vegeta, beside YARN batch from the
// NodeManager emulator (CPU hogs with more threads than cores, memory
// allocators, executors arriving and finishing), under four node
// configurations: LS alone, no QoS, upstream koordlet's best practice for
// YARN, and this plugin set. Each configuration runs at each load level,
// repeated; the report gives LS p50/p99/p99.9 and its ratio to LS alone,
// the error rate, the batch CPU-seconds, node CPU utilisation, evictions
// and Events, with the spread over the repeats, and checks the targets.
// Used by test/measure/colocation (make measure-colocation) and the smoke
// test in test/e2e.
package colocation

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
	"github.com/koordlet-yarn/koordlet-yarn/test/cgtree"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// Variant is one configuration with its settings (a sweep runs several of
// one configuration).
type Variant struct {
	Config     Config
	Thresholds Thresholds
	// Setting names what differs between variants of one configuration
	// ("" when there is one).
	Setting string
}

// Options configure a run.
type Options struct {
	Configs []Config
	// Variants, when set, replace Configs (each with its own thresholds).
	Variants []Variant
	// Step, when set, ends the run with a step response (StepOptions).
	Step *StepOptions
	// Levels are the LS loads as shares of the node's CPU.
	Levels  []float64
	Repeats int
	// Warmup runs load and batch before the measured Window (koordlet's
	// loops react, the batch reaches its steady shape).
	Warmup, Window time.Duration
	// Work is the CPU time of one request's work (calibrated once into a
	// fixed number of passes); ServiceMiB the service's memory.
	Work       time.Duration
	ServiceMiB int
	// Timeout of one request (a timed-out request is an error).
	Timeout    time.Duration
	Batch      BatchShape
	Thresholds Thresholds
	// Settle is the pause after koordlet (re)starts with a configuration.
	Settle time.Duration
	// Log receives progress lines.
	Log io.Writer
	// SLOs are the sweep's LS p99 targets, as ratios to LS alone.
	SLOs []float64
}

// DefaultOptions are the full run of make measure-colocation (about 12
// minutes on 2 CPUs).
func DefaultOptions() Options {
	return Options{Configs: AllConfigs, Levels: []float64{0.3, 0.6}, Repeats: 3,
		Warmup: 5 * time.Second, Window: 15 * time.Second, Work: 2 * time.Millisecond, ServiceMiB: 64,
		Timeout: 2 * time.Second, Batch: DefaultBatch, Thresholds: DefaultThresholds, Settle: 3 * time.Second, Log: io.Discard}
}

// loadgenRTRuntime is the load generator cgroup's real-time budget per
// second (µs, per CPU): a bound, far above what it uses.
const loadgenRTRuntime = 300000

// LSPodName is the LS service's pod.
const LSPodName = "ls-service"

// BoxOptions are the node in a box the run needs: the kubelet's cpu.shares
// on the QoS and pod cgroups, as on a real node, and the LS service's pod —
// Guaranteed with the node's CPUs (no limit binds), koord-prod, LS, on the
// host's network: its status.podIP is 127.0.0.1, where the service
// listens, so that koordlet scrapes the histogram its SLO declares at
// http://<podIP>:<port> as on a real node.
func BoxOptions() nodebox.Options {
	return nodebox.Options{KubeletCPUShares: true, Pods: []nodebox.PodSpec{{
		Namespace: "default", Name: LSPodName, HostNetwork: true,
		Labels: map[string]string{"app": LSPodName, "koordinator.sh/qosClass": "LS", "koordinator.sh/priority-class": "koord-prod"},
		CPU:    strconv.Itoa(runtime.NumCPU()), Memory: "1Gi",
	}}}
}

// Report is a run's outcome.
type Report struct {
	Opts Options
	// Passes is the fixed work of one request; RequestCPU the LS pod's CPU
	// time per request measured with LS alone (work plus HTTP).
	Passes     int
	RequestCPU time.Duration
	// Rates are the requests per second of each level.
	Rates map[float64]int
	// ClientRealtime says whether the load generator ran SCHED_FIFO.
	ClientRealtime bool
	Episodes       []Episode
	Rows           []Row
	Targets        []Target
	// Frontier is the SLO sweep's (with Variants); Step the step response.
	Frontier []FrontierRow
	Step     *StepResult
}

// harness is one run's state.
type harness struct {
	box  *nodebox.Box
	opts Options
	cpus int
	// fs reads the box's cgroups on its layout (v1 or v2).
	fs cgroupFS
	// mine records the cgroups the harness made (the load generator's).
	mine        cgtree.Tracker
	loadgenDirs []string
	// loadgenAcct, lsAcct and yarnAcct are the load generator's, the LS
	// pod's and the YARN hierarchy's cgroups relative to fs.root, whose
	// CPU time an episode counts.
	loadgenAcct string
	lsAcct      string
	yarnAcct    string
	server      *helperProc
	url         string
	// port is the service's (it serves its histogram there too).
	port           int
	episodes       int
	eventsSeen     map[string]int32
	realtime       bool
	koordletConfig Variant
	// passes is one request's fixed work; requestCPU the LS pod's CPU time
	// per request with LS alone.
	passes     int
	requestCPU time.Duration
}

// startHarness starts the LS service in the box's LS pod (BoxOptions) and
// the load generator's cgroups, and calibrates a request's CPU; close
// removes every process and cgroup it made (also after an error: h is
// returned whenever it made something).
func startHarness(ctx context.Context, box *nodebox.Box, opts *Options) (h *harness, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	h = &harness{box: box, opts: *opts, cpus: runtime.NumCPU(), eventsSeen: map[string]int32{}, koordletConfig: Variant{Config: LSAlone, Thresholds: opts.Thresholds}}
	pod := box.PodCgroup(LSPodName)
	if pod == "" {
		return h, fmt.Errorf("the box has no pod %s (start it with colocation.BoxOptions)", LSPodName)
	}
	root := box.CgroupRoot()
	h.fs = cgroupFS{root: root, unified: box.Layout().Unified}
	h.lsAcct = pod
	h.yarnAcct = box.Hierarchy()
	top := fmt.Sprintf("koordlet-yarn-colocation-%d", os.Getpid())
	if h.fs.unified {
		// cgroup v2: one directory beside the box's kubepods, in its tree.
		d := filepath.Join(root, top)
		if err := h.mine.Mkdir(d); err != nil {
			return h, err
		}
		h.loadgenDirs = []string{d}
	} else {
		for _, ctrl := range []string{"cpu", "cpuacct"} {
			d := filepath.Join(nodebox.CgroupRoot, ctrl, top)
			if err := h.mine.Mkdir(d); err != nil {
				return h, err
			}
			h.loadgenDirs = append(h.loadgenDirs, d)
		}
	}
	h.loadgenAcct = top
	// The load generator stands for clients on other machines: real-time
	// (SCHED_FIFO, within a real-time budget of its own cgroup), so that
	// its own scheduling delays beside the batch do not count as the LS
	// service's latency. A kernel without real-time group budgets leaves
	// it a normal task, said in the report (cgroup v2 has no real-time
	// group budget: a normal task there).
	rtErr := error(fmt.Errorf("cgroup v2 has no cpu.rt_runtime_us"))
	if !h.fs.unified {
		rtErr = os.WriteFile(filepath.Join(h.loadgenDirs[0], "cpu.rt_runtime_us"), []byte(strconv.Itoa(loadgenRTRuntime)), 0o644)
	}
	h.realtime = rtErr == nil
	if rtErr != nil {
		fmt.Fprintf(opts.Log, "load generator stays SCHED_OTHER: %v\n", rtErr)
	}
	if h.passes, err = CalibratePasses(opts.Work); err != nil {
		return h, err
	}
	var lsDirs []string
	for _, ctrl := range box.Controllers() {
		lsDirs = append(lsDirs, filepath.Join(root, ctrl, pod))
	}
	h.server, err = startHelper([]string{helperEnv + "=serve", passesEnv + "=" + strconv.Itoa(h.passes),
		memEnv + "=" + strconv.Itoa(opts.ServiceMiB)}, lsDirs, false)
	if err != nil {
		return h, err
	}
	line, err := h.server.line()
	if err != nil {
		return h, err
	}
	var addr string
	if _, err := fmt.Sscanf(line, "listening %s", &addr); err != nil {
		return h, fmt.Errorf("LS service: %q: %w", line, err)
	}
	h.url = "http://" + addr + "/"
	if _, port, err := net.SplitHostPort(addr); err == nil {
		h.port, _ = strconv.Atoi(port)
	}
	if h.requestCPU, err = h.calibrateRequestCPU(ctx); err != nil {
		return h, err
	}
	return h, nil
}

// rateFor is the request rate that loads level of the node's CPUs.
func (h *harness) rateFor(level float64) int {
	return int(level * float64(h.cpus) * float64(time.Second) / float64(h.requestCPU))
}

// close stops the LS service and removes the cgroups the harness made.
func (h *harness) close() error {
	if h.server != nil {
		h.server.kill()
		h.server = nil
	}
	return h.mine.RemoveAll()
}

// Run measures on box (started with BoxOptions) and returns the report;
// it removes every process and cgroup it made.
func Run(ctx context.Context, box *nodebox.Box, opts Options) (rep Report, err error) {
	rep = Report{Opts: opts, Rates: map[float64]int{}}
	h, err := startHarness(ctx, box, &opts)
	if h != nil {
		defer func() {
			if closeErr := h.close(); closeErr != nil && err == nil {
				err = closeErr
			}
		}()
	}
	if err != nil {
		return rep, err
	}
	rep.Opts, rep.Passes, rep.RequestCPU, rep.ClientRealtime = opts, h.passes, h.requestCPU, h.realtime
	for _, l := range opts.Levels {
		rep.Rates[l] = h.rateFor(l)
	}
	fmt.Fprintf(opts.Log, "work %d passes; LS pod CPU per request %v; rates %v req/s\n", rep.Passes, rep.RequestCPU.Round(time.Microsecond), rep.Rates)

	variants := opts.Variants
	if len(variants) == 0 {
		for _, c := range opts.Configs {
			variants = append(variants, Variant{Config: c, Thresholds: opts.Thresholds})
		}
	}
	for r := 1; r <= opts.Repeats; r++ {
		for _, v := range variants {
			c := v.Config
			if err := h.configure(ctx, v); err != nil {
				return rep, err
			}
			for _, l := range opts.Levels {
				var target time.Duration
				if c == SLOControlled {
					if target, err = sloTargetAt(v.Thresholds, rep.Episodes, l); err == nil {
						err = h.declareSLO(ctx, target)
					}
					if err != nil {
						return rep, fmt.Errorf("%s %s at %s, repeat %d: %w", c, v.Setting, pct(l), r, err)
					}
					fmt.Fprintf(opts.Log, "repeat %d, %s %s, LS %s: the LS pod declares p99 ≤ %v over %v windows (%s)\n",
						r, c, v.Setting, pct(l), target, SLOWindow, lsslo.Annotation)
				}
				ep, err := h.episode(ctx, c, l, rep.Rates[l], r)
				if err != nil {
					return rep, fmt.Errorf("%s %s at %s, repeat %d: %w", c, v.Setting, pct(l), r, err)
				}
				ep.Setting, ep.SLOTarget = v.Setting, target
				if c == SLOControlled && v.Thresholds.SLOTarget == 0 {
					ep.SLORatio = v.Thresholds.SLORatio
					if ep.SLORatio <= 0 {
						ep.SLORatio = SLOFactor
					}
				}
				rep.Episodes = append(rep.Episodes, ep)
				fmt.Fprintf(opts.Log, "repeat %d, %s %s, LS %s: p50 %.2f p99 %.2f p99.9 %.2f ms, errors %d/%d, pacer lag p99 %.2f ms; batch %.1f CPU-s, LS %.1f, loadgen %.1f, koordlet %.2f; batch page faults %d, memory.high events %s; node CPU %.0f%%; evicted %d; events %v; %s\n",
					r, c, v.Setting, pct(l), ms(ep.LS.P50), ms(ep.LS.P99), ms(ep.LS.P999), ep.LS.Errors, ep.LS.Requests, ms(ep.PacerLagP99),
					ep.BatchCPUSeconds, ep.LSCPUSeconds, ep.LoadgenCPUSeconds, ep.KoordletCPUSeconds, ep.BatchPageFaults, highText(ep.BatchMemoryHighEvents),
					100*ep.NodeUtilisation, ep.Evicted, ep.Events, ep.Knobs)
			}
		}
	}
	rep.Rows = Rows(rep.Episodes)
	if len(opts.Variants) > 0 {
		rep.Frontier = FrontierOf(rep.Rows, opts.SLOs)
		rep.Targets = FrontierTargets(rep.Frontier, rep.Rows)
	} else {
		rep.Targets = Targets(rep.Rows)
	}
	if opts.Step != nil {
		st, err := h.stepResponse(ctx, *opts.Step, rep.Rates)
		if err != nil {
			return rep, fmt.Errorf("step response: %w", err)
		}
		rep.Step = &st
	}
	return rep, nil
}

// calibrateRequestCPU measures the LS pod's CPU time per request with LS
// alone, at about 20% of the node.
func (h *harness) calibrateRequestCPU(ctx context.Context) (time.Duration, error) {
	rate := int(0.2 * float64(h.cpus) * float64(time.Second) / float64(h.opts.Work))
	if rate < 1 {
		rate = 1
	}
	before, err := h.fs.usageSeconds(h.lsAcct)
	if err != nil {
		return 0, err
	}
	_, results, err := h.attack(ctx, rate, 3*time.Second, nil)
	if err != nil {
		return 0, err
	}
	after, err := h.fs.usageSeconds(h.lsAcct)
	if err != nil {
		return 0, err
	}
	if len(results) == 0 {
		return 0, fmt.Errorf("calibration: no request answered")
	}
	per := time.Duration((after - before) * float64(time.Second) / float64(len(results)))
	if per <= 0 {
		return 0, fmt.Errorf("calibration: the LS pod used no CPU (is the service in %s?)", h.lsAcct)
	}
	return per, nil
}

// configure brings koordlet and the NodeSLO to configuration c: koordlet
// stops, the cgroup knobs koordlet may have written are reset to the
// kubelet's values, the NodeSLO is set and koordlet starts with c's gates.
// Configurations with the same koordlet flags and NodeSLO share a koordlet.
func (h *harness) configure(ctx context.Context, v Variant) error {
	c, th := v.Config, v.Thresholds
	if reflect.DeepEqual(c.KoordletArgs(th), h.koordletConfig.Config.KoordletArgs(h.koordletConfig.Thresholds)) &&
		reflect.DeepEqual(c.NodeSLO(th), h.koordletConfig.Config.NodeSLO(h.koordletConfig.Thresholds)) {
		return nil
	}
	h.box.StopKoordlet()
	if err := h.resetKnobs(); err != nil {
		return err
	}
	spec := c.NodeSLO(th)
	if err := h.box.UpdateNodeSLO(ctx, func(s *slov1alpha1.NodeSLOSpec) { *s = spec }); err != nil {
		return fmt.Errorf("set the NodeSLO of %s: %w", c, err)
	}
	h.box.SetKoordletArgs(c.KoordletArgs(th))
	if err := h.box.StartKoordlet(); err != nil {
		return fmt.Errorf("start koordlet for %s: %w", c, err)
	}
	h.koordletConfig = v
	time.Sleep(h.opts.Settle)
	return nil
}

// resetKnobs undoes what koordlet may have written to the box's QoS
// cgroups in a configuration (suppress's cfs quota, sched-idle): no quota,
// cpu.idle 0, the kubelet's cpu.shares. The box made all of them.
func (h *harness) resetKnobs() error {
	yarn := h.box.Hierarchy()
	be := filepath.Dir(yarn)
	for _, rel := range []string{filepath.Dir(be), be, yarn} {
		dir := h.fs.dir("cpu", rel)
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			continue // the YARN hierarchy before the first container
		}
		for file, v := range h.fs.unlimited() {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("reset %s/%s: %w", dir, file, err)
			}
		}
	}
	return h.box.ApplyKubeletCPUShares()
}

// counters are the cumulative figures an episode's window is the
// difference of.
type counters struct {
	cpu                          CPUTimes
	batch, ls, loadgen, koordlet float64
	// faults and high are the YARN hierarchy's page faults and
	// memory.high events (high -1: cgroup v1).
	faults, high int64
	knobs        string
	stalls       Stalls
}

func (h *harness) sample() (counters, error) {
	var c counters
	var err error
	if c.cpu, err = readCPUTimes(); err != nil {
		return c, err
	}
	if c.batch, err = h.fs.usageSeconds(h.yarnAcct); err != nil {
		return c, err
	}
	if c.ls, err = h.fs.usageSeconds(h.lsAcct); err != nil {
		return c, err
	}
	if c.loadgen, err = h.fs.usageSeconds(h.loadgenAcct); err != nil {
		return c, err
	}
	if c.faults, c.high, err = h.fs.memoryCounts(h.yarnAcct); err != nil {
		return c, err
	}
	pid := 0
	if h.server != nil {
		pid = h.server.cmd.Process.Pid
	}
	if c.stalls, err = readStalls(h.fs, pid, h.lsAcct); err != nil {
		return c, err
	}
	c.koordlet, err = processCPUSeconds(h.box.KoordletPID())
	c.knobs = h.knobs()
	return c, err
}

// knobs describes what koordlet has set on the BE side: the besteffort
// cgroup's CFS quota (suppress) and the YARN root's cpu.idle (sched-idle).
func (h *harness) knobs() string {
	yarn := h.box.Hierarchy()
	be := filepath.Dir(yarn)
	quota := "cfs_quota_us"
	if h.fs.unified {
		quota = "cpu.max"
	}
	return fmt.Sprintf("besteffort %s %s cpu.idle %s, YARN root %s %s cpu.idle %s", quota, h.fs.quotaText(be), h.fs.read(be, "cpu.idle"),
		quota, h.fs.quotaText(yarn), h.fs.read(yarn, "cpu.idle"))
}

// attack runs the load generator at rate for d; at began+offset of each
// element of at it calls the matching callback. It returns the time the
// attack began and every request.
func (h *harness) attack(ctx context.Context, rate int, d time.Duration, at []timedCall) (time.Time, []attackResult, error) {
	p, err := startHelper([]string{helperEnv + "=attack", urlEnv + "=" + h.url, rateEnv + "=" + strconv.Itoa(rate),
		durationEnv + "=" + d.String(), timeoutEnv + "=" + h.opts.Timeout.String(),
		// One P: a real-time runtime spinning for work would take a CPU from LS and batch.
		"GOMAXPROCS=1"}, h.loadgenDirs, h.realtime)
	if err != nil {
		return time.Time{}, nil, err
	}
	defer p.kill()
	line, err := p.line()
	if err != nil {
		return time.Time{}, nil, err
	}
	began, err := parseBegan(line)
	if err != nil {
		return began, nil, err
	}
	type parsed struct {
		rs  []attackResult
		err error
	}
	results := make(chan parsed, 1)
	go func() {
		rs, err := parseResults(p.stdout)
		results <- parsed{rs, err}
	}()
	for _, c := range at {
		select {
		case <-ctx.Done():
			return began, nil, ctx.Err()
		case <-time.After(time.Until(began.Add(c.offset))):
		}
		if err := c.call(); err != nil {
			return began, nil, err
		}
	}
	var res parsed
	select {
	case <-ctx.Done():
		return began, nil, ctx.Err()
	case res = <-results:
	}
	if res.err != nil {
		return began, nil, res.err
	}
	if err := p.wait(); err != nil {
		return began, nil, fmt.Errorf("load generator: %w", err)
	}
	return began, res.rs, nil
}

// timedCall is a callback at an offset from an attack's start.
type timedCall struct {
	offset time.Duration
	call   func() error
}

// episode runs configuration c at one level: batch (unless LS alone) and
// load start together; after the warm-up the window is measured.
func (h *harness) episode(ctx context.Context, c Config, level float64, rate, repeat int) (Episode, error) {
	ep := Episode{Config: c, Level: level, Repeat: repeat, Window: h.opts.Window, CPUs: h.cpus}
	h.episodes++
	if err := h.markEvents(ctx); err != nil {
		return ep, err
	}
	var b *batch
	if c.Batch() {
		var err error
		if b, err = startBatch(h.box.NM, h.opts.Batch, int64(1000+h.episodes), int64(h.episodes)); err != nil {
			return ep, err
		}
		defer func() {
			if b != nil {
				_, _, _ = b.finish()
			}
		}()
	}
	var from, to counters
	sampleInto := func(dst *counters) func() error {
		return func() error {
			var err error
			*dst, err = h.sample()
			return err
		}
	}
	began, results, err := h.attack(ctx, rate, h.opts.Warmup+h.opts.Window, []timedCall{
		{h.opts.Warmup, sampleInto(&from)}, {h.opts.Warmup + h.opts.Window, sampleInto(&to)}})
	if err != nil {
		return ep, err
	}
	if b != nil {
		evicted, _, err := b.finish()
		b = nil
		if err != nil {
			return ep, err
		}
		ep.Evicted = evicted
	}
	samples, lag := windowSamples(results, began, rate, began.Add(h.opts.Warmup), began.Add(h.opts.Warmup+h.opts.Window))
	ep.LS = Summarise(samples)
	ep.Windows = WindowQuantiles(timedSamples(results, began, rate, began.Add(h.opts.Warmup), began.Add(h.opts.Warmup+h.opts.Window)),
		h.opts.Window, SLOWindow, SLOQuantile)
	ep.PacerLagP99 = lag
	ep.BatchCPUSeconds = to.batch - from.batch
	ep.LSCPUSeconds = to.ls - from.ls
	ep.LoadgenCPUSeconds = to.loadgen - from.loadgen
	ep.KoordletCPUSeconds = to.koordlet - from.koordlet
	ep.BatchPageFaults = to.faults - from.faults
	ep.BatchMemoryHighEvents = -1
	if to.high >= 0 {
		ep.BatchMemoryHighEvents = to.high - from.high
	}
	ep.NodeUtilisation = Utilisation(from.cpu, to.cpu)
	ep.Knobs = to.knobs
	if ep.Events, err = h.newEvents(ctx); err != nil {
		return ep, err
	}
	return ep, nil
}

// markEvents records the Events so far, so that newEvents counts only the
// episode's.
func (h *harness) markEvents(ctx context.Context) error {
	_, err := h.newEvents(ctx)
	return err
}

// newEvents returns the Events (by reason, with their repeat counts) that
// appeared or repeated since the last call.
func (h *harness) newEvents(ctx context.Context) (map[string]int, error) {
	list, err := h.box.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Events: %w", err)
	}
	out := map[string]int{}
	for _, ev := range list.Items {
		count := ev.Count
		if count < 1 {
			count = 1
		}
		if d := count - h.eventsSeen[string(ev.UID)]; d > 0 {
			out[ev.Reason] += int(d)
		}
		h.eventsSeen[string(ev.UID)] = count
	}
	return out, nil
}

// highText prints a memory.high event count ("-" on cgroup v1).
func highText(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}
