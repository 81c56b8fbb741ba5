package lswait

import (
	"math"
	"time"
)

// NumBuckets is the number of buckets of a Hist (the BPF program's NBUCKETS).
const NumBuckets = 128

// Hist is a distribution of CPU waits: Buckets[0] counts waits under 1 µs;
// a wait of v µs (v ≥ 1, l = ⌊log₂ v⌋) is in bucket 1 + 4l + the two bits
// of v after its leading one, so a bucket spans a quarter of its power of
// two (a quantile read from it is at most 25% high). The last bucket also
// holds every longer wait. Sum is the total wait.
type Hist struct {
	Buckets [NumBuckets]uint64
	Sum     time.Duration
}

// Bucket returns the bucket of a wait of d (the BPF program's bucket()).
func Bucket(d time.Duration) int {
	us := uint64(d / time.Microsecond)
	if d <= 0 || us == 0 {
		return 0
	}
	if us > math.MaxUint32 {
		return NumBuckets - 1
	}
	l := 63 - leadingZeros(us)
	var sub uint64
	if l >= 2 {
		sub = (us >> (l - 2)) & 3
	} else {
		sub = (us << (2 - l)) & 3
	}
	b := 1 + 4*l + int(sub)
	if b >= NumBuckets {
		return NumBuckets - 1
	}
	return b
}

func leadingZeros(v uint64) int {
	n := 0
	for i := 63; i >= 0 && v&(1<<uint(i)) == 0; i-- {
		n++
	}
	return n
}

// UpperBound is the shortest wait above bucket b (its exclusive upper
// edge, in whole microseconds as the program truncates); the last bucket's
// is its lower edge (it holds everything above).
func UpperBound(b int) time.Duration {
	if b <= 0 {
		return time.Microsecond
	}
	last := false
	if b >= NumBuckets-1 {
		b, last = NumBuckets-1, true
	}
	l, sub := uint((b-1)/4), uint64((b-1)%4)
	if last {
		return time.Duration((4+sub)<<l/4) * time.Microsecond
	}
	if l >= 2 {
		return time.Duration((5+sub)<<(l-2)) * time.Microsecond
	}
	// Below 4 µs the buckets are finer than a microsecond: the next
	// whole microsecond above the lower edge (4+sub)·2^l/4.
	return time.Duration((4+sub)<<l/4+1) * time.Microsecond
}

// Count is the number of waits.
func (h Hist) Count() uint64 {
	var n uint64
	for _, c := range h.Buckets {
		n += c
	}
	return n
}

// Add adds o to h.
func (h *Hist) Add(o Hist) {
	for i := range h.Buckets {
		h.Buckets[i] += o.Buckets[i]
	}
	h.Sum += o.Sum
}

// Sub returns h − prev, the waits between two reads of a cumulative
// histogram; a counter that went back (the slot was reset) counts from zero.
func (h Hist) Sub(prev Hist) Hist {
	var d Hist
	for i := range h.Buckets {
		if h.Buckets[i] >= prev.Buckets[i] {
			d.Buckets[i] = h.Buckets[i] - prev.Buckets[i]
		} else {
			d.Buckets[i] = h.Buckets[i]
		}
	}
	if h.Sum >= prev.Sum {
		d.Sum = h.Sum - prev.Sum
	} else {
		d.Sum = h.Sum
	}
	return d
}

// Quantile returns the upper edge of the bucket holding the q-quantile of
// the waits (0 < q ≤ 1); 0 when there is none.
func (h Hist) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for b, c := range h.Buckets {
		seen += c
		if seen >= rank {
			return UpperBound(b)
		}
	}
	return UpperBound(NumBuckets - 1)
}

// Mean is the mean wait; 0 when there is none.
func (h Hist) Mean() time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	return h.Sum / time.Duration(n)
}
