package lswait

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBucketEdges(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {999 * time.Nanosecond, 0},
		{time.Microsecond, 1},                                // l 0, sub 0
		{2 * time.Microsecond, 5}, {3 * time.Microsecond, 7}, // l 1: 2 → sub 0, 3 → sub 2
		{4 * time.Microsecond, 9}, {5 * time.Microsecond, 10}, {7 * time.Microsecond, 12},
		{1000 * time.Microsecond, 1 + 4*9 + 3}, // 1000 = 0b1111101000: l 9, next bits 11
		{time.Hour, NumBuckets - 1},
	} {
		assert.Equal(t, tt.want, Bucket(tt.d), "%v", tt.d)
	}
	// Every wait is below its bucket's upper edge and at or above the
	// previous bucket's (the edges partition the line).
	for us := 1; us < 1<<20; us = us*5/4 + 1 {
		d := time.Duration(us) * time.Microsecond
		b := Bucket(d)
		assert.Less(t, d, UpperBound(b), "%v in %d", d, b)
		assert.GreaterOrEqual(t, d, UpperBound(b-1), "%v in %d", d, b)
		// a quarter of a power of two at most
		assert.LessOrEqual(t, float64(UpperBound(b)), 1.5*float64(d)+float64(time.Microsecond))
	}
}

func TestQuantileAndSub(t *testing.T) {
	var h Hist
	for i := 0; i < 990; i++ {
		h.Buckets[Bucket(10*time.Microsecond)]++
	}
	for i := 0; i < 10; i++ {
		h.Buckets[Bucket(5*time.Millisecond)]++
	}
	h.Sum = 990*10*time.Microsecond + 10*5*time.Millisecond
	assert.Equal(t, UpperBound(Bucket(10*time.Microsecond)), h.Quantile(0.99))
	assert.Equal(t, UpperBound(Bucket(5*time.Millisecond)), h.Quantile(0.999))
	assert.Equal(t, h.Sum/1000, h.Mean())
	assert.Equal(t, uint64(1000), h.Count())

	prev := h
	h.Buckets[Bucket(5*time.Millisecond)] += 100
	h.Sum += 100 * 5 * time.Millisecond
	d := h.Sub(prev)
	assert.Equal(t, uint64(100), d.Count())
	assert.Equal(t, UpperBound(Bucket(5*time.Millisecond)), d.Quantile(0.5))
	// a reset slot counts from zero
	assert.Equal(t, uint64(1), Hist{Buckets: [NumBuckets]uint64{1: 1}}.Sub(h).Count())
	assert.Zero(t, Hist{}.Quantile(0.99))
	assert.Zero(t, Hist{}.Mean())
}
