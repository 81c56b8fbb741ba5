package colocation

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
)

// The LS service's own latency histogram, as a user's service exports it,
// and the SLO its pod declares on it (lsslo.Annotation).
const (
	// ServiceMetric is the histogram's family name; ServiceHandler the
	// value of its handler label; ServiceMetricsPath where the service
	// serves it, on its own port.
	ServiceMetric      = "http_request_duration_seconds"
	ServiceHandler     = "/"
	ServiceMetricsPath = "/metrics"
	// SLOQuantile is the quantile the SLO bounds.
	SLOQuantile = 0.99
	// SLOFactor is the rule for the declared target: LS alone's
	// p99 in its peak phase × 1.3.
	SLOFactor = 1.3
	// SLOWindow is the declaration's windowSeconds, and the length of the
	// windows whose p99 the harness checks against the target: 5 s holds
	// 500–2,000 requests at the days' 15–70% loads (a p99 of 5–20
	// requests over the target, not one outlier), five controller steps
	// of 1 s (the controller sees each window before the next ends), and
	// six windows in a phase of the 12-minute day.
	SLOWindow = 5 * time.Second
)

// NewLatencyHistogram is the service's own latency histogram, each request
// from its arrival at the front (RequestStartHeader), by handler: 40
// buckets from 0.5 ms to 2 s, exponential (about 24% apart), dense around
// the 1–500 ms the SLOs lie in, so that a quantile computed from the
// buckets is within a bucket's width of the true one.
func NewLatencyHistogram() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    ServiceMetric,
		Help:    "The LS service's request latency from the front (X-Request-Start) to the handler's end.",
		Buckets: prometheus.ExponentialBucketsRange(0.0005, 2, 40),
	}, []string{"handler"})
}

// SLODeclaration is the annotation value (lsslo.Annotation) the LS pod
// declares: the p99 of the service's histogram on port, over SLOWindow,
// at most target.
func SLODeclaration(port int, target time.Duration) (string, error) {
	if port < 1 || port > 65535 || target <= 0 {
		return "", fmt.Errorf("an SLO declaration needs a port (got %d) and a target > 0 (got %v)", port, target)
	}
	b, err := json.Marshal(lsslo.Declaration{Port: port, Path: ServiceMetricsPath, Metric: ServiceMetric,
		Labels: map[string]string{"handler": ServiceHandler}, Quantile: SLOQuantile,
		TargetMilliseconds: float64(target) / float64(time.Millisecond), WindowSeconds: SLOWindow.Seconds()})
	if err != nil {
		return "", fmt.Errorf("the SLO declaration: %w", err)
	}
	return string(b), nil
}

// SLOTarget is the target the LS service declares from LS alone's p99 in
// its peak phase: × factor, to the microsecond (0 when there is no p99).
func SLOTarget(peakP99 time.Duration, factor float64) time.Duration {
	if peakP99 <= 0 || factor <= 0 {
		return 0
	}
	return time.Duration(float64(peakP99) * factor).Round(time.Microsecond)
}

// TimedSample is one request: when the open-loop schedule put it (from
// the start of the span it belongs to) and its outcome.
type TimedSample struct {
	Due time.Duration
	Sample
}

// Failed is the latency a failed request counts as in a window's
// quantile: above any target (a timeout or an error is an SLO miss).
const Failed = time.Duration(math.MaxInt64)

// NoRequests marks a window without requests: it is neither met nor
// violated.
const NoRequests = time.Duration(-1)

// WindowQuantiles splits span into whole windows of length window (a
// trailing part shorter than a window is left out) and returns each one's
// nearest-rank q-quantile of the latencies of the requests due in it,
// failed requests counting as Failed; NoRequests for a window without any.
func WindowQuantiles(samples []TimedSample, span, window time.Duration, q float64) []time.Duration {
	if window <= 0 || span < window {
		return nil
	}
	n := int(span / window)
	per := make([][]time.Duration, n)
	for _, s := range samples {
		if s.Due < 0 {
			continue
		}
		i := int(s.Due / window)
		if i >= n {
			continue
		}
		l := s.Latency
		if !s.OK {
			l = Failed
		}
		per[i] = append(per[i], l)
	}
	out := make([]time.Duration, n)
	for i, ls := range per {
		if len(ls) == 0 {
			out[i] = NoRequests
			continue
		}
		sort.Slice(ls, func(a, b int) bool { return ls[a] < ls[b] })
		out[i] = Percentile(ls, q)
	}
	return out
}

// Violations counts the windows (of WindowQuantiles) whose quantile is
// above target, of those with requests.
type Violations struct {
	Violated, Windows int
}

// Share is Violated ÷ Windows (NaN without windows).
func (v Violations) Share() float64 {
	if v.Windows == 0 {
		return math.NaN()
	}
	return float64(v.Violated) / float64(v.Windows)
}

// Add sums two counts.
func (v Violations) Add(o Violations) Violations {
	return Violations{Violated: v.Violated + o.Violated, Windows: v.Windows + o.Windows}
}

// ViolationsOf counts windows over target (target ≤ 0: none counted).
func ViolationsOf(windows []time.Duration, target time.Duration) Violations {
	var v Violations
	if target <= 0 {
		return v
	}
	for _, w := range windows {
		if w == NoRequests {
			continue
		}
		v.Windows++
		if w > target {
			v.Violated++
		}
	}
	return v
}

// ShareText prints a violation share ("-" when nothing was counted).
func ShareText(v Violations) string {
	if v.Windows == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*v.Share(), v.Violated, v.Windows)
}

// declareSLO sets the LS pod's SLO annotation to target.
func (h *harness) declareSLO(ctx context.Context, target time.Duration) error {
	v, err := SLODeclaration(h.port, target)
	if err != nil {
		return err
	}
	if err := h.box.AnnotatePod(ctx, LSPodName, map[string]string{lsslo.Annotation: v}); err != nil {
		return fmt.Errorf("declare the LS service's SLO: %w", err)
	}
	return nil
}

// sloTargetAt is the p99 target configuration 6 declares at level: th's
// fixed SLOTarget, or its SLORatio (0: SLOFactor) × the median p99 of the
// LS-alone episodes at level so far (an error when there is none: LS alone
// runs first).
func sloTargetAt(th Thresholds, eps []Episode, level float64) (time.Duration, error) {
	if th.SLOTarget > 0 {
		return th.SLOTarget, nil
	}
	ratio := th.SLORatio
	if ratio <= 0 {
		ratio = SLOFactor
	}
	var p99s []float64
	for _, e := range eps {
		if e.Config == LSAlone && e.Level == level && e.LS.P99 > 0 {
			p99s = append(p99s, float64(e.LS.P99))
		}
	}
	if len(p99s) == 0 {
		return 0, fmt.Errorf("the SLO at %s is %.2f× LS alone's p99 there, and LS alone has not run at that level (run configuration 1 first, or fix the target)", pct(level), ratio)
	}
	return SLOTarget(time.Duration(SpreadOf(p99s).Median), ratio), nil
}
