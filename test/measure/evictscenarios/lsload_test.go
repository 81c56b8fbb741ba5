package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/test/colocation"
)

func TestWorstP99(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	slice := func(fromS, toS int, p99ms, req, errs int) lsSlice {
		return lsSlice{from: t0.Add(time.Duration(fromS) * time.Second), to: t0.Add(time.Duration(toS) * time.Second),
			lat: colocation.Latencies{P99: time.Duration(p99ms) * time.Millisecond, Requests: req, Errors: errs}}
	}
	slices := []lsSlice{slice(0, 5, 40, 500, 0), slice(5, 10, 90, 500, 1), slice(10, 15, 30, 500, 0), slice(15, 20, 60, 500, 2)}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name         string
		from, to     time.Time
		p99          time.Duration
		req, errs    int
		overlapFound bool
	}{
		{"all, from zero", time.Time{}, at(20), 90 * time.Millisecond, 2000, 3, true},
		{"the episode in the third and fourth slices", at(11), at(18), 60 * time.Millisecond, 1000, 2, true},
		{"a slice that ends inside the episode counts", at(9), at(12), 90 * time.Millisecond, 1000, 1, true},
		{"an episode within one slice", at(6), at(7), 90 * time.Millisecond, 500, 1, true},
		{"after every slice", at(21), at(30), 0, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p99, req, errs, ok := worstP99(slices, tc.from, tc.to)
			assert.Equal(t, tc.overlapFound, ok)
			assert.Equal(t, tc.p99, p99)
			assert.Equal(t, tc.req, req)
			assert.Equal(t, tc.errs, errs)
		})
	}
}

func TestLSRange(t *testing.T) {
	ms := time.Millisecond
	assert.Equal(t, "", lsRange(nil), "no runs")
	assert.Equal(t, "", lsRange([]reliefResult{{lsBefore: 10 * ms, lsDuring: 20 * ms}}), "no LS load in the run")
	assert.Equal(t, "2.00×", lsRange([]reliefResult{{lsBefore: 10 * ms, lsDuring: 20 * ms, lsRequests: 100}}))
	assert.Equal(t, "0.50–3.00×", lsRange([]reliefResult{
		{lsBefore: 10 * ms, lsDuring: 30 * ms, lsRequests: 100},
		{lsBefore: 20 * ms, lsDuring: 10 * ms, lsRequests: 100},
		{lsBefore: 0, lsDuring: 10 * ms, lsRequests: 100}, // no baseline: left out
	}))
}
