//go:build ignore

// (Compiles, with a main; not yet run: the tag comes off with its first run.)

package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
	"github.com/koordlet-yarn/koordlet-yarn/test/jobs"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
	"github.com/koordlet-yarn/koordlet-yarn/test/realyarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

// colocationConfig is koord-manager's colocation-config: Koordinator's
// reclaim thresholds, quick reports and updates so that the batch
// allocatable follows LS within a phase.
const colocationConfig = `{"enable":true,"metricAggregateDurationSeconds":30,"metricReportIntervalSeconds":2,
"cpuReclaimThresholdPercent":65,"memoryReclaimThresholdPercent":65,"degradeTimeMinutes":15,
"updateTimeThresholdSeconds":5,"resourceDiffThreshold":0.01}`

// day is one configuration's day on a fresh box.
type day struct {
	top    string
	config jobs.Config
	phases []jobs.Phase
	stream []jobs.Job
	hadoop string
	log    io.Writer
}

// jobResult is one job's end.
type jobResult struct {
	job jobs.Job
	res yarnpeer.SparkResult
	err error
}

// run runs the day and returns its outcome and the timeline's points.
func (d day) run(ctx context.Context) (jobs.Outcome, error) {
	var out jobs.Outcome
	opts := colocation.BoxOptions()
	opts.Top, opts.ExternalNM, opts.LockWait = d.top, true, 30*time.Minute
	opts.ExtraCRDs = nodebox.KoordManagerCRDs
	opts.NodeSLO = d.config.NodeSLO()
	box, err := nodebox.Start(ctx, opts)
	if err != nil {
		return out, fmt.Errorf("the node in a box: %w", err)
	}
	defer box.Stop()
	km, err := box.StartKoordManager(ctx, colocationConfig)
	if err != nil {
		return out, err
	}
	defer km.Stop()
	peer, err := realyarn.Start(ctx, box, d.top, yarnpeer.Options{Hadoop: d.hadoop, Memory: true})
	if err != nil {
		return out, fmt.Errorf("the real YARN: %w", err)
	}
	defer peer.Stop()
	box.SetKoordletArgs(d.config.KoordletArgs(peer.RMWeb))
	if err := box.StartKoordletFor(peer.NMWeb); err != nil {
		return out, err
	}
	ls, err := colocation.StartLS(ctx, box, colocation.DefaultOptions())
	if err != nil {
		return out, fmt.Errorf("the LS service: %w", err)
	}
	defer ls.Close()

	began := time.Now()
	results := make(chan jobResult, len(d.stream))
	var wg sync.WaitGroup
	if d.config.Batch() {
		for _, j := range d.stream {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-ctx.Done():
					results <- jobResult{job: j, err: ctx.Err()}
					return
				case <-time.After(time.Until(began.Add(j.At))):
				}
				results <- d.submit(ctx, peer, j)
			}()
		}
	}
	koordlet0 := 0.0
	for _, p := range d.phases {
		rate := 0
		if d.config.LS() {
			rate = ls.RateFor(p.Level)
		}
		r, err := ls.Phase(ctx, rate, p.Duration)
		if err != nil {
			return out, fmt.Errorf("phase %d: %w", p.Index, err)
		}
		out.PhaseP99 = append(out.PhaseP99, r.LS.P99)
		out.Utilisation += r.NodeUtilisation * p.Duration.Seconds()
		out.BatchCPU += time.Duration(r.BatchCPUSeconds * float64(time.Second))
		koordlet0 += r.KoordletCPUSeconds
		fmt.Fprintf(d.log, "%s, phase %d (%02.0fh), LS %.0f%% = %d req/s: p99 %v, node %.0f%%, batch %.1f CPU-s\n",
			d.config, p.Index, p.Hour, 100*p.Level, rate, r.LS.P99.Round(10*time.Microsecond), 100*r.NodeUtilisation, r.BatchCPUSeconds)
	}
	total := d.phases[len(d.phases)-1].Start + d.phases[len(d.phases)-1].Duration
	out.Utilisation /= total.Seconds()
	out.Koordlet = time.Duration(koordlet0 * float64(time.Second))
	// The jobs still running finish (bounded: a day's length more).
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(total):
		return out, fmt.Errorf("jobs still running a day's length after the day")
	}
	close(results)
	out.JobTimes = map[string]time.Duration{}
	for r := range results {
		out.Jobs++
		if r.err != nil || r.res.FinalStatus != "SUCCEEDED" {
			out.FailedJobs++
			fmt.Fprintf(d.log, "%s: job %s failed: %v %s %s\n", d.config, r.job.Name, r.err, r.res.State, r.res.FinalStatus)
		} else {
			out.JobTimes[r.job.Name] = r.res.Elapsed
		}
		if ev := r.res.Events; ev != nil {
			out.Launched += 1 + len(ev.Added) // the AM and the executors
			for _, f := range ev.Failures {
				if f.ExitCausedByApp == nil || *f.ExitCausedByApp {
					out.FailedAttempts++
				}
			}
			for _, x := range ev.Removed {
				if strings.Contains(strings.ToLower(x.Reason), "preempt") {
					out.Preempted++
				}
			}
		}
	}
	ev, err := box.Evictions()
	if err != nil {
		return out, fmt.Errorf("koordlet's evictions: %w", err)
	}
	// One record a container; an eviction that released nothing is not
	// counted as one (it is a failure of koordlet's, logged).
	for _, r := range ev.Records {
		if r.Outcome == "succeeded" {
			out.Killed++
		} else {
			fmt.Fprintf(d.log, "%s: eviction of %s %s: %s\n", d.config, r.Container, r.Outcome, r.Error)
		}
	}
	if ev.Total > len(ev.Records) {
		return out, fmt.Errorf("koordlet recorded %d evictions and serves the last %d (its audit keeps 500): read its audit file", ev.Total, len(ev.Records))
	}
	return out, nil
}

// submit runs j as a Spark application and waits for its end.
func (d day) submit(ctx context.Context, peer *yarnpeer.Peer, j jobs.Job) jobResult {
	mode := map[jobs.Kind]string{jobs.Short: yarnpeer.SparkBurn, jobs.Heavy: yarnpeer.SparkGrow, jobs.Long: yarnpeer.SparkHold}[j.Kind]
	run, err := peer.RunSparkJob(yarnpeer.SparkJob{Name: j.Name, User: "spark", Mode: mode, Partitions: j.Tasks,
		HoldMB: j.HoldMB, Seconds: int(j.TaskTime.Seconds()), Executors: j.Executors, ExecutorMB: j.HoldMB + 384})
	if err != nil {
		return jobResult{job: j, err: err}
	}
	res, err := run.Wait(ctx)
	return jobResult{job: j, res: res, err: err}
}
