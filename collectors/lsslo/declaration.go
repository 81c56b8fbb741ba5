package lsslo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Bounds of a Declaration.
const (
	// MaxAnnotationBytes caps the annotation's value.
	MaxAnnotationBytes = 4 << 10
	// DefaultQuantile is the quantile of a declaration without one.
	DefaultQuantile = 0.99
	// MaxTargetMilliseconds bounds the target (ten minutes).
	MaxTargetMilliseconds = 600000
	// DefaultMinRequests is the minimum of requests of a declaration
	// without one; MaxMinRequests bounds a declared one.
	DefaultMinRequests = 20
	MaxMinRequests     = 1000000
	// MaxLabels bounds the declared label matchers.
	MaxLabels = 16
	// DefaultPath is the metrics path of a declaration without one.
	DefaultPath = "/metrics"
)

// Defaults are what a declaration's omitted fields become, and the bounds
// that depend on the flags.
type Defaults struct {
	// Window is the default window (--yarn-slo-window).
	Window time.Duration
	// ScrapeInterval is --yarn-slo-scrape-interval: a window spans at
	// least two of them.
	ScrapeInterval time.Duration
	// MinWindow and MaxWindow bound a declared window.
	MinWindow, MaxWindow time.Duration
}

// SLO is a validated Declaration with its defaults applied.
type SLO struct {
	Port        int
	Path        string
	Metric      string
	Labels      map[string]string
	Quantile    float64
	Target      time.Duration
	Window      time.Duration
	MinRequests int
}

// ParseDeclaration parses and checks an annotation's value strictly
// (unknown fields, trailing data and out-of-bounds values are errors) and
// applies the defaults.
func ParseDeclaration(value string, d Defaults) (SLO, error) {
	if len(value) > MaxAnnotationBytes {
		return SLO{}, fmt.Errorf("the annotation is %d bytes, more than %d", len(value), MaxAnnotationBytes)
	}
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	var decl Declaration
	if err := dec.Decode(&decl); err != nil {
		return SLO{}, fmt.Errorf("not a latency SLO declaration (JSON): %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return SLO{}, errors.New("not a latency SLO declaration (JSON): data after the object")
	}
	return decl.check(d)
}

// check validates decl and applies the defaults.
func (decl Declaration) check(d Defaults) (SLO, error) {
	s := SLO{Port: decl.Port, Path: decl.Path, Metric: decl.Metric, Labels: decl.Labels, Quantile: decl.Quantile,
		MinRequests: decl.MinRequests}
	if s.Port < 1 || s.Port > 65535 {
		return SLO{}, fmt.Errorf("port %d: not in 1–65535", s.Port)
	}
	if s.Path == "" {
		s.Path = DefaultPath
	}
	if !strings.HasPrefix(s.Path, "/") || strings.ContainsAny(s.Path, "?# \t\r\n") || !isPrintableASCII(s.Path) {
		return SLO{}, fmt.Errorf("path %q: must start with / and hold no query, fragment, space or control character", s.Path)
	}
	if s.Metric == "" {
		return SLO{}, errors.New("metric: missing (the histogram's name, without _bucket)")
	}
	if !model.IsValidLegacyMetricName(s.Metric) || strings.HasSuffix(s.Metric, "_bucket") {
		return SLO{}, fmt.Errorf("metric %q: not a Prometheus metric name (the family's, without _bucket)", s.Metric)
	}
	if len(s.Labels) > MaxLabels {
		return SLO{}, fmt.Errorf("labels: %d matchers, more than %d", len(s.Labels), MaxLabels)
	}
	for n := range s.Labels {
		if !model.LabelName(n).IsValidLegacy() || strings.HasPrefix(n, "__") || n == model.BucketLabel {
			return SLO{}, fmt.Errorf("label %q: not a label name a histogram's series can be matched by", n)
		}
	}
	switch q := s.Quantile; {
	case q == 0:
		s.Quantile = DefaultQuantile
	case math.IsNaN(q) || q <= 0 || q >= 1:
		return SLO{}, fmt.Errorf("quantile %v: not in (0, 1)", q)
	}
	if t := decl.TargetMilliseconds; math.IsNaN(t) || math.IsInf(t, 0) || t <= 0 || t > MaxTargetMilliseconds {
		return SLO{}, fmt.Errorf("targetMilliseconds %v: not in (0, %d]", t, MaxTargetMilliseconds)
	}
	s.Target = time.Duration(decl.TargetMilliseconds * float64(time.Millisecond))
	if s.Target <= 0 {
		return SLO{}, fmt.Errorf("targetMilliseconds %v: below a nanosecond", decl.TargetMilliseconds)
	}
	s.Window = d.Window
	if w := decl.WindowSeconds; w != 0 {
		if math.IsNaN(w) || math.IsInf(w, 0) || w < d.MinWindow.Seconds() || w > d.MaxWindow.Seconds() {
			return SLO{}, fmt.Errorf("windowSeconds %v: not in %v–%v", w, d.MinWindow.Seconds(), d.MaxWindow.Seconds())
		}
		s.Window = time.Duration(w * float64(time.Second))
	}
	if s.Window < 2*d.ScrapeInterval {
		return SLO{}, fmt.Errorf("windowSeconds %v: less than two scrape intervals (%v)", s.Window.Seconds(), 2*d.ScrapeInterval)
	}
	switch n := s.MinRequests; {
	case n == 0:
		s.MinRequests = DefaultMinRequests
	case n < 1 || n > MaxMinRequests:
		return SLO{}, fmt.Errorf("minRequests %d: not in 1–%d", n, MaxMinRequests)
	}
	return s, nil
}

func isPrintableASCII(s string) bool {
	return !bytes.ContainsFunc([]byte(s), func(r rune) bool { return r < 0x21 || r > 0x7e })
}
