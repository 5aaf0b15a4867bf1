// Package stats holds the small order statistics that several packages
// take of a handful of figures (the pairs of a benchmark, the members of
// a fleet).
package stats

import (
	"math"
	"slices"
)

// Median is the middle of v, the mean of the middle two when the count is
// even; NaN when v is empty. v is left as it was.
func Median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Interval is a distribution-free confidence interval for the median of
// the population v was drawn from: the order statistics x(k) and
// x(n+1-k) of the sorted sample, with the largest k whose coverage,
// 1 - 2·P(Binomial(n, 1/2) < k), is at least level. It assumes only
// that the figures are independent draws of one distribution, not its
// shape: the right interval for a handful of benchmark pairs, whose
// noise is neither normal nor known. A sample too small to reach level
// gets its widest interval, the minimum and the maximum, with the lower
// confidence that one has (5 figures: 93.75 %; 3: 75 %). ok is false
// for fewer than two figures.
func Interval(v []float64, level float64) (lo, hi, confidence float64, ok bool) {
	n := len(v)
	if n < 2 {
		return 0, 0, 0, false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	p := math.Pow(0.5, float64(n)) // P(X = k-1), X ~ Binomial(n, 1/2)
	cdf := p                       // P(X <= k-1)
	k := 1
	for k+1 <= (n+1)/2 {
		next := p * float64(n-k+1) / float64(k) // P(X = k)
		if 1-2*(cdf+next) < level {
			break
		}
		p, cdf = next, cdf+next
		k++
	}
	return s[k-1], s[n-k], 1 - 2*cdf, true
}
