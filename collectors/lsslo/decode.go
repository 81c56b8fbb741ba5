package lsslo

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// Buckets is a classic histogram's cumulative buckets at one scrape: the
// buckets of every matching series summed by le.
type Buckets struct {
	// Bounds are the upper bounds, ascending, the last +Inf.
	Bounds []float64
	// Counts are the cumulative counts by bound (Counts[len-1] is the
	// count of observations).
	Counts []float64
}

// Total is the count of observations (the +Inf bucket).
func (b Buckets) Total() float64 {
	if len(b.Counts) == 0 {
		return 0
	}
	return b.Counts[len(b.Counts)-1]
}

// Reasons a scrape or a declaration fails (the scrape errors metric's
// reason label).
const (
	ReasonAnnotation    = "bad-annotation"
	ReasonNoPodIP       = "no-pod-ip"
	ReasonDown          = "down"
	ReasonTimeout       = "timeout"
	ReasonHTTPStatus    = "http-status"
	ReasonTooLarge      = "body-too-large"
	ReasonMalformed     = "malformed"
	ReasonNoMetric      = "no-metric"
	ReasonNoSeries      = "no-matching-series"
	ReasonNotHistogram  = "not-histogram"
	ReasonTooManySeries = "too-many-series"
	ReasonInFlight      = "in-flight"
)

// Error is a failed scrape or declaration: Reason is one of the Reason*.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(reason, format string, args ...any) error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// ReasonOf is err's reason (ReasonMalformed for an error not an *Error).
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonMalformed
}

// Decode reads the classic histogram metric from body, in the Prometheus
// text format or OpenMetrics as contentType says, and sums the buckets of
// its series that carry every label of match by le. More than maxSeries
// bucket samples kept is an error, as are no such family, a family of
// another type, no matching series, and buckets that are not a histogram
// (a bad le, no +Inf bucket, a count below a lower bucket's). It never
// panics: a parser's panic is a malformed body.
func Decode(body []byte, contentType, metric string, match map[string]string, maxSeries int) (b Buckets, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = Buckets{}, fail(ReasonMalformed, "malformed metrics body: the parser failed: %v", r)
		}
	}()
	p, perr := textparse.New(body, contentType)
	if perr != nil {
		// An unknown content type: textparse falls back to the text format.
		p = textparse.NewPromParser(body)
	}
	bucketName := metric + "_bucket"
	sums := map[float64]float64{}
	var kept int
	var typ textparse.MetricType
	var typed, sampled bool
	var lset labels.Labels
	for {
		e, nerr := p.Next()
		if errors.Is(nerr, io.EOF) {
			break
		}
		if nerr != nil {
			return Buckets{}, fail(ReasonMalformed, "malformed metrics body: %v", nerr)
		}
		switch e {
		case textparse.EntryType:
			if name, t := p.Type(); string(name) == metric {
				typ, typed = t, true
			}
		case textparse.EntrySeries:
			series, _, v := p.Series()
			if !hasName(series, metric) {
				continue
			}
			lset = lset[:0]
			p.Metric(&lset)
			name := lset.Get(labels.MetricName)
			if name == metric || name == metric+"_count" || name == metric+"_sum" {
				sampled = true
			}
			if name != bucketName || !matches(lset, match) {
				continue
			}
			sampled = true
			if kept++; kept > maxSeries {
				return Buckets{}, fail(ReasonTooManySeries, "more than %d samples of %s match", maxSeries, bucketName)
			}
			le, perr := strconv.ParseFloat(lset.Get(labels.BucketLabel), 64)
			if perr != nil || math.IsNaN(le) {
				return Buckets{}, fail(ReasonMalformed, "%s: le %q is not a bound", bucketName, lset.Get(labels.BucketLabel))
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return Buckets{}, fail(ReasonMalformed, "%s{le=%q}: count %v is not a count", bucketName, lset.Get(labels.BucketLabel), v)
			}
			sums[le] += v
		}
	}
	switch {
	case typed && typ != textparse.MetricTypeHistogram:
		return Buckets{}, fail(ReasonNotHistogram, "%s is a %s, not a histogram", metric, typ)
	case !typed && !sampled:
		return Buckets{}, fail(ReasonNoMetric, "no metric %s in the body", metric)
	case !typed && len(sums) == 0:
		return Buckets{}, fail(ReasonNotHistogram, "%s has no _bucket series and no TYPE histogram", metric)
	case len(sums) == 0:
		return Buckets{}, fail(ReasonNoSeries, "no series of %s matches the labels %v", metric, match)
	}
	if len(sums) > MaxBuckets {
		return Buckets{}, fail(ReasonTooManySeries, "%s has %d distinct buckets, more than %d", bucketName, len(sums), MaxBuckets)
	}
	return bucketsOf(sums, bucketName)
}

// MaxBuckets is the most distinct le bounds a declared histogram may have:
// each scrape a pod's window keeps holds them all (client_golang's
// default has 11, a dense exponential one a few dozen).
const MaxBuckets = 512

// bucketsOf orders the summed buckets and checks they are a histogram.
func bucketsOf(sums map[float64]float64, name string) (Buckets, error) {
	var b Buckets
	for le := range sums {
		b.Bounds = append(b.Bounds, le)
	}
	sort.Float64s(b.Bounds)
	for _, le := range b.Bounds {
		b.Counts = append(b.Counts, sums[le])
	}
	if err := b.check(); err != nil {
		return Buckets{}, fail(ReasonMalformed, "%s: %v", name, err)
	}
	return b, nil
}

// check says whether b is a classic histogram: a +Inf bucket, a finite
// one, cumulative counts that never decrease.
func (b Buckets) check() error {
	n := len(b.Bounds)
	if n == 0 || !math.IsInf(b.Bounds[n-1], 1) {
		return errors.New("no +Inf bucket")
	}
	if n < 2 {
		return errors.New("no finite bucket")
	}
	for i := 1; i < n; i++ {
		if b.Counts[i] < b.Counts[i-1] {
			return fmt.Errorf("bucket le=%v counts %v, less than le=%v's %v (not cumulative; series with different buckets?)",
				b.Bounds[i], b.Counts[i], b.Bounds[i-1], b.Counts[i-1])
		}
	}
	return nil
}

// hasName says whether series (its raw text) may be of metric's family:
// it starts with the name and then _, { or a blank.
func hasName(series []byte, metric string) bool {
	if len(series) < len(metric) || string(series[:len(metric)]) != metric {
		return false
	}
	if len(series) == len(metric) {
		return true
	}
	switch series[len(metric)] {
	case '_', '{', ' ', '\t':
		return true
	}
	return false
}

// matches says whether lset has every label of match.
func matches(lset labels.Labels, match map[string]string) bool {
	for n, v := range match {
		if lset.Get(n) != v {
			return false
		}
	}
	return true
}
