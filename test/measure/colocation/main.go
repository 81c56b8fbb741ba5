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
	configs := flag.String("configs", "1,2,3,4", "configurations to run (1 LS alone, 2 no QoS, 3 upstream's best, 4 this plugin set)")
	flag.IntVar(&o.Repeats, "repeats", o.Repeats, "repeats of every configuration and level")
	flag.DurationVar(&o.Warmup, "warmup", o.Warmup, "load and batch before the measured window")
	flag.DurationVar(&o.Window, "window", o.Window, "measured window of an episode")
	flag.DurationVar(&o.Work, "work", o.Work, "CPU time of one request's work")
	flag.IntVar(&o.Batch.Executors, "executors", o.Batch.Executors, "YARN executors running at once")
	flag.IntVar(&o.Batch.MemoryMiB, "executor-memory", o.Batch.MemoryMiB, "MiB a memory executor (every third) allocates; 0: CPU executors only")
	flag.DurationVar(&o.Batch.MinLife, "executor-min-life", o.Batch.MinLife, "shortest executor lifetime")
	flag.DurationVar(&o.Batch.MaxLife, "executor-max-life", o.Batch.MaxLife, "longest executor lifetime")
	flag.Int64Var(&o.Thresholds.UpstreamCPUSuppressPercent, "upstream-suppress", o.Thresholds.UpstreamCPUSuppressPercent, "cpuSuppressThresholdPercent in configuration 3")
	flag.Int64Var(&o.Thresholds.PluginCPUSuppressPercent, "plugin-suppress", o.Thresholds.PluginCPUSuppressPercent, "cpuSuppressThresholdPercent in configuration 4")
	flag.Int64Var(&o.Thresholds.MemoryEvictPercent, "memory-evict", o.Thresholds.MemoryEvictPercent, "memoryEvictThresholdPercent in configurations 3 and 4")
	flag.BoolVar(&o.Thresholds.PluginCPUEvict, "plugin-cpu-evict", false, "also turn on the YARN-aware BE CPU evict in configuration 4 (satisfaction 40–60%, usage 90%)")
	flag.Parse()
	if err := parseLists(&o, *levels, *configs); err != nil {
		fmt.Fprintln(os.Stderr, "colocation:", err)
		os.Exit(2)
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
		if err != nil || c < int(colocation.LSAlone) || c > int(colocation.PluginSet) {
			return fmt.Errorf("bad configuration %q (1–%d)", s, int(colocation.PluginSet))
		}
		o.Configs = append(o.Configs, colocation.Config(c))
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
