// Package config holds the koordlet-yarn flags.
package config

import (
	"flag"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// Defaults.
const (
	DefaultNMPodSelector  = "app.kubernetes.io/component=node-manager"
	DefaultNMPort         = 8042
	DefaultResyncInterval = 10 * time.Second
	// DefaultEvictGracePeriod matches YARN's own
	// yarn.nodemanager.sleep-delay-before-sigkill.ms (250 ms).
	DefaultEvictGracePeriod = 250 * time.Millisecond
	// DefaultMemoryThrottleBandPercent is --yarn-memory-throttle-band-percent.
	DefaultMemoryThrottleBandPercent = 5
	// ContainerMetrics values: a set of series per container, per
	// application, or none (node totals only).
	ContainerMetricsContainer   = "container"
	ContainerMetricsApplication = "application"
	ContainerMetricsOff         = "off"
	// DefaultEvictAuditFile is on the host's /var/run/koordlet, which
	// Koordinator's koordlet DaemonSet mounts read-write there.
	DefaultEvictAuditFile = "/host-var-run-koordlet/yarn-evictions.jsonl"
)

// Config is the koordlet-yarn configuration, set from koordlet's flags.
type Config struct {
	// NMEndpoint is the NodeManager web address (http://host:port). When
	// empty, the NM pod is found through koordlet's pod list.
	NMEndpoint string
	// NMPodSelector selects the NodeManager pod among the node's pods.
	NMPodSelector string
	// NMPort is the NM web port used with the discovered pod's IP.
	NMPort int
	// NMTimeout bounds each NM request.
	NMTimeout time.Duration
	// NMMaxResponseBytes caps an NM response body.
	NMMaxResponseBytes int64
	// CgroupHierarchy is yarn.nodemanager.linux-container-executor.cgroups.hierarchy;
	// empty means hadoop-yarn below the besteffort QoS cgroup.
	CgroupHierarchy string
	// ResyncInterval is the period of the full resync (cgroup scan + NM).
	ResyncInterval time.Duration
	// QoSReconcileInterval is the period of the QoS appliers' reconcile.
	QoSReconcileInterval time.Duration
	// ContainerCgroupsScanInterval is the period of the scan of the
	// NodeManager pod's cgroups for container processes (gate
	// YARNContainerCgroups; the exec watch finds them at once).
	ContainerCgroupsScanInterval time.Duration
	// EvictGracePeriod is how long an evicted container's processes get
	// between SIGTERM and SIGKILL.
	EvictGracePeriod time.Duration
	// EvictAuditFile is where every eviction is appended as a JSON line
	// ("" none: /yarn/evictions only).
	EvictAuditFile string
	// RM configures the ResourceManager REST client.
	RM RM
	// Ledger configures the batch ledger and the RM node resource sync.
	Ledger Ledger
	// QoSPolicyFile is the YARN QoS policy (gate YARNQoSPolicy), typically
	// a mounted ConfigMap; empty: none.
	QoSPolicyFile string
	// ContainerMetrics is which Prometheus series the YARN usage collector
	// and the QoS policy export: per container (ContainerMetricsContainer),
	// per application or none beyond the node totals. The metric cache,
	// which eviction reads, is written per container whatever this is.
	ContainerMetrics string
	// Interference configures the LS CPU wait signal and the interference
	// controller.
	Interference Interference
	// SLO configures the declared LS latency SLO's collector.
	SLO SLO
	// MemoryThrottleBandPercent is how far below the BE memory evict
	// threshold, in percent of node memory, memory relief's throttle
	// starts (gate YARNMemoryRelief).
	MemoryThrottleBandPercent int64
	// Suppress configures the YARN-aware BE suppress.
	Suppress Suppress
}

// NewDefault returns the default configuration.
func NewDefault() *Config {
	return &Config{
		NMPodSelector:                DefaultNMPodSelector,
		NMPort:                       DefaultNMPort,
		NMTimeout:                    yarn.DefaultNMTimeout,
		NMMaxResponseBytes:           yarn.DefaultNMMaxResponseBytes,
		ResyncInterval:               DefaultResyncInterval,
		EvictGracePeriod:             DefaultEvictGracePeriod,
		EvictAuditFile:               DefaultEvictAuditFile,
		QoSReconcileInterval:         10 * time.Second,
		ContainerCgroupsScanInterval: time.Second,
		ContainerMetrics:             ContainerMetricsContainer,
		MemoryThrottleBandPercent:    DefaultMemoryThrottleBandPercent,
		Suppress:                     Suppress{LSPeakWindow: DefaultSuppressLSPeakWindow},
		RM:                           RM{Timeout: yarn.DefaultRMTimeout, MaxResponseBytes: yarn.DefaultRMMaxResponseBytes},
		Interference: Interference{Interval: DefaultInterferenceInterval, Target: DefaultInterferenceTarget, Signal: DefaultInterferenceSignal,
			MinPercent: DefaultInterferenceMinPercent, StepPercent: DefaultInterferenceStepPercent,
			GrowAfter: DefaultInterferenceGrowAfter},
		SLO:    DefaultSLO(),
		Ledger: Ledger{PatchInterval: DefaultLedgerPatchInterval, Hysteresis: DefaultLedgerHysteresis, MaxAge: DefaultLedgerMaxAge, RMSyncInterval: DefaultRMSyncInterval, RMReadBack: DefaultRMReadBack, Expiry: DefaultLedgerExpiry, RMPreemptionTimeout: DefaultRMPreemptionTimeout, RMPreemptionGrace: DefaultRMPreemptionGrace, RMCapacityRecord: DefaultRMCapacityRecord},
	}
}

// InitFlags registers the flags on fs.
func (c *Config) InitFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.NMEndpoint, "yarn-nm-endpoint", c.NMEndpoint,
		"YARN NodeManager web address, e.g. http://127.0.0.1:8042. Empty: find the NodeManager pod with --yarn-nm-pod-selector.")
	fs.StringVar(&c.NMPodSelector, "yarn-nm-pod-selector", c.NMPodSelector,
		"Label selector of the YARN NodeManager pod among the node's pods (used when --yarn-nm-endpoint is empty).")
	fs.IntVar(&c.NMPort, "yarn-nm-port", c.NMPort,
		"Web port of the discovered NodeManager pod (yarn.nodemanager.webapp.address).")
	fs.DurationVar(&c.NMTimeout, "yarn-nm-timeout", c.NMTimeout, "Timeout of each NodeManager REST request.")
	fs.Int64Var(&c.NMMaxResponseBytes, "yarn-nm-max-response-bytes", c.NMMaxResponseBytes,
		"Largest NodeManager REST response accepted, in bytes.")
	fs.StringVar(&c.CgroupHierarchy, "yarn-cgroup-hierarchy", c.CgroupHierarchy,
		"YARN cgroup hierarchy relative to the cgroup mounts: the value of yarn.nodemanager.linux-container-executor.cgroups.hierarchy. "+
			"Empty: "+cgroups.DefaultYARNDirName+" below the besteffort QoS cgroup (kubepods/besteffort/hadoop-yarn or kubepods.slice/kubepods-besteffort.slice/hadoop-yarn).")
	fs.DurationVar(&c.ResyncInterval, "yarn-resync-interval", c.ResyncInterval,
		"Period of the full YARN container resync (cgroup scan and NodeManager list).")
	fs.DurationVar(&c.QoSReconcileInterval, "yarn-qos-reconcile-interval", c.QoSReconcileInterval,
		"Period at which the YARN QoS appliers re-apply the BE QoS to every container (they also apply at creation and on NodeSLO changes).")
	fs.DurationVar(&c.ContainerCgroupsScanInterval, "yarn-container-cgroups-scan-interval", c.ContainerCgroupsScanInterval,
		"Period of the scan of the NodeManager pod's cgroups for YARN container processes that YARN gave no cgroup (gate YARNContainerCgroups). The eBPF exec watch finds them at their exec; the scan catches what it missed, and is all there is without eBPF.")
	fs.StringVar(&c.EvictAuditFile, "yarn-evict-audit-file", c.EvictAuditFile,
		"File every YARN container eviction is appended to as one JSON line (reason, container, application, user, released, why, outcome); rotated at 10 MiB, one old file kept (its name with the rotation's UTC time before the extension). Empty: the last 500 at /yarn/evictions only. Kubernetes Events on the NodeManager pod are merged and dropped by the event correlator in a storm; this record is not.")
	fs.DurationVar(&c.EvictGracePeriod, "yarn-evict-grace-period", c.EvictGracePeriod,
		"Time an evicted YARN container's processes get between SIGTERM and SIGKILL (YARN's sleep-delay-before-sigkill).")
	fs.Int64Var(&c.MemoryThrottleBandPercent, "yarn-memory-throttle-band-percent", c.MemoryThrottleBandPercent,
		"How far below NodeSLO's memoryEvictThresholdPercent, in percent of node memory, the memory relief throttle starts (gate YARNMemoryRelief, cgroup v2): from there the YARN hierarchy's memory.high holds node memory near the band's middle (batch's page cache reclaimed first, then its growth throttled), and is given back a quarter band below the start.")
	c.RM.initFlags(fs)
	c.Ledger.initFlags(fs)
	c.Interference.initFlags(fs)
	c.Suppress.initFlags(fs)
	c.SLO.initFlags(fs)
	fs.StringVar(&c.ContainerMetrics, "yarn-container-metrics", c.ContainerMetrics,
		"Prometheus series of YARN usage: container (a set per container: container_id, application_id, user, am; and the effective priority with queue, rule, tier), application (a set per application: application_id, user) or off (the node's YARN totals only). Per-container series come and go with every short-lived container; eviction reads koordlet's metric cache, which is written per container whatever this is.")
	fs.StringVar(&c.QoSPolicyFile, "yarn-qos-policy-file", c.QoSPolicyFile,
		"YARN QoS policy file (YAML; typically a mounted ConfigMap), reloaded when it changes; used with the YARNQoSPolicy gate. Empty: none.")
}

