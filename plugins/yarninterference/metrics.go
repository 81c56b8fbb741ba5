package yarninterference

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

type metrics struct {
	budget, ceiling, target, signal prometheus.Gauge
	actions                         *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	sub := koordmetrics.KoordletSubsystem
	m := &metrics{
		budget: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_budget_cores",
			Help: "CPU budget the interference controller gives the YARN hierarchy (its cfs quota); 0 when it writes none."}),
		ceiling: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_ceiling_cores",
			Help: "Largest budget allowed now: the node's CPU, BE suppress's budget and YARN's own quota, the smallest."}),
		target: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_target_seconds",
			Help: "LS CPU wait target in force (NodeSLO or --yarn-interference-target)."}),
		signal: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_signal_seconds",
			Help: "LS CPU wait the last step compared with the target (p99 with eBPF, mean per time slice with schedstat)."}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "yarn_interference_actions_total",
			Help: "Steps of the interference controller by action: grow, hold, cut, release (no signal)."}, []string{"action"}),
	}
	if err := promreg.Register(reg, m.budget, m.ceiling, m.target, m.signal, m.actions); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) observe(target, signal time.Duration, ceiling int64, a Action) {
	m.target.Set(target.Seconds())
	m.signal.Set(signal.Seconds())
	m.ceiling.Set(float64(ceiling) / 1000)
	m.actions.WithLabelValues(string(a)).Inc()
}
