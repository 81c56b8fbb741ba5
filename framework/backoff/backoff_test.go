package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// within: d is base lengthened by at most the jitter.
func within(t *testing.T, base, d time.Duration, msg string) {
	t.Helper()
	assert.GreaterOrEqual(t, d, base, msg)
	assert.Less(t, d, base+time.Duration(float64(base)*Jitter)+1, msg)
}

func TestBackoff(t *testing.T) {
	b := New(time.Minute)
	assert.Equal(t, time.Duration(0), b.Delay())
	for i, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute} {
		d := b.Fail(5 * time.Second)
		within(t, want, d, "failure "+time.Duration(i).String())
		assert.Equal(t, d, b.Delay())
	}
	assert.Equal(t, 6, b.Failures())
	b.Reset()
	assert.Equal(t, 0, b.Failures())
	assert.Equal(t, time.Duration(0), b.Delay())
	within(t, 2*time.Second, b.Fail(2*time.Second), "after a reset, the initial delay read anew")

	// An initial delay above the cap is kept (a long patch interval is
	// never shortened by a failure).
	b = New(time.Minute)
	within(t, 2*time.Minute, b.Fail(2*time.Minute), "above the cap")
	within(t, 2*time.Minute, b.Fail(2*time.Minute), "and stays")
}

// TestJitterSpreads: the delays of many nodes failing together differ.
func TestJitterSpreads(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 50 {
		seen[New(time.Minute).Fail(10*time.Second)] = true
	}
	assert.Greater(t, len(seen), 40, "50 nodes, (nearly) 50 different first delays")
}
