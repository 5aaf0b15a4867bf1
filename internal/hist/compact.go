package hist

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Scheme names the buckets of a Histogram in its compact form: values
// below 128 ns one bucket each, then 64 linear buckets per power of two.
const Scheme = "log-linear-64"

// Compact is a Histogram as a results file keeps it: the counts of its
// buckets from the first that is not empty to the last, where a negative
// number -n stands for n empty buckets in a row, and the exact sum of the
// values. The count, min and max are the summary's it sits in. A cell's
// histogram of about 300 buckets takes one to two kilobytes.
type Compact struct {
	Scheme string `json:"scheme"`
	Sum    uint64 `json:"sum"`
	First  int    `json:"first"`
	// Runs are the counts from bucket First on; -n is n empty buckets.
	Runs Runs `json:"counts"`
}

// Runs are written as one string of space-separated numbers, "5 12 -3 1":
// an indented results file would otherwise spend a line on each.
type Runs []int64

// MarshalJSON writes the runs as a string.
func (r Runs) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*len(r)+2)
	b = append(b, '"')
	for i, n := range r {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, '"'), nil
}

// UnmarshalJSON reads the string MarshalJSON writes.
func (r *Runs) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%w: counts: %w", ErrCompact, err)
	}
	fields := strings.Fields(s)
	*r = make(Runs, len(fields))
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: counts: %q is not a number", ErrCompact, f)
		}
		(*r)[i] = n
	}
	return nil
}

// Compact returns h's compact form, nil for an empty histogram.
func (h *Histogram) Compact() *Compact {
	if h.total == 0 {
		return nil
	}
	first, last := h.span()
	n := 0 // the runs' length, so that they take one allocation
	for i := first; i <= last; i++ {
		if h.counts[i] != 0 || h.counts[i-1] != 0 {
			n++
		}
	}
	c := &Compact{Scheme: Scheme, Sum: h.sum, First: first, Runs: make(Runs, 0, n)}
	for i := first; i <= last; i++ {
		n := h.counts[i]
		switch {
		case n != 0:
			c.Runs = append(c.Runs, int64(n))
		case c.Runs[len(c.Runs)-1] < 0:
			c.Runs[len(c.Runs)-1]--
		default:
			c.Runs = append(c.Runs, -1)
		}
	}
	return c
}

// ErrCompact is the error of a compact histogram that cannot be read.
var ErrCompact = errors.New("histogram")

// Histogram rebuilds the histogram of c, whose values' count, min and max
// the summary holds: c's counts must add up to count, and min and max lie
// in its first and last buckets.
func (c *Compact) Histogram(count, minV, maxV uint64) (*Histogram, error) {
	if c.Scheme != Scheme {
		return nil, fmt.Errorf("%w: scheme %q, want %q", ErrCompact, c.Scheme, Scheme)
	}
	if c.First < 0 || c.First >= Buckets || len(c.Runs) == 0 || c.Runs[0] <= 0 || c.Runs[len(c.Runs)-1] <= 0 {
		return nil, fmt.Errorf("%w: counts must start at a bucket below %d and begin and end with a count", ErrCompact, Buckets)
	}
	h := &Histogram{min: minV, max: maxV, sum: c.Sum}
	i := c.First
	for _, r := range c.Runs {
		if r < 0 {
			if r < -Buckets {
				return nil, fmt.Errorf("%w: a run of %d empty buckets, of %d in all", ErrCompact, -r, Buckets)
			}
			i += int(-r)
			continue
		}
		if r == 0 || i >= Buckets {
			return nil, fmt.Errorf("%w: counts beyond bucket %d, or a 0 where a run of empty buckets is -1", ErrCompact, Buckets-1)
		}
		h.counts[i] = uint64(r)
		h.total += uint64(r)
		i++
	}
	if h.total != count {
		return nil, fmt.Errorf("%w: counts add up to %d, the summary counts %d", ErrCompact, h.total, count)
	}
	return h, h.check()
}

// FromCounts builds a histogram from its buckets' counts (by index) and
// the exact sum, min and max of its values, as another tool kept them.
func FromCounts(counts map[int]uint64, sum, minV, maxV uint64) (*Histogram, error) {
	h := &Histogram{min: minV, max: maxV, sum: sum}
	for i, n := range counts {
		if i < 0 || i >= Buckets {
			return nil, fmt.Errorf("%w: bucket %d out of 0..%d", ErrCompact, i, Buckets-1)
		}
		h.counts[i] += n
		h.total += n
	}
	return h, h.check()
}

// check holds min, max and sum to the buckets: min and max in the first
// and last buckets counted, the sum between count × min and count × max.
func (h *Histogram) check() error {
	if h.total == 0 {
		if h.sum != 0 || h.min != 0 || h.max != 0 {
			return fmt.Errorf("%w: no values, but a sum, min or max", ErrCompact)
		}
		return nil
	}
	first, last := h.span()
	lo, hi := Bounds(first)
	if h.min > h.max || h.min < lo || h.min > hi {
		return fmt.Errorf("%w: min %d is not in the first bucket [%d, %d]", ErrCompact, h.min, lo, hi)
	}
	if lo, hi = Bounds(last); h.max < lo || h.max > hi {
		return fmt.Errorf("%w: max %d is not in the last bucket [%d, %d]", ErrCompact, h.max, lo, hi)
	}
	loHi, loSum := bits.Mul64(h.min, h.total)
	hiHi, hiSum := bits.Mul64(h.max, h.total)
	if loHi == 0 && h.sum < loSum || hiHi == 0 && h.sum > hiSum {
		return fmt.Errorf("%w: sum %d is not between count × min and count × max", ErrCompact, h.sum)
	}
	return nil
}

// span is the first and the last bucket that are not empty (-1, -1 when
// none is).
func (h *Histogram) span() (first, last int) {
	first, last = -1, -1
	for i, c := range h.counts {
		if c != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last
}
