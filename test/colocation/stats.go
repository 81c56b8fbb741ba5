package colocation

import (
	"math"
	"sort"
	"time"
)

// Latencies summarises one episode's LS request latencies.
type Latencies struct {
	// P50, P99 and P999 are nearest-rank percentiles of the successful
	// requests' latencies.
	P50, P99, P999 time.Duration
	// Requests counts every request sent in the window, Errors those that
	// failed (transport error, timeout or a status other than 200).
	Requests, Errors int
}

// ErrorRate is Errors ÷ Requests (0 without requests).
func (l Latencies) ErrorRate() float64 {
	if l.Requests == 0 {
		return 0
	}
	return float64(l.Errors) / float64(l.Requests)
}

// Percentile returns the nearest-rank q-quantile (0 < q ≤ 1) of sorted, 0
// for an empty slice.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(sorted) {
		rank = len(sorted) - 1
	}
	return sorted[rank]
}

// Sample is one request's outcome.
type Sample struct {
	Latency time.Duration
	OK      bool
}

// Summarise computes the latency percentiles and error count of samples.
func Summarise(samples []Sample) Latencies {
	ok := make([]time.Duration, 0, len(samples))
	out := Latencies{Requests: len(samples)}
	for _, s := range samples {
		if !s.OK {
			out.Errors++
			continue
		}
		ok = append(ok, s.Latency)
	}
	sort.Slice(ok, func(i, j int) bool { return ok[i] < ok[j] })
	out.P50, out.P99, out.P999 = Percentile(ok, 0.50), Percentile(ok, 0.99), Percentile(ok, 0.999)
	return out
}

// Spread is the minimum, median and maximum of repeated measurements.
type Spread struct {
	Min, Median, Max float64
	N                int
}

// SpreadOf returns the spread of vs (zero for none); the median of an even
// count is the mean of the middle two.
func SpreadOf(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Min: s[0], Median: med, Max: s[len(s)-1], N: len(s)}
}

// CPUTimes are the cumulative jiffies of /proc/stat's "cpu" line.
type CPUTimes struct {
	// Busy is user+nice+system+irq+softirq+steal; Total adds idle and iowait.
	Busy, Total uint64
}

// Utilisation is the busy share of all CPUs between two readings (0 when
// no time passed).
func Utilisation(from, to CPUTimes) float64 {
	if to.Total <= from.Total {
		return 0
	}
	return float64(to.Busy-from.Busy) / float64(to.Total-from.Total)
}

// IdleCPUSeconds is the CPU time left idle on a node of cpus CPUs busy
// utilisation of the time over window.
func IdleCPUSeconds(utilisation float64, cpus int, window time.Duration) float64 {
	idle := (1 - utilisation) * float64(cpus) * window.Seconds()
	if idle < 0 {
		return 0
	}
	return idle
}

// Ratio is a ÷ b, NaN when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
