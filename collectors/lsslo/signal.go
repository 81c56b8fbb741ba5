// Package lsslo reads the latency SLO an LS pod declares for itself (the
// annotation Annotation): koordlet scrapes the pod's own Prometheus
// histogram over the pod's IP, computes the declared quantile over each
// window from the buckets' deltas, and gives the interference controller
// the slack of the declared pod with the least of it (gate
// YARNLSSLOControl). It only reads: it writes no cgroup and signals
// nothing.
package lsslo

import "time"

// Annotation is the pod annotation that declares an LS pod's latency SLO;
// its value is a Declaration in JSON, e.g.
//
//	koordlet-yarn.io/latency-slo: '{"port":8080,"metric":"http_request_duration_seconds",
//	  "labels":{"handler":"/"},"quantile":0.99,"targetMilliseconds":20}'
const Annotation = "koordlet-yarn.io/latency-slo"

// Declaration is what a pod declares by Annotation.
type Declaration struct {
	// Port is the pod's port serving the metrics (required, 1–65535).
	Port int `json:"port"`
	// Path is the metrics path ("" : /metrics).
	Path string `json:"path,omitempty"`
	// Metric is the histogram's family name, without _bucket (required).
	Metric string `json:"metric"`
	// Labels are exact label matchers; the buckets of every series of the
	// family that matches them are summed by le.
	Labels map[string]string `json:"labels,omitempty"`
	// Quantile is the quantile the target bounds (0 < q < 1; 0: 0.99).
	Quantile float64 `json:"quantile,omitempty"`
	// TargetMilliseconds is the SLO: the quantile's bound (required, > 0).
	TargetMilliseconds float64 `json:"targetMilliseconds"`
	// WindowSeconds is the window the quantile is computed over (0: the
	// default window).
	WindowSeconds float64 `json:"windowSeconds,omitempty"`
	// MinRequests is how many requests a window needs for its quantile to
	// count (0: the default); a window with fewer is quiet: no cut, no growth.
	MinRequests int `json:"minRequests,omitempty"`
}

// PodSLO is one declared pod's SLO over its last window.
type PodSLO struct {
	// Pod is "namespace/name".
	Pod string
	// Quantile and Target are the declared ones.
	Quantile float64
	Target   time.Duration
	// Latency is the quantile over the window (Known only).
	Latency time.Duration
	// Requests is how many requests the window counted.
	Requests uint64
	// Window is the time the window spans; ShortWindow says it is shorter
	// than the declared one (the pod's scrapes, since it appeared or its
	// counters reset, span less).
	Window      time.Duration
	ShortWindow bool
	// Known: the latency was computed from a good scrape with at least
	// the declared minimum of requests. Quiet: the scrapes are good but
	// the window had fewer requests. Neither: Why says what is wrong (no
	// such metric, malformed body, endpoint down, bad annotation).
	Known, Quiet bool
	Why          string
	// Slack is (Target − Latency) ÷ Target (Known only): below 0 the SLO
	// is violated.
	Slack float64
}

// Signal is every declared pod's SLO at one moment.
type Signal struct {
	// At is when it was computed.
	At time.Time
	// Declared is how many LS pods on the node declare an SLO; 0: none,
	// and the controller behaves exactly as without this signal.
	Declared int
	// Unknown is how many declared pods' SLO is unknown now (neither Known
	// nor Quiet): the controller then falls back to static suppress at the
	// NodeSLO's threshold, never to full batch.
	Unknown int
	// Quiet is how many declared pods had too few requests in their window.
	Quiet int
	// Worst is the Known pod with the least slack (Worst.Pod "" when no
	// declared pod is Known).
	Worst PodSLO
	// Pods is every declared pod's SLO, by Pod.
	Pods []PodSLO
}
