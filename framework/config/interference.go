package config

import (
	"flag"
	"fmt"
	"time"
)

// Interference holds the flags of the LS CPU wait signal and the YARN
// interference controller (gates YARNLSCPUWait, YARNInterferenceControl).
type Interference struct {
	// Interval is how often the LS CPU wait is measured and BE suppress's
	// threshold moved.
	Interval time.Duration
	// Target is the LS pods' CPU wait the controller holds YARN to (the
	// mean wait behind non-LS tasks per wake-up with eBPF, the mean wait
	// per time slice with schedstat); the
	// NodeSLO's extensions.yarnInterferenceControl.cpuWaitTargetMicroseconds
	// overrides it.
	Target time.Duration
	// Signal is which LS wait the target applies to: lswait.SignalInterference
	// (the worst LS pod's wait behind batch) or lswait.SignalWait (behind
	// any task).
	Signal string
	// MinPercent is the BE budget's floor a cut leaves, in percent of the
	// node's CPU; StepPercent the threshold's growth per interval, in
	// percent points.
	MinPercent, StepPercent int64
	// GrowAfter is how many quiet intervals in a row each step up of the
	// threshold waits for (1: every quiet interval).
	GrowAfter int64
	// SLOShrinkBelowPercent, SLOGrowAbovePercent and SLOMaxLoadPercent are
	// the bands of Heracles' rule on the declared SLO's slack
	// (YARNLSSLOControl): under the first the budget is halved, above the
	// second the threshold grows while the LS load is under the third;
	// between them it holds (0: the default).
	SLOShrinkBelowPercent, SLOGrowAbovePercent, SLOMaxLoadPercent int64
}

// Interference defaults.
const (
	DefaultInterferenceInterval    = time.Second
	DefaultInterferenceTarget      = 50 * time.Microsecond
	DefaultInterferenceSignal      = "interference"
	DefaultInterferenceMinPercent  = 5
	DefaultInterferenceStepPercent = 2
	DefaultInterferenceGrowAfter   = 1
	// Heracles' bands (ISCA 2015).
	DefaultInterferenceSLOShrinkBelowPercent = 5
	DefaultInterferenceSLOGrowAbovePercent   = 10
	DefaultInterferenceSLOMaxLoadPercent     = 85
)