// Validate checks the configuration and says which flag is wrong.
func (c *Config) Validate() error {
	if c.NMEndpoint != "" {
		if err := yarn.ValidateEndpoint(c.NMEndpoint); err != nil {
			return fmt.Errorf("--yarn-nm-endpoint: %w", err)
		}
	}
	if _, err := labels.Parse(c.NMPodSelector); err != nil {
		return fmt.Errorf("--yarn-nm-pod-selector %q: %w", c.NMPodSelector, err)
	}
	if c.NMPort <= 0 || c.NMPort > 65535 {
		return fmt.Errorf("--yarn-nm-port %d: not a TCP port", c.NMPort)
	}
	if c.NMTimeout <= 0 {
		return fmt.Errorf("--yarn-nm-timeout %v: must be positive", c.NMTimeout)
	}
	if c.NMMaxResponseBytes <= 0 {
		return fmt.Errorf("--yarn-nm-max-response-bytes %d: must be positive", c.NMMaxResponseBytes)
	}
	if c.CgroupHierarchy != "" {
		if _, err := cgroups.CleanHierarchyDir(c.CgroupHierarchy); err != nil {
			return fmt.Errorf("--yarn-cgroup-hierarchy: %w", err)
		}
	}
	if c.QoSReconcileInterval < time.Second {
		return fmt.Errorf("--yarn-qos-reconcile-interval %v: must be at least 1s", c.QoSReconcileInterval)
	}
	if c.ContainerCgroupsScanInterval < 100*time.Millisecond {
		return fmt.Errorf("--yarn-container-cgroups-scan-interval %v: must be at least 100ms", c.ContainerCgroupsScanInterval)
	}
	if c.EvictGracePeriod < 0 || c.EvictGracePeriod > time.Minute {
		return fmt.Errorf("--yarn-evict-grace-period %v: must be between 0 and 1m", c.EvictGracePeriod)
	}
	if c.MemoryThrottleBandPercent < 1 || c.MemoryThrottleBandPercent > 50 {
		return fmt.Errorf("--yarn-memory-throttle-band-percent %d: must be between 1 and 50", c.MemoryThrottleBandPercent)
	}
	if c.ResyncInterval < 100*time.Millisecond {
		return fmt.Errorf("--yarn-resync-interval %v: must be at least 100ms", c.ResyncInterval)
	}
	switch c.ContainerMetrics {
	case ContainerMetricsContainer, ContainerMetricsApplication, ContainerMetricsOff:
	default:
		return fmt.Errorf("--yarn-container-metrics %q: must be %s, %s or %s", c.ContainerMetrics,
			ContainerMetricsContainer, ContainerMetricsApplication, ContainerMetricsOff)
	}
	if err := c.RM.validate(); err != nil {
		return err
	}
	if err := c.Interference.validate(); err != nil {
		return err
	}
	if err := c.SLO.validate(); err != nil {
		return err
	}
	if err := c.Ledger.validate(); err != nil {
		return err
	}
	if err := c.Suppress.validate(); err != nil {
		return err
	}
	return nil
}
