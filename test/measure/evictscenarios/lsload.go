package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
)

// lsSlice is the co-location harness's LS service measured over one slice
// of an episode.
type lsSlice struct {
	from, to time.Time
	lat      colocation.Latencies
}

// lsLoad drives the co-location harness's LS service (its pod, its
// open-loop load generator) at a fixed rate beside the relief episodes, in
// slices, so that LS's p99 can be read over the episode's pressure.
type lsLoad struct {
	ls    *colocation.LS
	rate  int
	level float64
}

// lsSliceLength is one slice: long enough for a p99 at the harness's rates
// (30% of two CPUs: hundreds of requests), short enough that an episode's
// pressure fills the slices it is read over.
const lsSliceLength = 5 * time.Second

// measure loads the service for d in slices, synchronously.
func (l *lsLoad) measure(ctx context.Context, d time.Duration) ([]lsSlice, error) {
	var out []lsSlice
	for end := time.Now().Add(d); time.Now().Before(end); {
		s, err := l.slice(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (l *lsLoad) slice(ctx context.Context) (lsSlice, error) {
	from := time.Now()
	r, err := l.ls.Phase(ctx, l.rate, lsSliceLength)
	if err != nil {
		return lsSlice{}, fmt.Errorf("the LS service at %d req/s: %w", l.rate, err)
	}
	return lsSlice{from: from, to: time.Now(), lat: r.LS}, nil
}

// background loads the service in slices until stop is called, which
// returns the slices (the one in progress completed) and the first error.
func (l *lsLoad) background(ctx context.Context) (stop func() ([]lsSlice, error)) {
	var (
		mu     sync.Mutex
		out    []lsSlice
		first  error
		halt   = make(chan struct{})
		done   = make(chan struct{})
		closed sync.Once
	)
	go func() {
		defer close(done)
		for {
			select {
			case <-halt:
				return
			default:
			}
			s, err := l.slice(ctx)
			mu.Lock()
			if err != nil {
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
			out = append(out, s)
			mu.Unlock()
		}
	}()
	return func() ([]lsSlice, error) {
		closed.Do(func() { close(halt) })
		<-done
		mu.Lock()
		defer mu.Unlock()
		return out, first
	}
}

// worstP99 is the highest p99 among the slices that overlap [from, to]
// (all of them when from is zero), with the requests and errors of those
// slices; ok is false when no slice overlaps.
func worstP99(slices []lsSlice, from, to time.Time) (p99 time.Duration, requests, errors int, ok bool) {
	for _, s := range slices {
		if (!from.IsZero() && s.to.Before(from)) || s.from.After(to) {
			continue
		}
		ok = true
		p99 = max(p99, s.lat.P99)
		requests += s.lat.Requests
		errors += s.lat.Errors
	}
	return p99, requests, errors, ok
}
