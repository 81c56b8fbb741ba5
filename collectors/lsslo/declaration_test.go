package lsslo

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testDefaults = Defaults{Window: 5 * time.Second, ScrapeInterval: time.Second, MinWindow: time.Second, MaxWindow: 300 * time.Second}

func TestParseDeclarationGood(t *testing.T) {
	s, err := ParseDeclaration(`{"port":8080,"metric":"http_request_duration_seconds","labels":{"handler":"/"},"targetMilliseconds":20}`, testDefaults)
	require.NoError(t, err)
	assert.Equal(t, SLO{Port: 8080, Path: "/metrics", Metric: "http_request_duration_seconds", Labels: map[string]string{"handler": "/"},
		Quantile: 0.99, Target: 20 * time.Millisecond, Window: 5 * time.Second, MinRequests: 20}, s)

	s, err = ParseDeclaration(`{"port":1,"path":"/x/metrics","metric":"rpc_seconds","quantile":0.9,"targetMilliseconds":0.5,"windowSeconds":10,"minRequests":5}`, testDefaults)
	require.NoError(t, err)
	assert.Equal(t, SLO{Port: 1, Path: "/x/metrics", Metric: "rpc_seconds", Quantile: 0.9, Target: 500 * time.Microsecond,
		Window: 10 * time.Second, MinRequests: 5}, s)
}

func TestParseDeclarationBad(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"empty", ``, "not a latency SLO declaration"},
		{"not JSON", `port=8080`, "not a latency SLO declaration"},
		{"unknown field", `{"port":8080,"metric":"m","targetMilliseconds":20,"target":20}`, `unknown field "target"`},
		{"trailing data", `{"port":8080,"metric":"m","targetMilliseconds":20} {}`, "data after the object"},
		{"too large", `{"port":8080,"metric":"m","targetMilliseconds":20,"path":"/` + strings.Repeat("a", MaxAnnotationBytes) + `"}`, "more than 4096"},
		{"no port", `{"metric":"m","targetMilliseconds":20}`, "port 0: not in 1–65535"},
		{"port too high", `{"port":65536,"metric":"m","targetMilliseconds":20}`, "port 65536"},
		{"port negative", `{"port":-1,"metric":"m","targetMilliseconds":20}`, "port -1"},
		{"port not a number", `{"port":"8080","metric":"m","targetMilliseconds":20}`, "not a latency SLO declaration"},
		{"no metric", `{"port":8080,"targetMilliseconds":20}`, "metric: missing"},
		{"bad metric", `{"port":8080,"metric":"http-latency","targetMilliseconds":20}`, `metric "http-latency": not a Prometheus metric name`},
		{"metric with _bucket", `{"port":8080,"metric":"m_bucket","targetMilliseconds":20}`, `metric "m_bucket"`},
		{"bad label", `{"port":8080,"metric":"m","labels":{"a-b":"x"},"targetMilliseconds":20}`, `label "a-b"`},
		{"reserved label", `{"port":8080,"metric":"m","labels":{"__name__":"x"},"targetMilliseconds":20}`, `label "__name__"`},
		{"le label", `{"port":8080,"metric":"m","labels":{"le":"1"},"targetMilliseconds":20}`, `label "le"`},
		{"quantile 1", `{"port":8080,"metric":"m","quantile":1,"targetMilliseconds":20}`, "quantile 1: not in (0, 1)"},
		{"quantile negative", `{"port":8080,"metric":"m","quantile":-0.5,"targetMilliseconds":20}`, "quantile -0.5"},
		{"no target", `{"port":8080,"metric":"m"}`, "targetMilliseconds 0: not in (0, 600000]"},
		{"target negative", `{"port":8080,"metric":"m","targetMilliseconds":-1}`, "targetMilliseconds -1"},
		{"target too large", `{"port":8080,"metric":"m","targetMilliseconds":600001}`, "targetMilliseconds 600001"},
		{"target overflows", `{"port":8080,"metric":"m","targetMilliseconds":1e400}`, "not a latency SLO declaration"},
		{"target below a ns", `{"port":8080,"metric":"m","targetMilliseconds":1e-9}`, "below a nanosecond"},
		{"window too short", `{"port":8080,"metric":"m","targetMilliseconds":20,"windowSeconds":0.5}`, "windowSeconds 0.5: not in 1–300"},
		{"window too long", `{"port":8080,"metric":"m","targetMilliseconds":20,"windowSeconds":301}`, "windowSeconds 301"},
		{"window under two intervals", `{"port":8080,"metric":"m","targetMilliseconds":20,"windowSeconds":1.5}`, "less than two scrape intervals"},
		{"minRequests negative", `{"port":8080,"metric":"m","targetMilliseconds":20,"minRequests":-1}`, "minRequests -1"},
		{"minRequests too high", `{"port":8080,"metric":"m","targetMilliseconds":20,"minRequests":1000001}`, "minRequests 1000001"},
		{"relative path", `{"port":8080,"path":"metrics","metric":"m","targetMilliseconds":20}`, `path "metrics": must start with /`},
		{"path with query", `{"port":8080,"path":"/metrics?x=1","metric":"m","targetMilliseconds":20}`, `path "/metrics?x=1"`},
		{"path with space", `{"port":8080,"path":"/a b","metric":"m","targetMilliseconds":20}`, `path "/a b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDeclaration(tc.value, testDefaults)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
