package e2e

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/test/nodebox"
)

// total sums the counters (or gauges) of family name whose labels include
// want, over every such series; found is false when there is none.
func total(fams map[string]*dto.MetricFamily, name string, want map[string]string) (sum float64, found bool) {
	ms := series(fams, name, want)
	for _, m := range ms {
		sum += sampleValue(m)
	}
	return sum, len(ms) > 0
}

// memoryEvictChecks is how many checks koordlet's memory evict slot has
// begun: its koordlet_yarn_evict_wakeups_total, every cause (the interval,
// a memory event). The slot counts under its BE reason, BEMemoryEvict,
// also when it runs only the allocatable trigger.
func memoryEvictChecks(fams map[string]*dto.MetricFamily) (float64, bool) {
	return total(fams, "koordlet_yarn_evict_wakeups_total", map[string]string{"node": nodebox.NodeName, "reason": "BEMemoryEvict"})
}

// afterMemoryEvictChecks waits until koordlet's memory evict slot has run
// n whole checks that began after the call: the event that says "n evict
// intervals passed", which a sleep only guesses. A check is counted just
// before it runs, so a count n+1 past the first read means the n-th check
// after that read has returned; an eviction it made is then already in
// koordlet_yarn_container_evictions_total and /yarn/evictions (a kill is
// reported before its check returns). within bounds each wait.
func afterMemoryEvictChecks(t *testing.T, b *nodebox.Box, n int, within time.Duration) {
	t.Helper()
	var from, last float64
	read := func(v *float64) func() bool {
		return func() bool {
			fams, err := tryScrape(b)
			if err != nil {
				return false // a slow answer: the next poll tries again
			}
			n, ok := memoryEvictChecks(fams)
			*v = n
			return ok
		}
	}
	if !assert.Eventually(t, read(&from), within, 100*time.Millisecond) {
		t.Fatalf("koordlet's memory evict slot counts no checks (koordlet_yarn_evict_wakeups_total{reason=\"BEMemoryEvict\"})")
	}
	if !assert.Eventually(t, func() bool { return read(&last)() && last >= from+float64(n)+1 }, within, 100*time.Millisecond) {
		t.Fatalf("koordlet's memory evict slot did not run %d checks within %v: %.0f begun before, %.0f now", n, within, from, last)
	}
}
