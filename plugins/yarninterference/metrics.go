package yarninterference

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

type metrics struct {
	budget, threshold, target, signal prometheus.Gauge
	actions                           *prometheus.CounterVec
	// dominant is 1 for the signal that decided the last step, 0 for the
	// others; slack the declared SLO's slack the last step used (no
	// series when it used none); signalActions the steps by the deciding
	// signal and its action.
	dominant, slack *prometheus.GaugeVec
	signalActions   *prometheus.CounterVec
	// unmet is how long the declared SLO has been violated with the BE
	// budget at its floor (0: not, or not yet for a whole window).
	unmet prometheus.Gauge
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
			Help: "Steps of the interference controller by the deciding signal's action: grow, hold, cut, off (the budget to the floor on a violated SLO), release (no signal)."}, []string{"action"}),
		dominant: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_dominant_signal",
			Help: "1 for the signal that decided the interference controller's last step (the most conservative proposal), 0 for the others: slo (the declared LS latency SLO), cpu-wait (the LS CPU wait), static (the NodeSLO's threshold, or a cut kept under it)."}, []string{"signal"}),
		slack: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_slo_slack_ratio",
			Help: "Slack (target − latency) ÷ target of the declared LS pod with the least of it that the controller's last step used; no series when the step used none."}, nil),
		signalActions: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "yarn_interference_signal_actions_total",
			Help: "Steps of the interference controller by the signal that decided them and its action."}, []string{"signal", "action"}),
		unmet: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_interference_slo_unmet_at_floor_seconds",
			Help: "How long the declared LS SLO has been violated with the BE budget at its floor (--yarn-interference-min-cpu-percent), once that has lasted the pod's whole latency window; 0 otherwise. Batch's CPU is then not what the service waits for, or the SLO is tighter than it holds alone."}),
	}
	if err := errors.Join(
		promreg.Register(reg, &m.budget),
		promreg.Register(reg, &m.threshold),
		promreg.Register(reg, &m.target),
		promreg.Register(reg, &m.signal),
		promreg.Register(reg, &m.actions),
		promreg.Register(reg, &m.dominant),
		promreg.Register(reg, &m.slack),
		promreg.Register(reg, &m.signalActions),
		promreg.Register(reg, &m.unmet),
	); err != nil {
		return nil, err
	}
	return m, nil
}

// observeWait records the LS CPU wait and its target.
func (m *metrics) observeWait(target, signal time.Duration) {
	m.target.Set(target.Seconds())
	m.signal.Set(signal.Seconds())
}

// decided records a step's winner and action, and the slack it used
// (ok false: none).
func (m *metrics) decided(signal string, a Action, slack float64, ok bool) {
	m.actions.WithLabelValues(string(a)).Inc()
	m.signalActions.WithLabelValues(signal, string(a)).Inc()
	for _, s := range signals {
		v := 0.0
		if s == signal {
			v = 1
		}
		m.dominant.WithLabelValues(s).Set(v)
	}
	if ok {
		m.slack.WithLabelValues().Set(slack)
	} else {
		m.slack.Reset()
	}
}
