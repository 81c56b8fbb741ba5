package jobs

import (
	"fmt"
	"strings"
	"time"

	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
)

// Config is one of make measure-jobs' node configurations. Every one sees
// the same day and, where batch runs, the same job stream.
type Config int

// The configurations, in the order a repeat runs them.
const (
	// LSAlone: the LS service's day, no batch (the latency and
	// utilisation references).
	LSAlone Config = iota + 1
	// BatchAlone: the job stream, no LS load (each job's undisturbed
	// time).
	BatchAlone
	// UpstreamBest: upstream's best practice: the YARN hierarchy a BE host
	// application, BECPUSuppress at Koordinator's default threshold,
	// BEMemoryEvict, which can only evict the NodeManager pod (every
	// container with it).
	UpstreamBest
	// PluginKill: this plugin set, pressure relieved by killing
	// containers (the AMs last).
	PluginKill
	// PluginPreempt: PluginKill with YARNRMPreemption (the RM asks the
	// AMs for containers back before koordlet kills).
	PluginPreempt
	// PluginControlled: PluginPreempt with the interference controller.
	PluginControlled
	// PluginLadder: PluginPreempt with memory relief's rungs before the
	// kill (YARNMemoryRelief: the soft limit on v1, the throttle on v2, a
	// slow growth asked of the ResourceManager).
	PluginLadder
	// PluginSLO: PluginControlled steered by the LS service's own latency
	// SLO (YARNLSSLOControl: the slack of the SLO the LS pod declares, with
	// the interference controller's wait signal and the static threshold
	// as further constraints, the most conservative winning) and BE
	// suppress's feed-forward holding LS's recent peak
	// (YARNSuppressLSPeak). Recommended is this configuration.
	PluginSLO
)

// AllConfigs lists every configuration in run order.
var AllConfigs = []Config{LSAlone, BatchAlone, UpstreamBest, PluginKill, PluginPreempt, PluginLadder, PluginControlled, PluginSLO}

// Recommended is the configuration the docs are to recommend once its day
// is measured (docs/figures.md): issue 49's target for it is its worst
// phase's range entirely below upstream's best's, which CheckSLO reports.
const Recommended = PluginSLO

func (c Config) String() string {
	switch c {
	case LSAlone:
		return "LS alone"
	case BatchAlone:
		return "batch alone"
	case UpstreamBest:
		return "upstream's best"
	case PluginKill:
		return "plugin set, kill"
	case PluginPreempt:
		return "plugin set + RM preemption"
	case PluginControlled:
		return "plugin set + RM preemption + interference control"
	case PluginLadder:
		return "plugin set + RM preemption + memory relief"
	case PluginSLO:
		return "plugin set + RM preemption + SLO control"
	}
	return fmt.Sprintf("config %d", int(c))
}

// Key is c's short name on a command line.
func (c Config) Key() string {
	switch c {
	case LSAlone:
		return "ls-alone"
	case BatchAlone:
		return "batch-alone"
	case UpstreamBest:
		return "upstream"
	case PluginKill:
		return "kill"
	case PluginPreempt:
		return "preempt"
	case PluginControlled:
		return "controlled"
	case PluginLadder:
		return "ladder"
	case PluginSLO:
		return "slo"
	}
	return fmt.Sprintf("config-%d", int(c))
}

// ParseConfigs reads a comma-separated list of configurations, each by its
// Key or its name as String gives it, or "all".
func ParseConfigs(s string) ([]Config, error) {
	if s == "" || s == "all" {
		return AllConfigs, nil
	}
	var out []Config
	for _, name := range strings.Split(s, ",") {
		found := false
		for _, c := range AllConfigs {
			if n := strings.TrimSpace(name); strings.EqualFold(n, c.String()) || strings.EqualFold(n, c.Key()) {
				out, found = append(out, c), true
			}
		}
		if !found {
			var names []string
			for _, c := range AllConfigs {
				names = append(names, c.Key())
			}
			return nil, fmt.Errorf("no configuration %q (the configurations: %s, or all)", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Batch reports whether the job stream runs in c; LS whether the LS load
// does.
func (c Config) Batch() bool { return c != LSAlone }

// LS reports whether the LS load runs in c.
func (c Config) LS() bool { return c != BatchAlone }

// coloc is the co-location harness's configuration whose NodeSLO and
// gates c takes.
func (c Config) coloc() colocation.Config {
	switch c {
	case UpstreamBest:
		return colocation.UpstreamBest
	case PluginKill, PluginPreempt, PluginLadder:
		return colocation.PluginSet
	case PluginControlled, PluginSLO:
		return colocation.Controlled
	}
	return colocation.LSAlone
}

// NodeSLO is the node's NodeSLO in c (the co-location harness's, at its
// default thresholds).
func (c Config) NodeSLO() slov1alpha1.NodeSLOSpec {
	return c.coloc().NodeSLO(colocation.DefaultThresholds)
}

// RMSyncInterval is how often koordlet compares YARN's capacity at the RM
// with the batch allocatable in the days (a day of minutes). The
// allocatable itself moves when koord-manager recomputes it from koordlet's
// NodeMetric (every 25–30 s in the days: the slower step).
const RMSyncInterval = 5 * time.Second

// KoordletArgs are koordlet's extra flags in c. Wherever batch runs,
// YARN's capacity on the node follows Koordinator's batch allocatable,
// pushed to the ResourceManager at rmWeb (upstream's koord-yarn-operator
// does that job there; here koordlet's YARNRMNodeResourceSync does it in
// every configuration, so that only the answers to pressure differ),
// compared every RMSyncInterval (koordlet's default 10 s is more than an
// hour of a 3-minute day).
func (c Config) KoordletArgs(rmWeb string) []string {
	if !c.Batch() {
		return nil
	}
	gates := []string{"YARNBatchLedger=true", "YARNRMNodeResourceSync=true"}
	if c == PluginPreempt || c == PluginControlled || c == PluginLadder || c == PluginSLO {
		gates = append(gates, "YARNRMPreemption=true")
	}
	if c == PluginLadder {
		gates = append(gates, "YARNMemoryRelief=true")
	}
	if c == PluginSLO {
		gates = append(gates, "YARNLSSLOControl=true", "YARNSuppressLSPeak=true")
	}
	var args []string
	for _, a := range c.coloc().KoordletArgs(colocation.DefaultThresholds) {
		if g, ok := strings.CutPrefix(a, "--feature-gates="); ok {
			gates = append(strings.Split(g, ","), gates...)
			continue
		}
		args = append(args, a)
	}
	return append(args, "--feature-gates="+strings.Join(gates, ","),
		"--yarn-rm-endpoints=http://"+rmWeb, "--yarn-rm-user=yarn", "--yarn-rm-sync-interval="+RMSyncInterval.String())
}
