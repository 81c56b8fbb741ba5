// Command colocation runs the co-location benchmark (make
// measure-colocation): an LS HTTP service in a Kubernetes LS pod's cgroups
// on the node in a box, driven open-loop by vegeta at each load level,
// alone and beside YARN batch with no QoS, with upstream koordlet's best
// practice for YARN and with this plugin set; it prints the table and the
// targets (see package test/colocation). Needs root and cgroup v1.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
	"github.com/koordlet-yarn/koordlet-yarn/test/kerneltest"
	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

func main() {
	kerneltest.RunHelperIfRequested()
	colocation.RunHelperIfRequested()
	o := colocation.DefaultOptions()
	levels := flag.String("levels", "0.3,0.6", "LS load levels, shares of the node's CPU")
	configs := flag.String("configs", "1,2,3,4", "configurations to run (1 LS alone, 2 no QoS, 3 upstream's best, 4 this plugin set, 5 interference control on -control-on's base, 6 SLO control: 5 steered by the SLO the LS pod declares); without -sweep")
	sweepSLO := flag.Bool("sweep-slo", true, "in the sweep, also configuration 6 declaring each -slos target (× LS alone's p99 at the level), compared with the static frontier")
	flag.DurationVar(&o.Thresholds.SLOTarget, "slo-target", 0, "the p99 the LS pod declares in configuration 6 outside the sweep (0: 1.3× LS alone's p99 at the level; LS alone runs first)")
	sweep := flag.Bool("sweep", false, "run the SLO sweep instead of -configs: LS alone, upstream's best at each -sweep-thresholds and the interference controller at each -sweep-targets; the frontier at each -slos")
	thresholds := flag.String("sweep-thresholds", "40,50,60,70,80,90,100", "cpuSuppressThresholdPercent values of configuration 3 in the sweep")
	targets := flag.String("sweep-targets", "", "--yarn-interference-target values of configuration 5 in the sweep (default: 70us,85us,100us,120us,150us on upstream's best, 60us,75us,100us,125us,150us on the plugin set)")
	controlOn := flag.String("control-on", "upstream", "what configuration 5's controller is feedback on: upstream (upstream's best: its NodeSLO, -upstream-suppress the base threshold, no cpu.idle) or plugin (this plugin set, -plugin-suppress the base, cpu.idle)")
	slos := flag.String("slos", "1.1,1.3,1.5,2", "LS p99 targets of the sweep, × LS alone")
	stepTarget := flag.Duration("step-target", 0, "after the episodes, a step response of configuration 5 at this target (LS 30% → 60%); 0: none")
	plotFile := flag.String("plot", "build/colocation-step.svg", "SVG file of the step response's plot")
	flag.Int64Var(&o.Thresholds.InterferenceStepPercent, "interference-step", 0, "--yarn-interference-step-percent in configuration 5 (0: koordlet's default)")
	flag.Int64Var(&o.Thresholds.InterferenceGrowAfter, "interference-grow-after", 0, "--yarn-interference-grow-after in configuration 5 (0: koordlet's default, 1)")
	flag.Int64Var(&o.Thresholds.InterferenceMinPercent, "interference-min", 1, "--yarn-interference-min-cpu-percent in configuration 5 (low, so that tight targets can be met: the static thresholds go as low)")
	// The wait signal on both bases: on upstream's best too the
	// interference wait stayed under 28 µs at 60% LS load while LS's p99
	// was 5× alone (2026-11-28 23:36: no target from 40 to 120 µs cut).
	flag.StringVar(&o.Thresholds.InterferenceSignal, "interference-signal", "wait", "--yarn-interference-signal in configuration 5 (wait: the interference wait behind batch stays low while LS's tail grows, with the plugin set's cpu.idle and on upstream's best alike; its harm is LS queueing behind LS)")
	flag.IntVar(&o.Repeats, "repeats", o.Repeats, "repeats of every configuration and level")
	flag.DurationVar(&o.Warmup, "warmup", o.Warmup, "load and batch before the measured window")
	flag.DurationVar(&o.Window, "window", o.Window, "measured window of an episode")
	flag.DurationVar(&o.Work, "work", o.Work, "CPU time of one request's work")
	flag.IntVar(&o.Batch.Executors, "executors", o.Batch.Executors, "YARN executors running at once")
	flag.IntVar(&o.Batch.MemoryMiB, "executor-memory", o.Batch.MemoryMiB, "MiB a memory executor (every third) allocates; 0: CPU executors only")
	flag.IntVar(&o.Batch.MemoryHighMiB, "executor-memory-high", 0, "memory.high of every memory executor's container cgroup in MiB, written at its launch: its growth past that throttled by reclaim (cgroup v2 only; 0: none)")
	flag.DurationVar(&o.Batch.MinLife, "executor-min-life", o.Batch.MinLife, "shortest executor lifetime")
	flag.DurationVar(&o.Batch.MaxLife, "executor-max-life", o.Batch.MaxLife, "longest executor lifetime")
	flag.Int64Var(&o.Thresholds.UpstreamCPUSuppressPercent, "upstream-suppress", o.Thresholds.UpstreamCPUSuppressPercent, "cpuSuppressThresholdPercent in configuration 3")
	flag.Int64Var(&o.Thresholds.PluginCPUSuppressPercent, "plugin-suppress", o.Thresholds.PluginCPUSuppressPercent, "cpuSuppressThresholdPercent in configuration 4")
	flag.Int64Var(&o.Thresholds.MemoryEvictPercent, "memory-evict", o.Thresholds.MemoryEvictPercent, "memoryEvictThresholdPercent in configurations 3 and 4")
	flag.BoolVar(&o.Thresholds.PluginCPUEvict, "plugin-cpu-evict", false, "also turn on the YARN-aware BE CPU evict in configuration 4 (satisfaction 40–60%, usage 90%)")
	flag.Parse()
	if err := controlBase(&o, *controlOn, targets); err != nil {
		fmt.Fprintln(os.Stderr, "colocation:", err)
		os.Exit(2)
	}
	if err := parseLists(&o, *levels, *configs); err != nil {
		fmt.Fprintln(os.Stderr, "colocation:", err)
		os.Exit(2)
	}
	if *sweep {
		if err := sweepVariants(&o, *thresholds, *targets, *slos, *sweepSLO); err != nil {
			fmt.Fprintln(os.Stderr, "colocation:", err)
			os.Exit(2)
		}
	}
	if *stepTarget > 0 {
		o.Step = &colocation.StepOptions{Target: *stepTarget, From: 0.3, To: 0.6, Before: 20 * time.Second, After: 25 * time.Second,
			Plot: *plotFile, Thresholds: o.Thresholds}
		if dir := filepath.Dir(*plotFile); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				fmt.Fprintln(os.Stderr, "colocation:", err)
				os.Exit(2)
			}
		}
	}
	o.Log = os.Stderr
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "colocation:", err)
		os.Exit(1)
	}
}

