package colocation

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StepOptions configure the step response: configuration 5 at Target, LS
// at load From for Before, then at To for After (a second load generator
// joins at the step), batch all along.
type StepOptions struct {
	Target        time.Duration
	From, To      float64
	Before, After time.Duration
	// Plot is the SVG file the plot is written to ("" none).
	Plot string
	// Thresholds are the run's (the target and step are set from these).
	Thresholds Thresholds
}

// StepSample is the batch budget and YARN's usage at one instant.
type StepSample struct {
	// At is the time from the step (negative before it).
	At time.Duration
	// Budget is the besteffort cgroup's cfs quota in cores (BE suppress's
	// budget at the controller's threshold; NaN: unlimited);
	// Usage YARN's CPU use since the previous sample, in cores.
	Budget, Usage float64
	// Signal is the controller's last signal from koordlet's /metrics
	// (koordlet_yarn_interference_signal_seconds; NaN: not read at this
	// sample).
	Signal time.Duration
	// Threshold is BE suppress's threshold from koordlet's /metrics
	// (koordlet_yarn_interference_threshold_percent; NaN: not read).
	Threshold float64
}

// LatencyBin is the LS p99 of the requests sent in one bin.
type LatencyBin struct {
	At       time.Duration // the bin's start from the step
	P99      time.Duration
	Requests int
}

// StepResult is the step response.
type StepResult struct {
	Opts    StepOptions
	Samples []StepSample
	Bins    []LatencyBin
	// TimeToCut is from the step to the first budget below the budget at
	// the step (-1: never cut).
	TimeToCut time.Duration
	// BudgetAtStep and BudgetLow (the lowest after the step) in cores.
	BudgetAtStep, BudgetLow float64
	// ThresholdAtStep and ThresholdLow are BE suppress's threshold read
	// last before the step and the lowest after it (NaN: not read).
	ThresholdAtStep, ThresholdLow float64
	// P99Before is over the 10 s before the step, P99During the 5 s after
	// it, P99After the last 10 s.
	P99Before, P99During, P99After time.Duration
	// PlotFile is where the plot was written ("" none).
	PlotFile string
}

// stepBin is the width of a latency bin; stepSampleEvery the budget's.
const (
	stepBin         = 500 * time.Millisecond
	stepSampleEvery = 100 * time.Millisecond
)

// stepResponse runs the step.
func (h *harness) stepResponse(ctx context.Context, o StepOptions, rates map[float64]int) (StepResult, error) {
	res := StepResult{Opts: o, TimeToCut: -1}
	th := o.Thresholds
	th.InterferenceTarget = o.Target
	if err := h.configure(ctx, Variant{Config: Controlled, Thresholds: th, Setting: "step"}); err != nil {
		return res, err
	}
	rate := func(l float64) int {
		if r, ok := rates[l]; ok {
			return r
		}
		return int(l * float64(h.cpus) * float64(time.Second) / float64(h.opts.Work))
	}
	h.episodes++
	b, err := startBatch(h.box.NM, h.opts.Batch, int64(1000+h.episodes), int64(h.episodes))
	if err != nil {
		return res, err
	}
	defer func() { _, _, _ = b.finish() }()
	// The batch budget: BE suppress's quota on the besteffort cgroup (the
	// YARN root's parent), whose threshold the controller moves.
	be := filepath.Dir(h.box.Hierarchy())

	var (
		mu      sync.Mutex
		stepAt  time.Time
		samples []StepSample
		second  []attackResult
		secErr  error
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	var samplerWG sync.WaitGroup
	samplerWG.Add(1)
	go func() { // the budget and YARN's usage every 100 ms
		defer samplerWG.Done()
		tick := time.NewTicker(stepSampleEvery)
		defer tick.Stop()
		lastUse, _ := h.fs.usageSeconds(h.yarnAcct)
		last := time.Now()
		n := 0
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				use, err := h.fs.usageSeconds(h.yarnAcct)
				if err != nil {
					continue
				}
				budget := math.NaN()
				q, p, qerr := h.fs.quota(be)
				if qerr == nil && q > 0 && p > 0 {
					budget = float64(q) / float64(p)
				}
				sig, th := time.Duration(-1), math.NaN()
				if n%5 == 0 { // koordlet's signal and threshold every half second
					if fams, err := h.box.MetricFamilies(); err == nil {
						if f, ok := fams["koordlet_yarn_interference_signal_seconds"]; ok && len(f.Metric) > 0 {
							sig = time.Duration(f.Metric[0].GetGauge().GetValue() * float64(time.Second))
						}
						if f, ok := fams["koordlet_yarn_interference_threshold_percent"]; ok && len(f.Metric) > 0 {
							th = f.Metric[0].GetGauge().GetValue()
						}
					}
				}
				n++
				mu.Lock()
				if !stepAt.IsZero() {
					samples = append(samples, StepSample{At: now.Sub(stepAt), Budget: budget, Usage: (use - lastUse) / now.Sub(last).Seconds(), Signal: sig, Threshold: th})
				}
				mu.Unlock()
				lastUse, last = use, now
			}
		}
	}()
	began, first, err := h.attack(ctx, rate(o.From), o.Before+o.After, []timedCall{{0, func() error {
		mu.Lock()
		stepAt = time.Now().Add(o.Before)
		mu.Unlock()
		return nil
	}}, {o.Before, func() error {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, rs, err := h.attack(ctx, rate(o.To)-rate(o.From), o.After, nil)
			mu.Lock()
			second, secErr = rs, err
			mu.Unlock()
		}()
		return nil
	}}})
	wg.Wait()
	close(stop)
	samplerWG.Wait()
	if err != nil {
		return res, err
	}
	if secErr != nil {
		return res, fmt.Errorf("the step's load generator: %w", secErr)
	}
	step := began.Add(o.Before)
	mu.Lock()
	// Re-base the samples on the step as the load generator saw it.
	for i := range samples {
		samples[i].At -= step.Sub(stepAt)
	}
	res.Samples = samples
	mu.Unlock()
	res.Bins, res.P99Before, res.P99During, res.P99After = latencyBins(append(first, second...), step, o.Before, o.After)
	res.BudgetAtStep, res.BudgetLow, res.TimeToCut = cutOf(res.Samples)
	res.ThresholdAtStep, res.ThresholdLow = thresholdsOf(res.Samples)
	if o.Plot != "" {
		if err := writeStepPlot(o.Plot, res); err != nil {
			return res, err
		}
		res.PlotFile = o.Plot
	}
	return res, nil
}

