// Package backoff is the retry delay of the loops that talk to the
// NodeManager, the ResourceManager and the API server: doubling per
// consecutive failure from an initial delay up to a cap, with jitter
// (apimachinery's wait.Backoff), so that after an outage the koordlets of a
// cluster do not retry in lock-step.
package backoff

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Jitter is the most a delay is lengthened at random, as a fraction of it
// (wait.Jitter: a delay d becomes d + [0, Jitter·d)).
const Jitter = 0.2

// Backoff counts consecutive failures and the delay before the next try.
// The zero value is not usable: make one with New. It is not safe for
// concurrent use: callers hold their own lock.
type Backoff struct {
	max      time.Duration
	cur      wait.Backoff
	failures int
	delay    time.Duration
}

// New returns a backoff capped at max (a delay is at most max plus its
// jitter).
func New(max time.Duration) *Backoff {
	return &Backoff{max: max}
}

// Fail records a failure and returns the delay before the next try: initial
// after the first failure since Reset, doubled after each further one, up
// to the cap; each with jitter. initial is read at the first failure (a
// flag that may change between runs).
func (b *Backoff) Fail(initial time.Duration) time.Duration {
	if b.failures == 0 {
		initial = max(initial, time.Millisecond)
		b.cur = wait.Backoff{Duration: min(initial, max(b.max, initial)), Factor: 2, Jitter: Jitter,
			Steps: math.MaxInt32, Cap: max(b.max, initial)}
	}
	b.failures++
	b.delay = b.cur.Step()
	return b.delay
}

// Delay is the delay Fail last returned; 0 after Reset.
func (b *Backoff) Delay() time.Duration { return b.delay }

// Failures is the count of consecutive failures since Reset.
func (b *Backoff) Failures() int { return b.failures }

// Reset records a success.
func (b *Backoff) Reset() {
	b.failures, b.delay = 0, 0
}
