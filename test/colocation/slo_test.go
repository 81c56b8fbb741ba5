package colocation

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lsslo"
)

const msec = time.Millisecond

func TestSLOTarget(t *testing.T) {
	cases := []struct {
		p99    time.Duration
		factor float64
		want   time.Duration
	}{
		{12 * msec, SLOFactor, 15600 * time.Microsecond},
		{3333 * time.Microsecond, 1.3, 4333 * time.Microsecond}, // 4332.9 µs, to the µs
		{0, 1.3, 0},
		{10 * msec, 0, 0},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, SLOTarget(tc.p99, tc.factor), "%v × %v", tc.p99, tc.factor)
	}
}

func TestSLODeclaration(t *testing.T) {
	v, err := SLODeclaration(41234, 15600*time.Microsecond)
	require.NoError(t, err)
	var d lsslo.Declaration
	require.NoError(t, json.Unmarshal([]byte(v), &d))
	assert.Equal(t, lsslo.Declaration{Port: 41234, Path: "/metrics", Metric: "http_request_duration_seconds",
		Labels: map[string]string{"handler": "/"}, Quantile: 0.99, TargetMilliseconds: 15.6, WindowSeconds: 5}, d)
	for _, bad := range []struct {
		port   int
		target time.Duration
	}{{0, msec}, {70000, msec}, {8080, 0}} {
		_, err := SLODeclaration(bad.port, bad.target)
		assert.Error(t, err, "%+v", bad)
	}
}

func TestLatencyHistogram(t *testing.T) {
	h := NewLatencyHistogram()
	h.WithLabelValues(ServiceHandler).Observe(0.004)
	reg := prometheus.NewRegistry()
	reg.MustRegister(h)
	n, err := testutil.GatherAndCount(reg, ServiceMetric)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	fams, err := reg.Gather()
	require.NoError(t, err)
	buckets := fams[0].Metric[0].Histogram.Bucket
	// Dense over the SLO range: at least 25 bounds in 1–500 msec, none more
	// than 30% above the one before.
	in := 0
	for i, b := range buckets {
		if b.GetUpperBound() >= 0.001 && b.GetUpperBound() <= 0.5 {
			in++
		}
		if i > 0 {
			assert.Less(t, b.GetUpperBound()/buckets[i-1].GetUpperBound(), 1.3)
		}
	}
	assert.GreaterOrEqual(t, in, 25)
	assert.True(t, strings.HasSuffix(ServiceMetricsPath, "metrics"))
}

func TestWindowQuantiles(t *testing.T) {
	at := func(due time.Duration, lat time.Duration) TimedSample {
		return TimedSample{Due: due, Sample: Sample{Latency: lat, OK: true}}
	}
	failed := TimedSample{Due: 6 * time.Second, Sample: Sample{Latency: msec, OK: false}}
	cases := []struct {
		name    string
		samples []TimedSample
		span    time.Duration
		want    []time.Duration
	}{
		{"two windows", []TimedSample{at(0, 2*msec), at(time.Second, 9*msec), at(4999*msec, 4*msec), at(5*time.Second, 3*msec)}, 10 * time.Second,
			[]time.Duration{9 * msec, 3 * msec}},
		{"a failed request counts above any target", []TimedSample{at(5*time.Second, 3*msec), failed}, 10 * time.Second,
			[]time.Duration{NoRequests, Failed}},
		{"a trailing part shorter than a window is left out", []TimedSample{at(0, msec), at(11*time.Second, 50*msec)}, 12 * time.Second,
			[]time.Duration{msec, NoRequests}},
		{"a span shorter than a window: none", []TimedSample{at(0, msec)}, 4 * time.Second, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, WindowQuantiles(tc.samples, tc.span, SLOWindow, SLOQuantile))
		})
	}
	// The p99 of 200 requests is the 198th: two slow ones are not enough.
	var many []TimedSample
	for i := 0; i < 200; i++ {
		l := msec
		if i < 2 {
			l = 100 * msec
		}
		many = append(many, at(time.Duration(i)*10*msec, l))
	}
	assert.Equal(t, []time.Duration{msec}, WindowQuantiles(many, 5*time.Second, SLOWindow, SLOQuantile))
}

func TestViolationsOf(t *testing.T) {
	w := []time.Duration{5 * msec, 10 * msec, 11 * msec, NoRequests, Failed}
	cases := []struct {
		name   string
		target time.Duration
		want   Violations
		text   string
	}{
		{"at the target is met", 10 * msec, Violations{Violated: 2, Windows: 4}, "50.0% (2/4)"},
		{"a loose target", time.Second, Violations{Violated: 1, Windows: 4}, "25.0% (1/4)"},
		{"no target: nothing counted", 0, Violations{}, "-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := ViolationsOf(w, tc.target)
			assert.Equal(t, tc.want, v)
			assert.Equal(t, tc.text, ShareText(v))
		})
	}
	assert.Equal(t, Violations{Violated: 3, Windows: 5}, Violations{1, 2}.Add(Violations{2, 3}))
}

func TestServiceExportsItsHistogram(t *testing.T) {
	srv := httptest.NewServer(serviceMux(newWork(1), 10))
	defer srv.Close()
	for i := 0; i < 3; i++ {
		resp, err := http.Get(srv.URL + "/")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	m := scrapeService(t, srv.URL)
	require.Len(t, m.Label, 1)
	assert.Equal(t, "handler", m.Label[0].GetName())
	assert.Equal(t, ServiceHandler, m.Label[0].GetValue())
	assert.Equal(t, uint64(3), m.GetHistogram().GetSampleCount(), "the requests to /, not the scrape")
}

// scrapeService reads the service's histogram from its metrics path: the
// one series of ServiceMetric.
func scrapeService(t *testing.T, url string) *dto.Metric {
	t.Helper()
	resp, err := http.Get(url + ServiceMetricsPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	f, ok := fams[ServiceMetric]
	require.True(t, ok, "the declared family")
	require.Len(t, f.Metric, 1)
	return f.Metric[0]
}
