package yarnusage

import (
	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
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

var (
	containerLabels   = []string{labelNode, labelContainer, labelApplication, labelUser, labelAM}
	applicationLabels = []string{labelNode, labelApplication, labelUser}
)

// Metrics are the koordlet_yarn_* Prometheus series of the collector:
// per container (--yarn-container-metrics=container), per application
// (application) and the node's totals (always).
type Metrics struct {
	CPUUsage            *prometheus.GaugeVec
	MemoryUsage         *prometheus.GaugeVec
	MemoryWithPageCache *prometheus.GaugeVec
	CPUThrottledRatio   *prometheus.GaugeVec
	CPURequest          *prometheus.GaugeVec
	MemoryRequest       *prometheus.GaugeVec

	AppCPUUsage      *prometheus.GaugeVec
	AppMemoryUsage   *prometheus.GaugeVec
	AppCPURequest    *prometheus.GaugeVec
	AppMemoryRequest *prometheus.GaugeVec
	AppContainers    *prometheus.GaugeVec

	TotalCPUUsage    *prometheus.GaugeVec
	TotalMemoryUsage *prometheus.GaugeVec
	// ChargedToNodeManager is the memory of containers koordlet moved
	// that stays charged to the NodeManager pod's cgroup.
	ChargedToNodeManager *prometheus.GaugeVec
	Containers           *prometheus.GaugeVec
	// WithoutCgroup counts the containers the NodeManager lists as
	// RUNNING for which discovery found no cgroup under the YARN
	// hierarchy (a hierarchy mismatch, or YARN making no cgroups).
	WithoutCgroup   *prometheus.GaugeVec
	AccountingAsBE  *prometheus.GaugeVec
	CollectDuration *prometheus.GaugeVec
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
		CPURequest:          gauge("yarn_container_cpu_request_cores", "CPU a YARN container requested from the ResourceManager, in cores.", containerLabels...),
		MemoryRequest:       gauge("yarn_container_memory_request_bytes", "Memory a YARN container requested from the ResourceManager, in bytes.", containerLabels...),

		AppCPUUsage:      gauge("yarn_application_cpu_usage_cores", "CPU used by a YARN application's containers on the node, in cores, over the last collect interval (--yarn-container-metrics=application).", applicationLabels...),
		AppMemoryUsage:   gauge("yarn_application_memory_usage_bytes", "Memory used by a YARN application's containers on the node, without page cache (--yarn-container-metrics=application).", applicationLabels...),
		AppCPURequest:    gauge("yarn_application_cpu_request_cores", "CPU a YARN application's containers on the node requested, in cores (--yarn-container-metrics=application).", applicationLabels...),
		AppMemoryRequest: gauge("yarn_application_memory_request_bytes", "Memory a YARN application's containers on the node requested, in bytes (--yarn-container-metrics=application).", applicationLabels...),
		AppContainers:    gauge("yarn_application_containers", "A YARN application's containers on the node with a cgroup (--yarn-container-metrics=application).", applicationLabels...),

		TotalCPUUsage:        gauge("yarn_cpu_usage_cores", "CPU used by all YARN containers on the node, in cores, over the last collect interval.", labelNode),
		TotalMemoryUsage:     gauge("yarn_memory_usage_bytes", "Memory used by all YARN containers on the node, without page cache.", labelNode),
		ChargedToNodeManager: gauge("yarn_memory_charged_to_nodemanager_bytes", "Memory of YARN containers whose processes koordlet moved into a cgroup of their own (YARNContainerCgroups) that stays charged to the memory cgroup they left (the NodeManager pod's): cgroup v2 and kernels from 6.8 move no charges. It is counted in those containers' memory usage.", labelNode),
		Containers:           gauge("yarn_containers", "YARN containers on the node by NodeManager state (UNKNOWN until the NM reports one).", labelNode, labelState),
		WithoutCgroup:        gauge("yarn_containers_without_cgroup", "YARN containers the NodeManager lists as RUNNING for which no cgroup was found under the YARN hierarchy (--yarn-cgroup-hierarchy not the NodeManager's, or YARN makes no cgroups for its containers): not measured, isolated or evictable one by one.", labelNode),
		AccountingAsBE:       gauge("yarn_usage_accounted_as_be", "1 when the node's NodeSLO declares a BE host application covering the YARN hierarchy, so that YARN usage counts as BE and not as system usage; 0 otherwise. Only on nodes where a NodeManager runs.", labelNode),
		CollectDuration:      gauge("yarn_collect_duration_seconds", "Wall time of the last YARN usage collection cycle.", labelNode),
	}
	for _, p := range []**prometheus.GaugeVec{&m.CPUUsage, &m.MemoryUsage, &m.MemoryWithPageCache, &m.CPUThrottledRatio,
		&m.CPURequest, &m.MemoryRequest, &m.AppCPUUsage, &m.AppMemoryUsage, &m.AppCPURequest, &m.AppMemoryRequest,
		&m.AppContainers, &m.TotalCPUUsage, &m.TotalMemoryUsage, &m.ChargedToNodeManager, &m.Containers, &m.WithoutCgroup, &m.AccountingAsBE, &m.CollectDuration} {
		if err := promreg.Register(reg, p); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// resetPerContainer drops every per-container and per-application series.
func (m *Metrics) resetPerContainer() {
	for _, g := range []*prometheus.GaugeVec{m.CPUUsage, m.MemoryUsage, m.MemoryWithPageCache, m.CPUThrottledRatio,
		m.CPURequest, m.MemoryRequest, m.AppCPUUsage, m.AppMemoryUsage, m.AppCPURequest, m.AppMemoryRequest, m.AppContainers} {
		g.Reset()
	}
}
