package pattern

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// A load–latency sweep measures one shape closed-loop first, at its
// queue depth, to find the most it carries; then open-loop at each of its
// rates, a share of that maximum or a number of IOPS, the queue depth
// then the most I/Os allowed in flight. Every cell is a result: the
// maximum too, so a resumed sweep knows it and a report can put the loads
// beside it.

// RateStep is one load of a sweep: Share (in percent) of the closed-loop
// maximum, or IOPS as such (Share zero).
type RateStep struct {
	Share float64
	IOPS  float64
}

func (s RateStep) String() string {
	if s.Share > 0 {
		return units.FormatPercent(s.Share)
	}
	return results.FormatRate(s.IOPS)
}

// ParseRateSteps reads a list of loads, "10%,20%,50%,1000": shares of
// the maximum (above 0 and at most 100 %) and rates in IOPS. The option
// at fault is "rates".
func ParseRateSteps(s string) ([]RateStep, error) {
	var steps []RateStep
	for w := range strings.SplitSeq(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			return nil, fault.Input("rates", "an empty entry in %q (e.g. 10%%,20%%,50%%,100%% or 1000,5000)", s)
		}
		// Each load is written as run's --rate is, less a rate per
		// direction: a curve's loads are totals.
		spec, err := ParseRate(w)
		switch {
		case err != nil && strings.HasSuffix(w, "%"):
			return nil, fault.Input("rates", "%s: a share of the closed-loop maximum is above 0 and at most 100%%", w)
		case err != nil || spec.Rate.PerDirection() || spec.SharePct == 0 && spec.Rate.IOPS < 1:
			return nil, fault.Input("rates", "%q is neither a share of the maximum (10%%) nor a rate of at least 1 IOPS", w)
		}
		st := RateStep{Share: spec.SharePct, IOPS: spec.Rate.IOPS}
		if slices.Contains(steps, st) {
			return nil, fault.Input("rates", "%s is given twice", w)
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// FormatRateSteps writes steps as ParseRateSteps reads them: the spelling
// a results file records and a resumed sweep compares.
func FormatRateSteps(steps []RateStep) string {
	words := make([]string, len(steps))
	for i, s := range steps {
		words[i] = s.String()
	}
	return strings.Join(words, ",")
}

// ErrShapes is a load–latency sweep asked of more than one shape.
var ErrShapes = errors.New("a load–latency sweep measures one shape")

// RateShape is the one shape of pats, closed-loop: the patterns may
// differ only in their rate.
func RateShape(pats []results.Pattern) (results.Pattern, error) {
	var shapes []results.Pattern
	for _, p := range pats {
		p.Rate = results.Rate{}
		if !slices.Contains(shapes, p) {
			shapes = append(shapes, p)
		}
	}
	if len(shapes) != 1 {
		return results.Pattern{}, fault.Input("rates", "%w, not %d", ErrShapes, len(shapes))
	}
	return shapes[0], nil
}

// RatePatterns are the open-loop patterns of shape at steps, against a
// closed-loop maximum of max IOPS: a share becomes whole IOPS (at least
// one), so that names and flags spell it plainly. Two steps that come to
// the same rate are one pattern.
func RatePatterns(shape results.Pattern, steps []RateStep, arrival string, max float64) []results.Pattern {
	var pats []results.Pattern
	for _, s := range steps {
		iops := s.IOPS
		if s.Share > 0 {
			iops = math.Max(1, math.Round(max*s.Share/100))
		}
		p := shape
		p.Rate = results.Rate{IOPS: iops, Arrival: arrival}
		if !slices.Contains(pats, p) {
			pats = append(pats, p)
		}
	}
	return pats
}

// ParseShares reads a profile's loads: shares of a cell's own closed-loop
// IOPS, "90%" or "50%,90%", each above 0 and at most 100 % as a rate's
// share is (ParseRate), written as a decimal percentage (units'); a share
// given twice is refused, as a sweep's --rates refuses it.
func ParseShares(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		_, ok := strings.CutSuffix(f, "%")
		x, err := units.ParsePercent(f)
		if !ok || err != nil || !(x > 0 && x <= 100) {
			return nil, fmt.Errorf("%q is not a share of the cell's own IOPS above 0 %% and at most 100 %% (e.g. 90%%)", f)
		}
		if slices.Contains(out, x) {
			return nil, fmt.Errorf("%s is given twice", f)
		}
		out = append(out, x)
	}
	return out, nil
}
