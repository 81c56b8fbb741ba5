package lswait

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

// metrics are the collector's koordlet_yarn_* series.
type metrics struct {
	waitSeconds *prometheus.CounterVec
	waits       *prometheus.CounterVec
	// interference is the wait behind batch tasks (YARN's, BE pods').
	interference                   *prometheus.CounterVec
	nodeInterferenceP99            prometheus.Gauge
	nodeP999, nodeInterferenceP999 prometheus.Gauge
	nodeInterferenceMean           prometheus.Gauge
	worstPodMean                   prometheus.Gauge
	podP99                         *prometheus.GaugeVec
	nodeP99                        prometheus.Gauge
	nodeMean                       prometheus.Gauge
	source                         *prometheus.GaugeVec
	pressure                       *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	sub := koordmetrics.KoordletSubsystem
	pod := []string{"namespace", "pod"}
	m := &metrics{
		waitSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "yarn_ls_cpu_wait_seconds_total",
			Help: "Time the LS pod's tasks waited runnable for a CPU (eBPF: from wake-up or preemption to running; schedstat: run-queue wait)."}, pod),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "yarn_ls_cpu_waits_total",
			Help: "Waits for a CPU of the LS pod's tasks (eBPF) or time slices they ran (schedstat)."}, pod),
		interference: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "yarn_ls_cpu_interference_wait_seconds_total",
			Help: "Part of the LS pod's CPU wait spent behind batch tasks: a wait counts when the CPU's previous task was in the YARN hierarchy or a BE pod (not an LS pod's, a daemon's or a kernel thread; eBPF only)."}, pod),
		nodeInterferenceP99: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_interference_wait_node_p99_seconds",
			Help: "99th percentile over all LS pods' CPU waits in the last interval, a wait behind a task not batch counting as zero (eBPF only)."}),
		nodeP999: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_wait_node_p999_seconds",
			Help: "99.9th percentile of the CPU waits of all LS pods' tasks over the last interval (eBPF; 0 with schedstat)."}),
		nodeInterferenceP999: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_interference_wait_node_p999_seconds",
			Help: "99.9th percentile over all LS pods' CPU waits in the last interval, a wait behind a task not batch counting as zero (eBPF only)."}),
		nodeInterferenceMean: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_interference_wait_node_mean_seconds",
			Help: "Wait behind batch tasks per LS wake-up over all LS pods in the last interval (a wait behind a task not batch counting as zero; eBPF only). The interference controller steers by the worst pod's: koordlet_yarn_ls_cpu_interference_wait_worst_pod_mean_seconds."}),
		worstPodMean: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_interference_wait_worst_pod_mean_seconds",
			Help: "Wait behind batch tasks per wake-up of the worst LS pod (of those with 20 waits or more) in the last interval: the interference controller's signal (eBPF only; the node mean when no pod had 20)."}),
		podP99: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_wait_p99_seconds",
			Help: "99th percentile of the LS pod's CPU waits over the last interval (eBPF; with schedstat the mean wait per time slice)."}, pod),
		nodeP99: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_wait_node_p99_seconds",
			Help: "99th percentile of the CPU waits of all LS pods' tasks over the last interval (eBPF; 0 with schedstat)."}),
		nodeMean: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_wait_node_mean_seconds",
			Help: "Mean CPU wait of all LS pods' tasks over the last interval (per wake-up with eBPF, per time slice with schedstat)."}),
		source: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_wait_source",
			Help: "1 for the way LS CPU waits are measured now (ebpf or schedstat), 0 for the other."}, []string{"source"}),
		pressure: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_cpu_pressure_some_ratio",
			Help: "Share of the last interval in which some task of the LS pod waited for a CPU (cgroup v2 PSI cpu.pressure)."}, pod),
	}
	if err := errors.Join(
		promreg.Register(reg, &m.waitSeconds),
		promreg.Register(reg, &m.waits),
		promreg.Register(reg, &m.interference),
		promreg.Register(reg, &m.nodeInterferenceP99),
		promreg.Register(reg, &m.nodeP999),
		promreg.Register(reg, &m.nodeInterferenceP999),
		promreg.Register(reg, &m.nodeInterferenceMean),
		promreg.Register(reg, &m.worstPodMean),
		promreg.Register(reg, &m.podP99),
		promreg.Register(reg, &m.nodeP99),
		promreg.Register(reg, &m.nodeMean),
		promreg.Register(reg, &m.source),
		promreg.Register(reg, &m.pressure),
	); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) setSource(s string) {
	for _, v := range []string{SourceEBPF, SourceSchedstat} {
		val := 0.0
		if v == s {
			val = 1
		}
		m.source.WithLabelValues(v).Set(val)
	}
}

func (m *metrics) observePod(ns, name string, wait time.Duration, n uint64, p99 time.Duration) {
	m.waitSeconds.WithLabelValues(ns, name).Add(wait.Seconds())
	m.waits.WithLabelValues(ns, name).Add(float64(n))
	m.podP99.WithLabelValues(ns, name).Set(p99.Seconds())
}

func (m *metrics) observePSI(ns, name string, ratio float64) {
	m.pressure.WithLabelValues(ns, name).Set(ratio)
}

func (m *metrics) observeNode(s Signal) {
	m.nodeP99.Set(s.P99.Seconds())
	m.nodeInterferenceP99.Set(s.InterferenceP99.Seconds())
	m.nodeP999.Set(s.P999.Seconds())
	m.nodeInterferenceP999.Set(s.InterferenceP999.Seconds())
	m.nodeInterferenceMean.Set(s.InterferenceMean.Seconds())
	if s.Source == SourceEBPF {
		m.worstPodMean.Set(s.Value().Seconds())
	}
	m.nodeMean.Set(s.Mean.Seconds())
}

func (m *metrics) forget(ns, name string) {
	for _, v := range []*prometheus.MetricVec{m.waitSeconds.MetricVec, m.waits.MetricVec, m.interference.MetricVec, m.podP99.MetricVec, m.pressure.MetricVec} {
		v.DeleteLabelValues(ns, name)
	}
}
