package yarnledger

import (
	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

// Resource label values of the batch series.
const (
	ResourceCPU    = "batch-cpu"    // unit core
	ResourceMemory = "batch-memory" // unit byte
)

// Metrics are the ledger's Prometheus series (koordlet_yarn_batch_*).
type Metrics struct {
	Origin, KubernetesRequested, YARNAllocated, YARNCapacity, OverCommit *prometheus.GaugeVec
	// Age is how old the YARN allocated value is (since the NodeManager
	// last answered).
	Age *prometheus.GaugeVec
	// Patches counts Node patches by result; RMUpdates the RM pushes.
	Patches, RMUpdates *prometheus.CounterVec
}

// NewMetrics registers the series in reg (reusing registered ones).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: koordmetrics.KoordletSubsystem, Name: name,
			Help: help + " cpu (batch-cpu) in cores, memory (batch-memory) in bytes; the unit label says which."}, []string{"node", "resource", "unit"})
	}
	m := &Metrics{
		Origin:              gauge("yarn_batch_origin_allocatable", "The node's origin batch allocatable (koord-manager's originExtendedAllocatable)."),
		KubernetesRequested: gauge("yarn_batch_kubernetes_requested", "Batch requests of the node's koord-batch pods."),
		YARNAllocated:       gauge("yarn_batch_yarn_allocated", "YARN's allocations on the node: requests of the NodeManager's non-terminal containers."),
		YARNCapacity:        gauge("yarn_batch_yarn_capacity", "YARN's capacity on the node: origin batch allocatable minus the Kubernetes batch requests."),
		OverCommit:          gauge("yarn_batch_overcommit", "Kubernetes batch requests plus YARN allocations beyond the origin batch allocatable."),
		Age: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: koordmetrics.KoordletSubsystem, Name: "yarn_batch_yarn_allocated_age_seconds",
			Help: "Age of the YARN allocated value: time since the NodeManager last answered."}, []string{"node"}),
		Patches: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: koordmetrics.KoordletSubsystem, Name: "yarn_batch_ledger_patches_total",
			Help: "Patches of the Node's thirdPartyAllocations hadoop-yarn entry, by result (patched, unchanged, error; corrected: the Node held another hadoop-yarn value than the ledger had written; expired: the entry was withdrawn because the NodeManager is gone)."}, []string{"node", "result"}),
		RMUpdates: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: koordmetrics.KoordletSubsystem, Name: "yarn_rm_node_resource_updates_total",
			Help: "updateNodeResource calls to the ResourceManager, by result (ok, error; drift: a read-back found the RM holding another resource than was pushed, then pushed again; preempt: a capacity below YARN's allocation pushed with the over-commit timeout; preempt_released, preempt_late: YARN's allocation fitted its capacity again before or after that timeout and its grace)."}, []string{"node", "result"}),
	}
	for _, g := range []**prometheus.GaugeVec{&m.Origin, &m.KubernetesRequested, &m.YARNAllocated, &m.YARNCapacity, &m.OverCommit, &m.Age} {
		if err := promreg.Register(reg, g); err != nil {
			return nil, err
		}
	}
	for _, c := range []**prometheus.CounterVec{&m.Patches, &m.RMUpdates} {
		if err := promreg.Register(reg, c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe sets the gauges from v.
func (m *Metrics) observe(node string, v View) {
	if m == nil {
		return
	}
	set := func(g *prometheus.GaugeVec, b Batch) {
		g.WithLabelValues(node, ResourceCPU, "core").Set(float64(b.MilliCPU) / 1000)
		g.WithLabelValues(node, ResourceMemory, "byte").Set(float64(b.MemoryBytes))
	}
	if v.OriginKnown {
		set(m.Origin, v.Origin)
		set(m.YARNCapacity, v.YARNCapacity)
		set(m.OverCommit, v.OverCommit)
	}
	set(m.KubernetesRequested, v.KubernetesRequested)
	set(m.YARNAllocated, v.YARNAllocated)
}
