package yarn

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

// NMMetrics counts what the NM client rejected from the NodeManager's
// answers. A nil *NMMetrics counts nothing.
type NMMetrics struct {
	ids     *prometheus.CounterVec
	answers *prometheus.CounterVec
}

// Reasons of koordlet_yarn_nm_rejected_container_ids_total and
// koordlet_yarn_nm_rejected_answers_total.
const (
	RejectNonCanonical     = "non_canonical"
	RejectInvalid          = "invalid"
	RejectTooLarge         = "too_large"
	RejectTooManyContainer = "too_many_containers"
)

// NewNMMetrics returns the NM client's metrics, registered on reg (none
// when reg is nil).
func NewNMMetrics(reg prometheus.Registerer) (*NMMetrics, error) {
	m := &NMMetrics{
		ids: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "koordlet_yarn_nm_rejected_container_ids_total",
			Help: "NodeManager container entries dropped for their id, by reason: non_canonical (an id that only resembles a container's, e.g. more leading zeros), invalid (not a container id)."},
			[]string{"reason"}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "koordlet_yarn_nm_rejected_answers_total",
			Help: "NodeManager container lists rejected whole (the last good view is kept), by reason: too_large (the body or one value over its cap), too_many_containers (more entries than the cap)."},
			[]string{"reason"}),
	}
	if err := errors.Join(
		promreg.Register(reg, &m.ids),
		promreg.Register(reg, &m.answers),
	); err != nil {
		return nil, err
	}
	for _, r := range []string{RejectNonCanonical, RejectInvalid} {
		m.ids.WithLabelValues(r)
	}
	for _, r := range []string{RejectTooLarge, RejectTooManyContainer} {
		m.answers.WithLabelValues(r)
	}
	return m, nil
}

// observe counts one decoded answer.
func (m *NMMetrics) observe(r decodeReport, err error) {
	if m == nil {
		return
	}
	m.ids.WithLabelValues(RejectNonCanonical).Add(float64(r.nonCanonical))
	m.ids.WithLabelValues(RejectInvalid).Add(float64(r.invalidIDs))
	switch {
	case errors.Is(err, ErrResponseTooLarge):
		m.answers.WithLabelValues(RejectTooLarge).Inc()
	case errors.Is(err, ErrTooManyContainers):
		m.answers.WithLabelValues(RejectTooManyContainer).Inc()
	}
}
