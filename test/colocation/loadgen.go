package colocation

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// attackResult is one request as the load generator reports it.
type attackResult struct {
	Seq     uint64
	Sent    time.Time
	Latency time.Duration
	Failed  bool
}

// parseBegan reads the load generator's first line, "began <unix ns>".
func parseBegan(line string) (time.Time, error) {
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "began" {
		return time.Time{}, fmt.Errorf("load generator: want \"began <ns>\", got %q", line)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("load generator: %w", err)
	}
	return time.Unix(0, ns), nil
}

// parseResults reads the load generator's result lines.
func parseResults(r io.Reader) ([]attackResult, error) {
	var out []attackResult
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			return nil, fmt.Errorf("load generator: bad result line %q", sc.Text())
		}
		var v [5]int64
		for i, s := range f {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("load generator: bad result line %q: %w", sc.Text(), err)
			}
			v[i] = n
		}
		out = append(out, attackResult{Seq: uint64(v[0]), Sent: time.Unix(0, v[1]), Latency: time.Duration(v[2]), Failed: v[4] != 0})
	}
	return out, sc.Err()
}

// windowSamples keeps the requests that the open-loop schedule (request
// seq due at began + seq/rate) put in [from, to), and returns them with the
// 99th percentile of how late they were sent against that schedule.
func windowSamples(results []attackResult, began time.Time, rate int, from, to time.Time) ([]Sample, time.Duration) {
	var samples []Sample
	var lags []time.Duration
	for _, r := range results {
		due := began.Add(time.Duration(float64(r.Seq) * float64(time.Second) / float64(rate)))
		if due.Before(from) || !due.Before(to) {
			continue
		}
		samples = append(samples, Sample{Latency: r.Latency, OK: !r.Failed})
		lag := r.Sent.Sub(due)
		if lag < 0 {
			lag = 0
		}
		lags = append(lags, lag)
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return samples, Percentile(lags, 0.99)
}

// timedSamples keeps, as windowSamples, the requests due in [from, to),
// each with its due time from from.
func timedSamples(results []attackResult, began time.Time, rate int, from, to time.Time) []TimedSample {
	var out []TimedSample
	for _, r := range results {
		due := began.Add(time.Duration(float64(r.Seq) * float64(time.Second) / float64(rate)))
		if due.Before(from) || !due.Before(to) {
			continue
		}
		out = append(out, TimedSample{Due: due.Sub(from), Sample: Sample{Latency: r.Latency, OK: !r.Failed}})
	}
	return out
}
