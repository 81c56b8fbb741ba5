package lsslo

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const textCT = "text/plain; version=0.0.4; charset=utf-8"
const omCT = "application/openmetrics-text; version=1.0.0; charset=utf-8"

const textBody = `# HELP lat_seconds Request latency.
# TYPE lat_seconds histogram
lat_seconds_bucket{handler="/",code="200",le="0.01"} 5
lat_seconds_bucket{handler="/",code="200",le="0.1"} 8
lat_seconds_bucket{handler="/",code="200",le="+Inf"} 10
lat_seconds_sum{handler="/",code="200"} 1.5
lat_seconds_count{handler="/",code="200"} 10
lat_seconds_bucket{handler="/",code="500",le="0.01"} 1
lat_seconds_bucket{handler="/",code="500",le="0.1"} 1
lat_seconds_bucket{handler="/",code="500",le="+Inf"} 2
lat_seconds_sum{handler="/",code="500"} 3
lat_seconds_count{handler="/",code="500"} 2
lat_seconds_bucket{handler="/x",code="200",le="0.01"} 100
lat_seconds_bucket{handler="/x",code="200",le="0.1"} 100
lat_seconds_bucket{handler="/x",code="200",le="+Inf"} 100
lat_seconds_sum{handler="/x",code="200"} 0.1
lat_seconds_count{handler="/x",code="200"} 100
# TYPE other gauge
other 3
`

const omBody = `# TYPE lat_seconds histogram
# UNIT lat_seconds seconds
# HELP lat_seconds Request latency.
lat_seconds_bucket{handler="/",le="0.01"} 5 # {trace_id="abc"} 0.004 1.7e9
lat_seconds_bucket{handler="/",le="0.1"} 8
lat_seconds_bucket{handler="/",le="+Inf"} 10
lat_seconds_sum{handler="/"} 1.5
lat_seconds_count{handler="/"} 10
lat_seconds_created{handler="/"} 1.7e9
# EOF
`

func TestDecode(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name, body, ct string
		labels         map[string]string
		max            int
		want           Buckets
		reason         string
	}{
		{name: "text, all series", body: textBody, ct: textCT, max: 100,
			want: Buckets{Bounds: []float64{0.01, 0.1, inf}, Counts: []float64{106, 109, 112}}},
		{name: "text, handler /", body: textBody, ct: textCT, labels: map[string]string{"handler": "/"}, max: 100,
			want: Buckets{Bounds: []float64{0.01, 0.1, inf}, Counts: []float64{6, 9, 12}}},
		{name: "text, two labels", body: textBody, ct: textCT, labels: map[string]string{"handler": "/", "code": "500"}, max: 100,
			want: Buckets{Bounds: []float64{0.01, 0.1, inf}, Counts: []float64{1, 1, 2}}},
		{name: "OpenMetrics with exemplars", body: omBody, ct: omCT, max: 100,
			want: Buckets{Bounds: []float64{0.01, 0.1, inf}, Counts: []float64{5, 8, 10}}},
		{name: "unknown content type read as text", body: textBody, ct: "", labels: map[string]string{"code": "500"}, max: 100,
			want: Buckets{Bounds: []float64{0.01, 0.1, inf}, Counts: []float64{1, 1, 2}}},
		{name: "untyped buckets accepted", body: "lat_seconds_bucket{le=\"1\"} 1\nlat_seconds_bucket{le=\"+Inf\"} 2\n", ct: textCT, max: 100,
			want: Buckets{Bounds: []float64{1, inf}, Counts: []float64{1, 2}}},
		{name: "OpenMetrics without # EOF", body: strings.TrimSuffix(omBody, "# EOF\n"), ct: omCT, max: 100, reason: ReasonMalformed},
		{name: "garbage", body: "{{{ not metrics", ct: textCT, max: 100, reason: ReasonMalformed},
		{name: "no metric", body: "# TYPE other gauge\nother 1\n", ct: textCT, max: 100, reason: ReasonNoMetric},
		{name: "empty body", body: "", ct: textCT, max: 100, reason: ReasonNoMetric},
		{name: "a gauge", body: "# TYPE lat_seconds gauge\nlat_seconds 1\n", ct: textCT, max: 100, reason: ReasonNotHistogram},
		{name: "a summary", body: "# TYPE lat_seconds summary\nlat_seconds{quantile=\"0.99\"} 1\nlat_seconds_count 3\n", ct: textCT, max: 100, reason: ReasonNotHistogram},
		{name: "untyped, no buckets", body: "lat_seconds 1\n", ct: textCT, max: 100, reason: ReasonNotHistogram},
		{name: "no series matches", body: textBody, ct: textCT, labels: map[string]string{"handler": "/nope"}, max: 100, reason: ReasonNoSeries},
		{name: "too many series", body: textBody, ct: textCT, max: 8, reason: ReasonTooManySeries},
		{name: "just at the cap", body: textBody, ct: textCT, max: 9,
			want: Buckets{Bounds: []float64{0.01, 0.1, inf}, Counts: []float64{106, 109, 112}}},
		{name: "no +Inf", body: "# TYPE lat_seconds histogram\nlat_seconds_bucket{le=\"1\"} 1\n", ct: textCT, max: 100, reason: ReasonMalformed},
		{name: "only +Inf", body: "# TYPE lat_seconds histogram\nlat_seconds_bucket{le=\"+Inf\"} 1\n", ct: textCT, max: 100, reason: ReasonMalformed},
		{name: "not cumulative", body: "# TYPE lat_seconds histogram\nlat_seconds_bucket{le=\"1\"} 5\nlat_seconds_bucket{le=\"+Inf\"} 3\n", ct: textCT, max: 100, reason: ReasonMalformed},
		{name: "bad le", body: "# TYPE lat_seconds histogram\nlat_seconds_bucket{le=\"x\"} 5\nlat_seconds_bucket{le=\"+Inf\"} 5\n", ct: textCT, max: 100, reason: ReasonMalformed},
		{name: "NaN count", body: "# TYPE lat_seconds histogram\nlat_seconds_bucket{le=\"1\"} NaN\nlat_seconds_bucket{le=\"+Inf\"} 5\n", ct: textCT, max: 100, reason: ReasonMalformed},
		{name: "negative count", body: "# TYPE lat_seconds histogram\nlat_seconds_bucket{le=\"1\"} -1\nlat_seconds_bucket{le=\"+Inf\"} 5\n", ct: textCT, max: 100, reason: ReasonMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Decode([]byte(tc.body), tc.ct, "lat_seconds", tc.labels, tc.max)
			if tc.reason != "" {
				require.Error(t, err)
				assert.Equal(t, tc.reason, ReasonOf(err), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, b)
		})
	}
}

// FuzzDecode: no body makes Decode panic, and what it returns is a histogram.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(textBody), textCT)
	f.Add([]byte(omBody), omCT)
	f.Add([]byte("lat_seconds_bucket{le=\"1\"} 1\nlat_seconds_bucket{le=\"+Inf\"} 2\n"), "")
	f.Add([]byte("# TYPE lat_seconds histogram\nlat_seconds_bucket{le=\"\\\"\"} 1e308\n"), textCT)
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		b, err := Decode(body, ct, "lat_seconds", map[string]string{"handler": "/"}, 50)
		if err == nil {
			require.NoError(t, b.check(), fmt.Sprintf("%v", b))
		}
	})
}
