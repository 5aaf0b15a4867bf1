// Package burst finds where a volume's speed steps down and stays down:
// the end of a cloud volume's burst, of an SSD's fast cache, of a drive
// before it throttled. It judges a series of rates, one per interval,
// from the start of a run of one pattern.
package burst

import (
	"errors"
	"math"
)

// StepRule is the change-point test a step must pass.
type StepRule struct {
	// MinDrop is how far the rate after the step must lie below the rate
	// before it, as a share of the rate before (0.2: a fifth).
	MinDrop float64
	// Sigmas is how many standard errors of the difference of the two
	// means the drop must reach: the intervals' own scatter about their
	// segment's mean sets the standard error.
	Sigmas float64
	// MinBefore and MinAfter are the fewest intervals on either side: a
	// step needs a rate to step from, and one it stays at.
	MinBefore, MinAfter int
}

// DefaultStepRule is the rule of the burst command: a drop of a fifth
// or more, by 8 standard errors, after 3 intervals at least, and held
// for 10.
var DefaultStepRule = StepRule{MinDrop: 0.2, Sigmas: 8, MinBefore: 3, MinAfter: 10}

// ErrBadRule is the error of a StepRule out of range.
var ErrBadRule = errors.New("burst: a step rule needs a drop in (0, 1), sigmas above 0, and at least 1 interval before and 2 after")

// Check tells whether the rule can judge.
func (r StepRule) Check() error {
	if !(r.MinDrop > 0 && r.MinDrop < 1) || !(r.Sigmas > 0) || r.MinBefore < 1 || r.MinAfter < 2 {
		return ErrBadRule
	}
	return nil
}

// A Step is a lasting step down in a series of rates.
type Step struct {
	// At is the index of the first interval after the step: the step
	// lies between intervals At-1 and At.
	At int
	// Before and After are the mean rates of the intervals on either
	// side.
	Before, After float64
	// Sigmas is the drop over its standard error.
	Sigmas float64
}

// Excess is what was delivered above the rate after the step, over the
// intervals before it, each of seconds long: a burst's bucket, in the
// unit of the rates times seconds (I/Os for IOPS, bytes for bytes a
// second).
func (s Step) Excess(rates []float64, seconds float64) float64 {
	var sum float64
	for _, r := range rates[:s.At] {
		sum += (r - s.After) * seconds
	}
	return sum
}

// FindStep finds the lasting step down in rates by rule: the split into
// a segment before and one after that leaves the least squared scatter
// about the two means (the least-squares change point of a single shift
// in the mean). It is a step when:
//   - each side has the rule's fewest intervals;
//   - the mean after lies below the mean before by MinDrop of it;
//   - the drop reaches Sigmas standard errors of the difference of the
//     two means, from the pooled scatter of the intervals about their
//     side's mean;
//   - the rate stayed down: the mean of the last third of the intervals
//     after the step lies below the mean before by MinDrop too, so that a
//     dip the rate came back from is no step.
//
// ok is false when there is no such step (yet, for a run still going).
func FindStep(rates []float64, rule StepRule) (s Step, ok bool) {
	n := len(rates)
	if rule.Check() != nil || n < rule.MinBefore+rule.MinAfter {
		return Step{}, false
	}
	// Prefix sums of the rates and their squares: each split's scatter
	// in constant time.
	sum, sq := make([]float64, n+1), make([]float64, n+1)
	for i, r := range rates {
		sum[i+1], sq[i+1] = sum[i]+r, sq[i]+r*r
	}
	scatter := func(from, to int) float64 { // squared deviations about the mean of rates[from:to]
		k := float64(to - from)
		m := (sum[to] - sum[from]) / k
		return max(sq[to]-sq[from]-k*m*m, 0)
	}
	// The best split of all, however few intervals follow it: one held
	// to MinAfter intervals would, while a run goes on, put the step a
	// few intervals early, mixing the last of the burst into the rate
	// after it. A step with fewer than MinAfter after it is not one yet.
	best, at := math.Inf(1), -1
	for i := rule.MinBefore; i < n; i++ {
		if v := scatter(0, i) + scatter(i, n); v < best {
			best, at = v, i
		}
	}
	if at < 0 || n-at < rule.MinAfter {
		return Step{}, false
	}
	nb, na := float64(at), float64(n-at)
	before, after := sum[at]/nb, (sum[n]-sum[at])/na
	s = Step{At: at, Before: before, After: after}
	drop := before - after
	if !(before > 0) || drop < rule.MinDrop*before {
		return s, false
	}
	// The pooled variance of an interval about its side's mean; a
	// noiseless series has none, and any drop is then beyond its error.
	variance := best / max(nb+na-2, 1)
	se := math.Sqrt(variance * (1/nb + 1/na))
	s.Sigmas = math.Inf(1)
	if se > 0 {
		s.Sigmas = drop / se
	}
	if s.Sigmas < rule.Sigmas {
		return s, false
	}
	tail := max((n-at)/3, 1)
	if last := (sum[n] - sum[n-tail]) / float64(tail); before-last < rule.MinDrop*before {
		return s, false
	}
	return s, true
}
