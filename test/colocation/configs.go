package colocation

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	apiext "github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
)

// Config is one of the compared node configurations.
type Config int

// The configurations, in the order a repeat runs them.
const (
	// LSAlone: the LS service and nothing else (koordlet with its defaults).
	LSAlone Config = iota + 1
	// NoQoS: LS beside YARN batch, koordlet with its defaults and an empty
	// NodeSLO (the kubelet's cpu.shares are all that separates them).
	NoQoS
	// UpstreamBest: upstream koordlet's best practice for YARN: the YARN
	// hierarchy a BE host application in the NodeSLO, upstream's BE CPU
	// suppress (cfsQuota) and BE memory evict, none of this project's gates.
	UpstreamBest
	// PluginSet: this plugin set with the gates a user turns on.
	PluginSet
	// Controlled: the interference controller (YARNInterferenceControl)
	// at Thresholds.InterferenceTarget, as feedback on the plugin set or,
	// with Thresholds.ControlOnUpstream, on upstream's best (the variant's
	// Setting says which).
	Controlled
	// SLOControlled: configuration 5 steered by the LS service's own
	// latency SLO, which its pod declares (lsslo.Annotation: the p99 of
	// its histogram at most Thresholds.SLOTarget, or SLORatio × LS alone's
	// p99 at the level), with the wait signal and the static threshold as
	// further constraints (YARNLSSLOControl), and BE suppress's
	// feed-forward holding LS's recent peak (YARNSuppressLSPeak).
	SLOControlled
)

// AllConfigs lists every configuration in run order.
var AllConfigs = []Config{LSAlone, NoQoS, UpstreamBest, PluginSet, Controlled}

func (c Config) String() string {
	switch c {
	case LSAlone:
		return "1 LS alone"
	case NoQoS:
		return "2 + YARN, no QoS"
	case UpstreamBest:
		return "3 + YARN, upstream's best"
	case PluginSet:
		return "4 + YARN, this plugin set"
	case Controlled:
		return "5 + YARN, interference control"
	case SLOControlled:
		return "6 + YARN, SLO control"
	}
	return fmt.Sprintf("config %d", int(c))
}

// Batch reports whether YARN batch runs beside LS in c.
func (c Config) Batch() bool { return c != LSAlone }

// Thresholds are the NodeSLO knobs configurations 3 and 4 set.
type Thresholds struct {
	// UpstreamCPUSuppressPercent and PluginCPUSuppressPercent are
	// cpuSuppressThresholdPercent in configurations 3 and 4.
	UpstreamCPUSuppressPercent, PluginCPUSuppressPercent int64
	// MemoryEvictPercent is memoryEvictThresholdPercent in both.
	MemoryEvictPercent int64
	// PluginCPUEvict also turns on the YARN-aware BE CPU evict in
	// configuration 4 (BECPUEvict, YARNBECPUEvict) with the satisfaction
	// band 40–60% at a BE usage of 90% of its limit. Off by default: the
	// rule compares BE's quota with YARN's requests, and the batch here
	// requests more vcores than the node has, so it would evict by design
	// (arbitration of an over-committed node, not co-location).
	PluginCPUEvict bool
	// InterferenceTarget is --yarn-interference-target in configuration 5
	// (0: koordlet's default).
	InterferenceTarget time.Duration
	// InterferenceStepPercent and InterferenceMinPercent are
	// --yarn-interference-step-percent and --yarn-interference-min-cpu-percent
	// there (0: the defaults).
	InterferenceStepPercent, InterferenceMinPercent int64
	// InterferenceGrowAfter is --yarn-interference-grow-after (0: the
	// default).
	InterferenceGrowAfter int64
	// InterferenceSignal is --yarn-interference-signal there ("": the
	// default).
	InterferenceSignal string
	// ControlOnUpstream runs configuration 5 as feedback on upstream's
	// best (configuration 3's NodeSLO and gates, its threshold
	// UpstreamCPUSuppressPercent the base the controller starts from and
	// returns to, no cpu.idle), plus YARNBECPUSuppress, through whose
	// formula the controller moves the threshold, and
	// YARNInterferenceControl. False: on this plugin set (configuration 4).
	ControlOnUpstream bool
	// SLOTarget is the p99 the LS pod declares in configuration 6; 0:
	// SLORatio × LS alone's p99 at the episode's level (0 too: SLOFactor).
	SLOTarget time.Duration
	SLORatio  float64
}

// sloGates are what configuration 6 adds to configuration 5's gates.
var sloGates = []string{"YARNLSSLOControl", "YARNSuppressLSPeak"}

// DefaultThresholds: configuration 3 keeps Koordinator's default CPU
// suppress threshold (65%), its only guard for LS latency; configuration 4,
// whose YARN containers are sched-idle, lets suppress cap batch only at the
// CPU the rest of the node leaves (100%); memory evict at Koordinator's
// default 70% in both.
var DefaultThresholds = Thresholds{UpstreamCPUSuppressPercent: 65, PluginCPUSuppressPercent: 100, MemoryEvictPercent: 70}