func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// failedLatency stands for a failed request's latency: slower than any.
const failedLatency = time.Duration(math.MaxInt64 / 2)

// p99Text prints a step window's p99: "failed" when more than 1% of its
// requests failed (the p99 is then a failure's), "no requests" for none.
func p99Text(d time.Duration) string {
	switch {
	case d >= failedLatency:
		return "failed (over 1% of the requests failed or timed out)"
	case d == 0:
		return "no requests"
	}
	return fmt.Sprintf("%.2f ms", ms(d))
}

// latencyBins bins the requests by send time from the step and returns the
// bins with the p99 before, during (the first 5 s) and after (the last 10 s).
func latencyBins(rs []attackResult, step time.Time, before, after time.Duration) (bins []LatencyBin, p99Before, p99During, p99After time.Duration) {
	byBin := map[int][]time.Duration{}
	var pre, during, post []time.Duration
	for _, r := range rs {
		at := r.Sent.Sub(step)
		lat := r.Latency
		if r.Failed {
			lat = failedLatency // a failure counts as the slowest
		}
		i := int(math.Floor(float64(at) / float64(stepBin)))
		byBin[i] = append(byBin[i], lat)
		switch {
		case at >= -10*time.Second && at < 0:
			pre = append(pre, lat)
		case at >= 0 && at < 5*time.Second:
			during = append(during, lat)
		}
		if at >= after-10*time.Second && at < after {
			post = append(post, lat)
		}
	}
	var keys []int
	for k := range byBin {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		v := byBin[k]
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		bins = append(bins, LatencyBin{At: time.Duration(k) * stepBin, P99: Percentile(v, 0.99), Requests: len(v)})
	}
	p := func(v []time.Duration) time.Duration {
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		return Percentile(v, 0.99)
	}
	return bins, p(pre), p(during), p(post)
}

// cutOf returns the budget at the step, the lowest after it and the time
// to the first budget below the one at the step (-1: none).
func cutOf(samples []StepSample) (atStep, low float64, cut time.Duration) {
	atStep, low, cut = math.NaN(), math.NaN(), -1
	for _, s := range samples {
		if s.At <= 0 {
			atStep = s.Budget
			continue
		}
		if math.IsNaN(low) || s.Budget < low {
			low = s.Budget
		}
		if cut < 0 && !math.IsNaN(atStep) && s.Budget < atStep*0.99 {
			cut = s.At
		}
	}
	return atStep, low, cut
}

// thresholdsOf returns the threshold read last before the step and the
// lowest after it.
func thresholdsOf(samples []StepSample) (atStep, low float64) {
	atStep, low = math.NaN(), math.NaN()
	for _, s := range samples {
		switch {
		case math.IsNaN(s.Threshold):
		case s.At <= 0:
			atStep = s.Threshold
		case math.IsNaN(low) || s.Threshold < low:
			low = s.Threshold
		}
	}
	return atStep, low
}

// Print writes the step response's figures.
func (r StepResult) Print(w io.Writer) {
	cut := "never cut"
	if r.TimeToCut >= 0 {
		cut = fmt.Sprintf("budget cut %v after the step", r.TimeToCut.Round(10*time.Millisecond))
	}
	fmt.Fprintf(w, "Step response (controller target %v; LS %s → %s at t = 0, %v before, %v after): %s (%.2f → lowest %.2f cores; threshold %.0f%% → lowest %.0f%%); LS p99 %s in the 10 s before, %s in the 5 s after the step, %s in the last 10 s",
		r.Opts.Target, pct(r.Opts.From), pct(r.Opts.To), r.Opts.Before, r.Opts.After, cut, r.BudgetAtStep, r.BudgetLow,
		r.ThresholdAtStep, r.ThresholdLow, p99Text(r.P99Before), p99Text(r.P99During), p99Text(r.P99After))
	if r.PlotFile != "" {
		fmt.Fprintf(w, "; plot: %s", r.PlotFile)
	}
	fmt.Fprintln(w)
}
