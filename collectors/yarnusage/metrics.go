package yarnusage

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"
)

// Prometheus label names.
const (
	labelNode        = "node"
	labelContainer   = "container_id"
	labelApplication = "application_id"
	labelUser        = "user"
	labelAM          = "am"
	labelState       = "state"
)

var containerLabels = []string{labelNode, labelContainer, labelApplication, labelUser, labelAM}

// Metrics are the koordlet_yarn_* Prometheus series of the collector.
type Metrics struct {
	CPUUsage            *prometheus.GaugeVec
	MemoryUsage         *prometheus.GaugeVec
	MemoryWithPageCache *prometheus.GaugeVec
	CPUThrottledRatio   *prometheus.GaugeVec
	CPURequest          *prometheus.GaugeVec
	MemoryRequest       *prometheus.GaugeVec
	Containers          *prometheus.GaugeVec
	AccountingAsBE      *prometheus.GaugeVec
	CollectDuration     prometheus.Gauge
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: koordmetrics.KoordletSubsystem, Name: name, Help: help}, labels)
}

// NewMetrics creates the series and registers them in reg; series already
// registered there (a second Install in one process) are reused.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		CPUUsage:            gauge("yarn_container_cpu_usage_cores", "CPU used by a YARN container, in cores, over the last collect interval.", containerLabels...),
		MemoryUsage:         gauge("yarn_container_memory_usage_bytes", "Memory used by a YARN container without page cache (koordlet's container memory usage).", containerLabels...),
		MemoryWithPageCache: gauge("yarn_container_memory_usage_with_page_cache_bytes", "Memory used by a YARN container including page cache.", containerLabels...),
		CPUThrottledRatio:   gauge("yarn_container_cpu_throttled_ratio", "Share of CFS periods in which a YARN container was throttled, over the last collect interval.", containerLabels...),
		CPURequest:          gauge("yarn_container_cpu_request_milli_cores", "CPU a YARN container requested from the ResourceManager, in milli-cores.", containerLabels...),
		MemoryRequest:       gauge("yarn_container_memory_request_bytes", "Memory a YARN container requested from the ResourceManager, in bytes.", containerLabels...),
		Containers:          gauge("yarn_containers", "YARN containers on the node by NodeManager state (UNKNOWN until the NM reports one).", labelNode, labelState),
		AccountingAsBE:      gauge("yarn_usage_accounted_as_be", "1 when the node's NodeSLO declares a BE host application covering the YARN hierarchy, so that YARN usage counts as BE and not as system usage; 0 otherwise.", labelNode),
		CollectDuration: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: koordmetrics.KoordletSubsystem,
			Name: "yarn_collect_duration_seconds", Help: "Wall time of the last YARN usage collection cycle."}),
	}
	for _, p := range []**prometheus.GaugeVec{&m.CPUUsage, &m.MemoryUsage, &m.MemoryWithPageCache, &m.CPUThrottledRatio,
		&m.CPURequest, &m.MemoryRequest, &m.Containers, &m.AccountingAsBE} {
		got, err := register(reg, *p)
		if err != nil {
			return nil, err
		}
		*p = got.(*prometheus.GaugeVec)
	}
	got, err := register(reg, m.CollectDuration)
	if err != nil {
		return nil, err
	}
	m.CollectDuration = got.(prometheus.Gauge)
	return m, nil
}

func register(reg prometheus.Registerer, c prometheus.Collector) (prometheus.Collector, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return are.ExistingCollector, nil
		}
		return nil, err
	}
	return c, nil
}
