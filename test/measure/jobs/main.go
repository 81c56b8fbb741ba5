// Command jobs measures the promise with real jobs over a compressed day
// (make measure-jobs): on the node in a box with Hadoop's own
// ResourceManager and NodeManager (the real-YARN peer, the LCE's cgroups,
// cgroup v1 here), koordlet and koord-manager's slo-controller, the LS
// service follows a day of load while a seeded stream of Spark jobs runs on
// YARN, whose capacity follows Koordinator's batch allocatable. Each
// configuration (LS alone, batch alone, upstream's best, this plugin set…)
// sees the same day and the same stream; the command prints each row's
// evictions, failed jobs, job slowdown, LS p99 per phase and utilisation
// against the references, the targets as met / not met, and writes
// an SVG timeline per configuration and repeat. Needs root, cgroup v1 and
// the real-YARN peer (make deps-yarn).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
	"github.com/koordlet-yarn/koordlet-yarn/test/jobrun"
	"github.com/koordlet-yarn/koordlet-yarn/test/jobs"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

func main() {
	kerneltest.RunHelperIfRequested()
	colocation.RunHelperIfRequested()
	d, mix := jobs.DefaultDay(), jobs.DefaultMix()
	// A flag set of its own: the packages this command links register
	// koordlet's and cAdvisor's flags on the global one.
	flag := flag.NewFlagSet("jobs", flag.ExitOnError)
	configs := flag.String("configs", "all", "configurations, comma-separated (ls-alone, batch-alone, upstream, kill, preempt, ladder, controlled, slo) or all; LS alone and batch alone are the references every other row needs")
	repeats := flag.Int("repeats", 3, "repeats of every configuration (at least 3 for issue 49's SLO targets: every repeat violation-free, ranges)")
	sloTarget := flag.Duration("slo-target", 0, "the p99 target the LS service declares on its pod (koordlet-yarn.io/latency-slo, 5 s windows); 0: learnt from the first LS-alone day, its peak phase's p99 × 1.3")
	flag.IntVar(&d.Phases, "phases", d.Phases, "phases of the day")
	flag.DurationVar(&d.Length, "day", d.Length, "the day's length")
	flag.Float64Var(&d.Night, "night", d.Night, "LS load at night, share of the node's CPU")
	flag.Float64Var(&d.Peak, "peak", d.Peak, "LS load at the peak, share of the node's CPU")
	flag.Uint64Var(&d.Seed, "seed", d.Seed, "seed of the day's noise and of the job stream")
	flag.Float64Var(&mix.PerHour, "jobs-per-hour", mix.PerHour, "short and heavy jobs an hour of the day (Poisson)")
	flag.Float64Var(&mix.HeavyShare, "heavy-share", mix.HeavyShare, "share of the jobs that are memory-heavy")
	flag.IntVar(&mix.LongPhases, "long-phases", mix.LongPhases, "phases of the long job that spans the peak (0: none)")
	flag.IntVar(&mix.Backlog.Executors, "backlog", mix.Backlog.Executors, "executors of the backlog job: CPU-bound work always waiting, from the day's start to its end (Heracles' premise, so that utilisation measures what the node lets batch run; 0: none)")
	budget := flag.Int64("memory-budget", 4096, "MiB of node memory above what is in use once everything is up: the BE memory evict threshold is set there (a smaller node's memory on this 24 GiB host)")
	overcommit := flag.Int64("memory-overcommit", 2, "points of node memory koord-manager's memoryReclaimThresholdPercent is above the BE memory evict threshold: the batch allocatable over-reports that much, as a prediction does when the LS peak comes")
	lsMemory := flag.Int("ls-memory", 4096, "MiB the LS pod holds beside its service at 100% load (each phase its level's share: the peak takes memory back)")
	hadoop := flag.String("hadoop", "", "Hadoop version of the real-YARN peer (default 3.5.0)")
	out := flag.String("out", "build/jobs", "directory of the timelines (SVG) and the outcomes (JSON)")
	reportOnly := flag.Bool("report-only", false, "run no day: print the report of the outcomes already in -out (<config>-<repeat>.json for -configs and -repeats), e.g. after a run whose report failed")
	_ = flag.Parse(os.Args[1:])
	mix.Seed = d.Seed
	cs, err := jobs.ParseConfigs(*configs)
	if err == nil && *repeats < 1 {
		err = fmt.Errorf("-repeats %d: at least 1", *repeats)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(2)
	}
	phases, err := d.Trace()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(2)
	}
	stream, err := mix.Stream(phases)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(2)
	}
	if *reportOnly {
		outcomes, slo, err := jobrun.ReadOutcomes(*out, cs, *repeats)
		if err == nil {
			t := jobs.DefaultTargets()
			t.SLO = slo
			err = jobrun.Report(os.Stdout, cs, outcomes, t)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "jobs:", err)
			os.Exit(1)
		}
		return
	}
	top, err := nodebox.Prepare(os.Stderr)
	if err == nil {
		err = os.MkdirAll(*out, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := jobrun.Runner{Top: top, Out: *out, Hadoop: *hadoop, Budget: *budget << 20, Overcommit: *overcommit, LSMemoryMiB: *lsMemory, Phases: phases, Stream: stream, Log: os.Stderr,
		SLOTarget: *sloTarget}
	fmt.Fprintf(os.Stderr, "jobs: a day of %d phases over %v (LS %.0f%% → %.0f%%), %d jobs, %d configurations × %d repeats\n",
		d.Phases, d.Length, 100*d.Night, 100*d.Peak, len(stream), len(cs), *repeats)
	began := time.Now()
	outcomes, err := r.All(ctx, cs, *repeats)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
	t := jobs.DefaultTargets()
	t.SLO = r.SLOTarget
	if err := jobrun.Report(os.Stdout, cs, outcomes, t); err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
	fmt.Printf("\n(%d phases over %v, %d jobs, %d repeats; took %v; timelines in %s)\n",
		d.Phases, d.Length, len(stream), *repeats, time.Since(began).Round(time.Second), filepath.Clean(*out))
}
