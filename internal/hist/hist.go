// Package hist is the latency histogram every part of iomatrix shares:
// the engine records into it on the I/O hot path, the results file keeps
// it in a compact form, and the reports, the fleet merge and fio's import
// read it. One scheme, one percentile rule, one merge.
package hist

import (
	"math"
	"math/bits"
)

// Histogram is a log-linear latency histogram in nanoseconds, in the spirit
// of HdrHistogram: the values below 128 each have a bucket, then each power
// of two is split into 64 linear sub-buckets, so a recorded value is known
// to within 1/128 of itself (< 0.8 % error) up to MaxValue. Recording is a
// few integer instructions and touches one counter: it is safe on the I/O
// hot path. A Histogram is owned by one goroutine; merge at the end.
//
// The buckets are fio's (FIO_IO_U_PLAT_BITS = 6): bucket i here is fio's
// io_u_plat[i], so fio's json+ bins come in unchanged. fio stops at 29
// groups (1,856 buckets, about 17 s) and counts anything longer in its last
// bucket; this one goes on to 2^40 ns (18 minutes).
type Histogram struct {
	counts [Buckets]uint64
	total  uint64
	sum    uint64
	min    uint64
	max    uint64
}

const (
	subBits  = 7                  // 128 first-level values, then 64 per octave
	subHalf  = 1 << (subBits - 1) // 64
	maxShift = 40 - subBits       // values up to 2^40 ns (18 minutes)
	// Buckets is the number of buckets.
	Buckets = (maxShift+1)*subHalf + subHalf
	// MaxValue is the largest value kept; longer ones count as it.
	MaxValue = uint64(1)<<40 - 1
)

// Index is the bucket of value v (v ≤ MaxValue).
func Index(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	shift := bits.Len64(v) - subBits
	return shift*subHalf + int(v>>uint(shift))
}

// Bounds returns the smallest and largest value that map to bucket i.
func Bounds(i int) (lo, hi uint64) {
	if i < 1<<subBits {
		return uint64(i), uint64(i)
	}
	shift := uint(i/subHalf - 1)
	sub := uint64(i - int(shift)*subHalf)
	lo = sub << shift
	return lo, lo + (uint64(1) << shift) - 1
}

// Value is the value a bucket stands for: the midpoint of its bounds,
// rounded down. Percentiles, CDFs and exported buckets all use it.
func Value(i int) uint64 {
	lo, hi := Bounds(i)
	return lo + (hi-lo)/2
}

// Record adds one latency in nanoseconds.
func (h *Histogram) Record(ns int64) {
	v := uint64(ns)
	if ns < 0 {
		v = 0
	}
	if v > MaxValue {
		v = MaxValue
	}
	h.counts[Index(v)]++
	h.total++
	h.sum += v
	if v < h.min || h.total == 1 {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// Merge adds o's counts into h: the result is the histogram of the union
// of both sets of values.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.total += o.total
	h.sum += o.sum
}

// Touch writes to every page of h's counters, so that they are faulted in
// now rather than one by one on the hot path as rarer latencies are first
// recorded.
func (h *Histogram) Touch() {
	for i := 0; i < len(h.counts); i += 512 {
		h.counts[i] = 0
	}
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Sum is the exact sum of the recorded values, in nanoseconds.
func (h *Histogram) Sum() uint64 { return h.sum }

// Min is the smallest recorded value (exact).
func (h *Histogram) Min() uint64 { return h.min }

// Max is the largest recorded value (exact).
func (h *Histogram) Max() uint64 { return h.max }

// Mean is the exact arithmetic mean.
func (h *Histogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.total)
}

// At is the count of bucket i.
func (h *Histogram) At(i int) uint64 { return h.counts[i] }

// Percentile returns the q-th percentile by nearest rank: the value of the
// bucket that holds the ceil(q/100 × count)-th smallest value (at least the
// first), clamped to the exact min and max. It lies within half a bucket's
// width of the exact percentile of the recorded values.
func (h *Histogram) Percentile(q float64) uint64 {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q / 100 * float64(h.total)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			return max(h.min, min(Value(i), h.max))
		}
	}
	return h.max
}

// Equal tells whether two histograms hold the same values, bucket by bucket,
// with the same count, sum, min and max.
func (h *Histogram) Equal(o *Histogram) bool {
	return *h == *o
}
