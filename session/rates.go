package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/profiles"
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
		spec, err := iotest.ParseRate(w)
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

// RateSweep drives a load–latency sweep through a Loop: the shape's
// closed-loop maximum unless the document has it, then the loads still
// to measure.
type RateSweep struct {
	Loop    *Loop
	Shape   results.Pattern
	Steps   []RateStep
	Arrival string
}

// ErrNoMaximum is a closed-loop maximum that cannot scale the shares: it
// failed or did no I/O.
var ErrNoMaximum = errors.New("no closed-loop maximum to take shares of")

// Run measures what the document still lacks and closes the display;
// failed and err as Loop.Run. The open-loop loads are known once the
// maximum is.
func (s *RateSweep) Run(ctx context.Context) (failed int, err error) {
	c := *s.Loop
	display := c.Display
	c.Display = keepOpen{display}
	defer display.Close()
	f, err := c.Run(ctx, c.Doc.Remaining([]results.Pattern{s.Shape}))
	if err != nil || ctx.Err() != nil {
		return f, err
	}
	max, err := s.Max()
	if err != nil {
		return f, err
	}
	f2, err := c.Run(ctx, c.Doc.Remaining(RatePatterns(s.Shape, s.Steps, s.Arrival, max)))
	return f + f2, err
}

// Max is the closed-loop maximum the document holds, in IOPS.
func (s *RateSweep) Max() (float64, error) {
	r, ok := s.Loop.Doc.ByName()[s.Shape.Name()]
	switch {
	case !ok:
		return 0, fmt.Errorf("%w: %s was not measured", ErrNoMaximum, s.Shape.Name())
	case r.Error != nil:
		return 0, fmt.Errorf("%w: %s failed: %w", ErrNoMaximum, r.Name, r.Error)
	case r.Total.IOPS <= 0 && slices.ContainsFunc(s.Steps, func(st RateStep) bool { return st.Share > 0 }):
		return 0, fmt.Errorf("%w: %s did no I/O", ErrNoMaximum, r.Name)
	}
	return r.Total.IOPS, nil
}

// Total is the number of cells of the sweep: the maximum and one per
// step (two steps may yet come to one rate).
func (s *RateSweep) Total() int { return 1 + len(s.Steps) }

// Todo is the number of cells doc (nil: none yet) still lacks: all but
// the maximum's loads while it is not measured.
func (s *RateSweep) Todo(doc *results.Document) int {
	if doc == nil {
		return s.Total()
	}
	r, ok := doc.ByName()[s.Shape.Name()]
	switch {
	case !ok:
		return s.Total()
	case r.Error != nil:
		return s.Total() - 1 // and Run stops at the failed maximum
	}
	return len(doc.Remaining(RatePatterns(s.Shape, s.Steps, s.Arrival, r.Total.IOPS)))
}

// keepOpen is a display whose Close waits for the sweep's end: the loop
// runs twice.
type keepOpen struct{ Display }

func (keepOpen) Close() {}

// ProfileLoads are the load sweeps of a profile's open-loop loads
// (profiles.OpenLoad): each a RateSweep over the same loop, its shares of
// the IOPS the shape's closed-loop cell measured in this sweep.
func ProfileLoads(loads []profiles.OpenLoad) []RateSweep {
	var out []RateSweep
	for _, l := range loads {
		rs := RateSweep{Shape: l.Shape, Arrival: results.ArrivalPoisson}
		for _, s := range l.Shares {
			rs.Steps = append(rs.Steps, RateStep{Share: s})
		}
		out = append(out, rs)
	}
	return out
}

// LoadsTodo is the number of open-loop cells the loads still lack in doc
// (nil: none yet); their shapes are the profile's patterns, counted
// there.
func LoadsTodo(loads []RateSweep, doc *results.Document) int {
	n := 0
	for _, s := range loads {
		n += s.Todo(doc)
		if doc == nil || len(doc.Remaining([]results.Pattern{s.Shape})) > 0 {
			n-- // the shape itself
		}
	}
	return n
}

// RunWithLoads runs the loop over todo, then each load, and closes the
// display once, at the end; failed and err as Loop.Run. A load whose
// closed-loop cell failed or did no I/O stops the sweep there
// (ErrNoMaximum).
func RunWithLoads(ctx context.Context, l *Loop, todo []results.Pattern, loads []RateSweep) (failed int, err error) {
	c := *l
	display := c.Display
	c.Display = keepOpen{display}
	defer display.Close()
	failed, err = c.Run(ctx, todo)
	for _, s := range loads {
		if err != nil || ctx.Err() != nil {
			return failed, err
		}
		s.Loop = &c
		f, e := s.Run(ctx)
		failed, err = failed+f, e
	}
	return failed, err
}
