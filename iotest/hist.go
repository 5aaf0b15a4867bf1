package iotest

import (
	"math"
	"math/bits"

	"github.com/iomatrix/iomatrix/results"
)

// Histogram is a log-linear latency histogram in nanoseconds, in the spirit
// of HdrHistogram: each power of two is split into 64 linear sub-buckets, so a
// recorded value is known to within 1/128 of itself (< 0.8 % error) from 1 ns
// up to histMaxValue. Recording is a few integer instructions and touches one
// counter: it is safe on the I/O hot path. A Histogram is owned by one
// goroutine; merge at the end.
type Histogram struct {
	counts [histBuckets]uint64
	total  uint64
	sum    uint64
	min    uint64
	max    uint64
}

const (
	histSubBits  = 7                      // 128 first-level values, then 64 per octave
	histSubHalf  = 1 << (histSubBits - 1) // 64
	histMaxShift = 40 - histSubBits       // values up to 2^40 ns (18 minutes)
	histBuckets  = (histMaxShift+1)*histSubHalf + histSubHalf
	histMaxValue = uint64(1)<<40 - 1
)

func histIndex(v uint64) int {
	if v < 1<<histSubBits {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits
	return shift*histSubHalf + int(v>>uint(shift))
}

// histBounds returns the smallest and largest value that map to bucket i.
func histBounds(i int) (lo, hi uint64) {
	if i < 1<<histSubBits {
		return uint64(i), uint64(i)
	}
	shift := uint(i/histSubHalf - 1)
	sub := uint64(i - int(shift)*histSubHalf)
	lo = sub << shift
	return lo, lo + (uint64(1) << shift) - 1
}

// Record adds one latency in nanoseconds.
func (h *Histogram) Record(ns int64) {
	v := uint64(ns)
	if ns < 0 {
		v = 0
	}
	if v > histMaxValue {
		v = histMaxValue
	}
	h.counts[histIndex(v)]++
	h.total++
	h.sum += v
	if v < h.min || h.total == 1 {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// Merge adds o's counts into h.
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

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Min, Max and Mean are exact.
func (h *Histogram) Min() uint64 { return h.min }

// Max is the largest recorded value.
func (h *Histogram) Max() uint64 { return h.max }

// Mean is the exact arithmetic mean.
func (h *Histogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.total)
}

// Percentile returns the value below which q percent of the recorded values
// fall, as the midpoint of its bucket clamped to the exact min and max.
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
			lo, hi := histBounds(i)
			v := lo + (hi-lo)/2
			return max(h.min, min(v, h.max))
		}
	}
	return h.max
}

// Summary renders the histogram for the results file.
func (h *Histogram) Summary() results.Latency {
	l := results.Latency{
		Min: h.min, Mean: math.Round(h.Mean()*10) / 10,
		P50: h.Percentile(50), P90: h.Percentile(90), P95: h.Percentile(95), P99: h.Percentile(99),
		P999: h.Percentile(99.9), P9999: h.Percentile(99.99), Max: h.max, Count: h.total,
	}
	l.MarkConfidence(h.total)
	return l
}