func (i *Interference) initFlags(fs *flag.FlagSet) {
	for _, d := range []struct {
		v   *int64
		def int64
	}{{&i.SLOShrinkBelowPercent, DefaultInterferenceSLOShrinkBelowPercent}, {&i.SLOGrowAbovePercent, DefaultInterferenceSLOGrowAbovePercent}, {&i.SLOMaxLoadPercent, DefaultInterferenceSLOMaxLoadPercent}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	fs.DurationVar(&i.Interval, "yarn-interference-interval", i.Interval,
		"Period of the LS CPU wait measurement (YARNLSCPUWait) and of the interference controller's step (YARNInterferenceControl); BE suppress applies the threshold at its own period (cpuSuppressIntervalSeconds).")
	fs.DurationVar(&i.Target, "yarn-interference-target", i.Target,
		"LS CPU wait the interference controller holds batch to: the mean time an LS pod's task waits behind tasks of no LS pod per wake-up (eBPF; the mean run-queue wait per time slice where eBPF cannot run). The NodeSLO's spec.extensions.yarnInterferenceControl.cpuWaitTargetMicroseconds overrides it.")
	fs.StringVar(&i.Signal, "yarn-interference-signal", i.Signal,
		"LS CPU wait the target applies to: interference (the worst LS pod's mean wait behind batch tasks per wake-up) or wait (its mean wait behind any task, LS's own included: with batch SCHED_IDLE (cpu.idle) LS hardly ever waits behind batch, and batch's harm shows as LS queueing behind LS). Both are the mean run-queue wait per time slice where eBPF cannot run.")
	fs.Int64Var(&i.MinPercent, "yarn-interference-min-cpu-percent", i.MinPercent,
		"Smallest BE CPU budget while the interference controller steers, in percent of the node's CPU: where a cut stops, and BE suppress's cpuSuppressMinPercent at least this (a NodeSLO minimum above it is kept), so that LS growing after a cut cannot take YARN's ApplicationMasters below it.")
	fs.Int64Var(&i.StepPercent, "yarn-interference-step-percent", i.StepPercent,
		"Growth of BE suppress's cpuSuppressThresholdPercent per interval while LS waits less than 70% of the target, in percent points (above the target the budget is halved).")
	fs.Int64Var(&i.GrowAfter, "yarn-interference-grow-after", i.GrowAfter,
		"Quiet intervals in a row (LS waiting less than 70% of the target) the interference controller waits for before each step up of the threshold; a cut comes at the first interval above the target either way. 1 steps up at every quiet interval; more trades batch CPU for fewer probes past the point where LS's tail turns.")
	fs.Int64Var(&i.SLOShrinkBelowPercent, "yarn-interference-slo-shrink-below-percent", i.SLOShrinkBelowPercent,
		"Slack of the declared LS SLO (YARNLSSLOControl; (target − latency) ÷ target, in percent) under which the interference controller halves batch's budget; below 0 the budget goes to --yarn-interference-min-cpu-percent at once.")
	fs.Int64Var(&i.SLOGrowAbovePercent, "yarn-interference-slo-grow-above-percent", i.SLOGrowAbovePercent,
		"Slack of the declared LS SLO (percent) above which the interference controller grows BE suppress's threshold a step (while the LS load is under --yarn-interference-slo-max-ls-load-percent); between it and --yarn-interference-slo-shrink-below-percent the threshold holds.")
	fs.Int64Var(&i.SLOMaxLoadPercent, "yarn-interference-slo-max-ls-load-percent", i.SLOMaxLoadPercent,
		"LS load (the LS pods' CPU use in percent of the node's CPU × the NodeSLO's cpuSuppressThresholdPercent) at or above which the declared-SLO rule does not grow the threshold, whatever the slack.")
}

// SLOBands are SLOShrinkBelowPercent, SLOGrowAbovePercent and
// SLOMaxLoadPercent, each 0 replaced by its default.
func (i *Interference) SLOBands() (shrinkBelow, growAbove, maxLoad int64) {
	or := func(v, def int64) int64 {
		if v == 0 {
			return def
		}
		return v
	}
	return or(i.SLOShrinkBelowPercent, DefaultInterferenceSLOShrinkBelowPercent),
		or(i.SLOGrowAbovePercent, DefaultInterferenceSLOGrowAbovePercent),
		or(i.SLOMaxLoadPercent, DefaultInterferenceSLOMaxLoadPercent)
}

func (i *Interference) validate() error {
	if i.Interval < 100*time.Millisecond {
		return fmt.Errorf("--yarn-interference-interval %v: below 100ms", i.Interval)
	}
	if i.Target <= 0 {
		return fmt.Errorf("--yarn-interference-target %v: must be positive", i.Target)
	}
	if i.Signal != "interference" && i.Signal != "wait" {
		return fmt.Errorf("--yarn-interference-signal %q: not interference or wait", i.Signal)
	}
	if i.MinPercent < 1 || i.MinPercent > 100 {
		return fmt.Errorf("--yarn-interference-min-cpu-percent %d: not in 1–100", i.MinPercent)
	}
	if i.StepPercent < 1 || i.StepPercent > 100 {
		return fmt.Errorf("--yarn-interference-step-percent %d: not in 1–100", i.StepPercent)
	}
	if i.GrowAfter < 1 || i.GrowAfter > 600 {
		return fmt.Errorf("--yarn-interference-grow-after %d: not in 1–600", i.GrowAfter)
	}
	shrink, grow, load := i.SLOBands()
	if shrink < 0 || shrink > grow || grow > 100 {
		return fmt.Errorf("--yarn-interference-slo-shrink-below-percent %d, --yarn-interference-slo-grow-above-percent %d: not 0 < shrink ≤ grow ≤ 100", shrink, grow)
	}
	if load < 0 || load > 100 {
		return fmt.Errorf("--yarn-interference-slo-max-ls-load-percent %d: not in 1–100", load)
	}
	return nil
}
