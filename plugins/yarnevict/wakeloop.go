package yarnevict

import "time"

// waker is a trigger that can also be woken by events (the memory strategy
// with YARNMemoryEvictTrigger).
type waker interface {
	// Wake receives when an event asks for a check; nil: none.
	Wake() <-chan struct{}
	// CloseTrigger releases the event source.
	CloseTrigger()
}

// minWakeGap bounds how often events run a check: an event that comes
// sooner after the last check waits for the rest of it (debounce).
const minWakeGap = 20 * time.Millisecond

// runLoop runs cycle at once, then every interval and at each wake of w
// (nil: interval only), until stopCh closes; count is told what woke each
// check ("interval" or "event"). Run it in its own goroutine: cycle, Wake
// and CloseTrigger are only called from it.
func runLoop(stopCh <-chan struct{}, interval time.Duration, cycle func(time.Time), w waker, count func(cause string)) {
	wake := func() <-chan struct{} { return nil }
	if w != nil {
		wake = w.Wake
		defer w.CloseTrigger()
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	last := time.Now()
	count("interval")
	cycle(last) // at once, which also arms the trigger
	for {
		cause := "interval"
		select {
		case <-stopCh:
			return
		case <-ticker.C:
		case <-wake():
			cause = "event"
			if gap := time.Since(last); gap < minWakeGap {
				select {
				case <-stopCh:
					return
				case <-time.After(minWakeGap - gap):
				}
			}
		}
		count(cause)
		last = time.Now()
		cycle(last)
	}
}
