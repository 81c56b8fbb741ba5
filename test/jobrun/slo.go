package jobrun

import (
	"context"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// The koordlet series the timeline shows (names fixed by issue 49's
// contract: collectors/lsslo and plugins/yarninterference).
const (
	// slackMetric is the least slack among the declared LS pods (unset
	// when none is known).
	slackMetric = "koordlet_yarn_ls_slo_worst_slack_ratio"
	// dominantMetric is 1 for the signal that decided the controller's
	// last step (label signal: slo, cpu-wait, static), 0 for the others.
	dominantMetric = "koordlet_yarn_interference_dominant_signal"
)

// seriesEvery is how often the day reads koordlet's /metrics for them:
// once an SLO window, six times a phase of the 12-minute day (more often
// would add the scrape's own CPU to a 2-core node's measurement).
const seriesEvery = 5 * time.Second

// SLOSample is koordlet's view of the declared SLO at one moment.
type SLOSample struct {
	At time.Duration
	// Slack is the worst declared pod's slack ((target − p99) ÷ target;
	// below 0 the SLO is violated); HasSlack false when koordlet had none
	// (no pod known, or the collector is off).
	Slack    float64
	HasSlack bool
	// Dominant is the signal that decided the controller's last step (""
	// when koordlet exports none).
	Dominant string
}

// sloSampleOf reads the slack and the winning signal from koordlet's
// metric families.
func sloSampleOf(fams map[string]*dto.MetricFamily) SLOSample {
	var s SLOSample
	if f, ok := fams[slackMetric]; ok && len(f.Metric) > 0 && f.Metric[0].GetGauge() != nil {
		s.Slack, s.HasSlack = f.Metric[0].GetGauge().GetValue(), true
	}
	if f, ok := fams[dominantMetric]; ok {
		for _, m := range f.Metric {
			if m.GetGauge().GetValue() != 1 {
				continue
			}
			for _, l := range m.Label {
				if l.GetName() == "signal" {
					s.Dominant = l.GetValue()
				}
			}
		}
	}
	return s
}

// sloWatch samples koordlet's slack and winning signal every seriesEvery
// until stopped.
type sloWatch struct {
	mu      sync.Mutex
	samples []SLOSample
	cancel  context.CancelFunc
	done    chan struct{}
}

// watchSLO starts sampling box's koordlet from began on.
func watchSLO(ctx context.Context, box *nodebox.Box, began time.Time) *sloWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &sloWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(seriesEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			fams, err := box.MetricFamilies()
			if err != nil {
				continue // koordlet restarting or slow: a gap in the line
			}
			s := sloSampleOf(fams)
			s.At = time.Since(began)
			w.mu.Lock()
			w.samples = append(w.samples, s)
			w.mu.Unlock()
		}
	}()
	return w
}

// stop ends the sampling and returns the samples.
func (w *sloWatch) stop() []SLOSample {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]SLOSample(nil), w.samples...)
}
