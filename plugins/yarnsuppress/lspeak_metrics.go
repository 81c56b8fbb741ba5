package yarnsuppress

import (
	"github.com/prometheus/client_golang/prometheus"

	koordmetrics "github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"

	"github.com/koordlet-yarn/koordlet-yarn/framework/promreg"
)

// LSPeakMetrics exports the LS term of BE suppress's formula while the LS
// peak is held (YARNSuppressLSPeak).
type LSPeakMetrics struct {
	usage *prometheus.GaugeVec
}

// NewLSPeakMetrics registers koordlet_yarn_suppress_ls_usage_cores on reg.
func NewLSPeakMetrics(reg prometheus.Registerer) (*LSPeakMetrics, error) {
	m := &LSPeakMetrics{usage: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: koordmetrics.KoordletSubsystem,
		Name: "yarn_suppress_ls_usage_cores",
		Help: "LS (non-BE) pods' CPU usage in BE suppress's last round, in cores: source=last the last samples' sum (upstream's LS term), source=peak the sum of the pods' peaks over --yarn-suppress-ls-peak-window (the term the formula used). Set while YARNSuppressLSPeak is on."},
		[]string{"source"})}
	if err := promreg.Register(reg, &m.usage); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *LSPeakMetrics) observe(last, peak float64) {
	if m == nil {
		return
	}
	m.usage.WithLabelValues("last").Set(last)
	m.usage.WithLabelValues("peak").Set(peak)
}

func (m *LSPeakMetrics) clear() {
	if m != nil {
		m.usage.Reset()
	}
}
