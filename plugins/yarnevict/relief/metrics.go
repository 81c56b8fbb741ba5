package relief

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

// Metrics are the memory relief's series.
type Metrics struct {
	// ReliefEpisodes counts the memory relief's pressure episodes by the
	// rung that relieved them (YARNMemoryRelief); ThrottleBytes is the
	// memory.high the throttle holds on the YARN root (0: none).
	ReliefEpisodes *prometheus.CounterVec
	ThrottleBytes  *prometheus.GaugeVec
}

// NewMetrics registers the relief series in reg (reusing registered ones).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		ReliefEpisodes: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: koordmetrics.KoordletSubsystem,
			Name: "yarn_memory_relief_episodes_total", Help: "Memory pressure episodes (node memory in the relief band below the BE memory evict threshold, or above it) that ended, by the rung that relieved them: evict (the threshold was crossed: the evict strategy acted), resourcemanager (a release was asked of the ResourceManager and the threshold never crossed), throttle (cgroup v2: the YARN root's memory.high held node memory below the threshold) or none (cgroup v1, nothing asked: the pressure ended by itself)."},
			[]string{"node", "relieved_by"}),
		ThrottleBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: koordmetrics.KoordletSubsystem,
			Name: "yarn_memory_throttle_bytes", Help: "The memory.high koordlet's memory relief holds on the YARN hierarchy root, in bytes; 0 when it holds none."},
			[]string{"node"}),
	}
	if err := errors.Join(promreg.Register(reg, &m.ThrottleBytes), promreg.Register(reg, &m.ReliefEpisodes)); err != nil {
		return nil, err
	}
	return m, nil
}