func parseLists(o *colocation.Options, levels, configs string) error {
	o.Levels, o.Configs = nil, nil
	for _, s := range strings.Split(levels, ",") {
		l, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || l <= 0 || l >= 1 {
			return fmt.Errorf("bad level %q (want a share of the node's CPU, e.g. 0.3)", s)
		}
		o.Levels = append(o.Levels, l)
	}
	for _, s := range strings.Split(configs, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < int(colocation.LSAlone) || c > int(colocation.SLOControlled) {
			return fmt.Errorf("bad configuration %q (1–%d)", s, int(colocation.SLOControlled))
		}
		o.Configs = append(o.Configs, colocation.Config(c))
	}
	return nil
}

// controlBase sets what configuration 5's controller is feedback on, and
// the sweep targets that go with it where not given.
func controlBase(o *colocation.Options, on string, targets *string) error {
	sweep := "70us,85us,100us,120us,150us"
	switch on {
	case "upstream":
		o.Thresholds.ControlOnUpstream = true
	case "plugin":
		sweep = "60us,75us,100us,125us,150us"
	default:
		return fmt.Errorf("bad -control-on %q (upstream or plugin)", on)
	}
	if *targets == "" {
		*targets = sweep
	}
	return nil
}

// sweepVariants sets the sweep's variants and SLOs; with slo, SLO control
// (configuration 6) declaring each SLO.
func sweepVariants(o *colocation.Options, thresholds, targets, slos string, slo bool) error {
	o.Variants = []colocation.Variant{{Config: colocation.LSAlone, Thresholds: o.Thresholds}}
	for _, s := range strings.Split(thresholds, ",") {
		p, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || p < 1 || p > 100 {
			return fmt.Errorf("bad threshold %q (a percentage)", s)
		}
		th := o.Thresholds
		th.UpstreamCPUSuppressPercent = p
		o.Variants = append(o.Variants, colocation.Variant{Config: colocation.UpstreamBest, Thresholds: th, Setting: fmt.Sprintf("suppress %d%%", p)})
	}
	for _, s := range strings.Split(targets, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return fmt.Errorf("bad controller target %q (a duration)", s)
		}
		th := o.Thresholds
		th.InterferenceTarget = d
		setting := "target " + d.String()
		if th.ControlOnUpstream {
			setting += fmt.Sprintf(" on upstream %d%%", th.UpstreamCPUSuppressPercent)
		} else {
			setting += fmt.Sprintf(" on the plugin set %d%%", th.PluginCPUSuppressPercent)
		}
		o.Variants = append(o.Variants, colocation.Variant{Config: colocation.Controlled, Thresholds: th, Setting: setting})
	}
	o.SLOs = nil
	for _, s := range strings.Split(slos, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || v < 1 {
			return fmt.Errorf("bad SLO %q (a ratio ≥ 1)", s)
		}
		o.SLOs = append(o.SLOs, v)
		if slo {
			th := o.Thresholds
			th.SLOTarget, th.SLORatio = 0, v
			o.Variants = append(o.Variants, colocation.Variant{Config: colocation.SLOControlled, Thresholds: th,
				Setting: fmt.Sprintf("declared p99 ≤ %.1f× alone", v)})
		}
	}
	return nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func run(o colocation.Options) error {
	top, err := nodebox.Prepare(os.Stderr)
	if err != nil {
		return err
	}
	// An interrupt ends the run through its clean-up (processes, cgroups, the box).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bo := colocation.BoxOptions()
	bo.Top = top
	bo.LockWait = 30 * time.Minute
	fmt.Fprintf(os.Stderr, "load average before the box: %s\n", loadavg())
	box, err := nodebox.Start(ctx, bo)
	if err != nil {
		return err
	}
	defer box.Stop()
	start := time.Now()
	loadBefore := loadavg()
	rep, err := colocation.Run(ctx, box, o)
	if err != nil {
		return err
	}
	fmt.Printf("\nmake measure-colocation, %s; load average (1, 5, 15 min) at the start %s, at the end %s; %v\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), loadBefore, loadavg(), time.Since(start).Round(time.Second))
	rep.Print(os.Stdout)
	return nil
}
