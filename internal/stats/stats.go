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
