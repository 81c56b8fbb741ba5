package yarninterference

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

type metrics struct {
	budget, threshold, target, signal prometheus.Gauge
	actions                           *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	sub := koordmetrics.KoordletSubsystem
	m := &metrics{
		budget: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_budget_cores",
			Help: "BE CPU budget in force at the controller's last step: BE suppress's cfs quota on the besteffort cgroup (with the YARN root's where the budget is divided), in cores; negative when unlimited."}),
		threshold: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_threshold_percent",
			Help: "cpuSuppressThresholdPercent BE suppress computes its budget with: the NodeSLO's, moved by the interference controller (0 when it is stopped)."}),
		target: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_target_seconds",
			Help: "LS CPU wait target in force (NodeSLO or --yarn-interference-target)."}),
		signal: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_signal_seconds",
			Help: "LS CPU wait the last step compared with the target (p99 with eBPF, mean per time slice with schedstat)."}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "yarn_interference_actions_total",
			Help: "Steps of the interference controller by action: grow, hold, cut, release (no signal)."}, []string{"action"}),
	}
	if err := promreg.Register(reg, m.budget, m.threshold, m.target, m.signal, m.actions); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) observe(target, signal time.Duration, budgetCores float64, a Action) {
	m.target.Set(target.Seconds())
	m.signal.Set(signal.Seconds())
	m.budget.Set(budgetCores)
	m.actions.WithLabelValues(string(a)).Inc()
}
