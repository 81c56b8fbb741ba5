package cgroupwatch

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

// metrics are the watcher's koordlet_yarn_* series.
type metrics struct {
	// lost counts container cgroup events the discovery source lost, by
	// source: events the eBPF ring buffer had no room for (counted in the
	// kernel) and records that did not decode; for inotify, queue overflows
	// (each one or more events). Every loss is answered with a resync.
	lost *prometheus.CounterVec
	// source is 1 for the discovery source running now, 0 for the others.
	source *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: koordmetrics.KoordletSubsystem,
			Name:      "yarn_discovery_events_lost_total",
			Help:      "YARN container cgroup events the discovery source lost (eBPF: events the ring buffer had no room for, counted in the kernel, and undecodable records; inotify: queue overflows). Each loss is answered with a full resync.",
		}, []string{"source"}),
		source: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: koordmetrics.KoordletSubsystem,
			Name:      "yarn_discovery_source",
			Help:      "1 for the way YARN container cgroups are discovered now (ebpf, inotify or polling), 0 for the others.",
		}, []string{"source"}),
	}
	return m, errors.Join(
		promreg.Register(reg, &m.lost),
		promreg.Register(reg, &m.source),
	)
}

// setSource marks s as the discovery source running now.
func (m *metrics) setSource(s Source) {
	for _, src := range []Source{SourceEBPF, SourceInotify, SourcePolling} {
		v := 0.0
		if src == s {
			v = 1
		}
		m.source.WithLabelValues(string(src)).Set(v)
	}
}

func (m *metrics) addLost(src Source, n uint64) {
	m.lost.WithLabelValues(string(src)).Add(float64(n))
}
