package lsslo

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

// Pod states (the pods metric's state label).
const (
	StateKnown   = "known"
	StateQuiet   = "quiet"
	StateUnknown = "unknown"
)

// metrics are the collector's koordlet_yarn_ls_slo_* series.
type metrics struct {
	latency, target, slack *prometheus.GaugeVec
	// worst has no labels: a vec so that it can be removed when no pod
	// is known.
	worst  *prometheus.GaugeVec
	pods   *prometheus.GaugeVec
	errors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	sub := koordmetrics.KoordletSubsystem
	pod := []string{"namespace", "pod"}
	m := &metrics{
		latency: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_slo_latency_seconds",
			Help: "The declared quantile of the LS pod's request latency over its last window, from its own histogram's bucket deltas (known pods only)."}, pod),
		target: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_slo_target_seconds",
			Help: "The latency the LS pod declares its quantile must stay under (annotation koordlet-yarn.io/latency-slo)."}, pod),
		slack: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_slo_slack_ratio",
			Help: "(target − latency) ÷ target of the LS pod over its last window: below 0 the SLO is violated (known pods only)."}, pod),
		worst: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_slo_worst_slack_ratio",
			Help: "The least slack among the LS pods whose SLO is known (absent when none is)."}, nil),
		pods: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "yarn_ls_slo_pods",
			Help: "LS pods declaring a latency SLO by state: known, quiet (too few requests in the window) or unknown (see the scrape errors and koordlet's log)."}, []string{"state"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "yarn_ls_slo_scrape_errors_total",
			Help: "Failed or skipped scrapes of declared LS pods' histograms, and bad declarations, by reason."}, []string{"reason"}),
	}
	if err := errors.Join(
		promreg.Register(reg, &m.latency),
		promreg.Register(reg, &m.target),
		promreg.Register(reg, &m.slack),
		promreg.Register(reg, &m.worst),
		promreg.Register(reg, &m.pods),
		promreg.Register(reg, &m.errors),
	); err != nil {
		return nil, err
	}
	return m, nil
}

// observePod sets a pod's series from its SLO.
func (m *metrics) observePod(ns, name string, p PodSLO) {
	if p.Target > 0 {
		m.target.WithLabelValues(ns, name).Set(p.Target.Seconds())
	} else {
		m.target.DeleteLabelValues(ns, name) // a bad declaration has none
	}
	if p.Known {
		m.latency.WithLabelValues(ns, name).Set(p.Latency.Seconds())
		m.slack.WithLabelValues(ns, name).Set(p.Slack)
		return
	}
	m.latency.DeleteLabelValues(ns, name)
	m.slack.DeleteLabelValues(ns, name)
}

// forget deletes a pod's series.
func (m *metrics) forget(ns, name string) {
	for _, v := range []*prometheus.GaugeVec{m.latency, m.target, m.slack} {
		v.DeleteLabelValues(ns, name)
	}
}

// observeNode sets the node's series from sig.
func (m *metrics) observeNode(sig Signal) {
	m.pods.WithLabelValues(StateKnown).Set(float64(sig.Declared - sig.Quiet - sig.Unknown))
	m.pods.WithLabelValues(StateQuiet).Set(float64(sig.Quiet))
	m.pods.WithLabelValues(StateUnknown).Set(float64(sig.Unknown))
	if sig.Worst.Pod == "" {
		m.worst.Reset()
		return
	}
	m.worst.WithLabelValues().Set(sig.Worst.Slack)
}