// upstreamGates and pluginGates are koordlet's --feature-gates of
// configurations 3 and 4 (the YARN informer, metrics and eBPF discovery are
// on by default in every configuration).
var (
	upstreamGates = []string{"BECPUSuppress", "BEMemoryEvict"}
	pluginGates   = []string{"BECPUSuppress", "BEMemoryEvict", "YARNBECPUSuppress", "YARNBEMemoryEvict",
		"YARNCPUQoS", "YARNNodeManagerGuard"}
)

// KoordletArgs are koordlet's extra flags in c.
func (c Config) KoordletArgs(t Thresholds) []string {
	if c == SLOControlled {
		args := Controlled.KoordletArgs(t)
		for i, a := range args {
			if g, ok := strings.CutPrefix(a, "--feature-gates="); ok {
				for _, s := range sloGates {
					g += "," + s + "=true"
				}
				args[i] = "--feature-gates=" + g
			}
		}
		return args
	}
	var gates []string
	switch c {
	case UpstreamBest:
		gates = upstreamGates
	case Controlled:
		if t.ControlOnUpstream {
			gates = append(append([]string(nil), upstreamGates...), "YARNBECPUSuppress", "YARNInterferenceControl")
			break
		}
		fallthrough
	case PluginSet:
		gates = pluginGates
		if t.PluginCPUEvict {
			gates = append(append([]string(nil), gates...), "BECPUEvict", "YARNBECPUEvict")
		}
		if c == Controlled {
			gates = append(append([]string(nil), gates...), "YARNInterferenceControl")
		}
	default:
		return nil
	}
	on := make([]string, len(gates))
	for i, g := range gates {
		on[i] = g + "=true"
	}
	args := []string{"--feature-gates=" + strings.Join(on, ","), "--yarn-qos-reconcile-interval=1s"}
	if c == Controlled {
		if t.InterferenceTarget > 0 {
			args = append(args, "--yarn-interference-target="+t.InterferenceTarget.String())
		}
		if t.InterferenceGrowAfter > 0 {
			args = append(args, fmt.Sprintf("--yarn-interference-grow-after=%d", t.InterferenceGrowAfter))
		}
		if t.InterferenceStepPercent > 0 {
			args = append(args, fmt.Sprintf("--yarn-interference-step-percent=%d", t.InterferenceStepPercent))
		}
		if t.InterferenceMinPercent > 0 {
			args = append(args, fmt.Sprintf("--yarn-interference-min-cpu-percent=%d", t.InterferenceMinPercent))
		}
		if t.InterferenceSignal != "" {
			args = append(args, "--yarn-interference-signal="+t.InterferenceSignal)
		}
	}
	return args
}

// yarnHostApp declares the YARN hierarchy (hadoop-yarn below the
// besteffort QoS cgroup) a BE host application, as README's "Count YARN
// usage as BE" section tells users to.
func yarnHostApp() slov1alpha1.HostApplicationSpec {
	return slov1alpha1.HostApplicationSpec{Name: "hadoop-yarn", Priority: apiext.PriorityBatch, QoS: apiext.QoSBE,
		CgroupPath: &slov1alpha1.CgroupPath{Base: slov1alpha1.CgroupBaseTypeKubeBesteffort, RelativePath: "hadoop-yarn/"}}
}

// NodeSLO is the node's NodeSLO spec in c.
func (c Config) NodeSLO(t Thresholds) slov1alpha1.NodeSLOSpec {
	if c == SLOControlled {
		return Controlled.NodeSLO(t)
	}
	if c == Controlled && t.ControlOnUpstream {
		return UpstreamBest.NodeSLO(t)
	}
	suppress := t.UpstreamCPUSuppressPercent
	if c == PluginSet || c == Controlled {
		suppress = t.PluginCPUSuppressPercent
	}
	switch c {
	case UpstreamBest, PluginSet, Controlled:
	default:
		return slov1alpha1.NodeSLOSpec{}
	}
	spec := slov1alpha1.NodeSLOSpec{
		HostApplications: []slov1alpha1.HostApplicationSpec{yarnHostApp()},
		ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable:                      ptr.To(true),
			CPUSuppressThresholdPercent: ptr.To(suppress),
			// The cpuset policy keeps at least 2 CPUs for BE: a no-op on
			// a 2-CPU node; cfsQuota is the policy that acts here.
			CPUSuppressPolicy:           slov1alpha1.CPUCfsQuotaPolicy,
			MemoryEvictThresholdPercent: ptr.To(t.MemoryEvictPercent),
		},
	}
	if (c == PluginSet || c == Controlled) && t.PluginCPUEvict {
		r := spec.ResourceUsedThresholdWithBE
		r.CPUEvictBESatisfactionLowerPercent = ptr.To[int64](40)
		r.CPUEvictBESatisfactionUpperPercent = ptr.To[int64](60)
		r.CPUEvictBEUsageThresholdPercent = ptr.To[int64](90)
	}
	if c == PluginSet || c == Controlled {
		policy := slov1alpha1.CPUQOSPolicyCoreSched
		spec.ResourceQOSStrategy = &slov1alpha1.ResourceQOSStrategy{
			Policies: &slov1alpha1.ResourceQOSPolicies{CPUPolicy: &policy},
			BEClass: &slov1alpha1.ResourceQOS{CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(true),
				CPUQOS: slov1alpha1.CPUQOS{SchedIdle: ptr.To[int64](1)}}},
		}
	}
	return spec
}
