package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// RateSweep drives a load–latency sweep through a Loop: the shape's
// closed-loop maximum unless the document has it, then the loads still
// to measure.
type RateSweep struct {
	Loop    *Loop
	Shape   results.Pattern
	Steps   []pattern.RateStep
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
	f2, err := c.Run(ctx, c.Doc.Remaining(pattern.RatePatterns(s.Shape, s.Steps, s.Arrival, max)))
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
	case r.Total.IOPS <= 0 && slices.ContainsFunc(s.Steps, func(st pattern.RateStep) bool { return st.Share > 0 }):
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
	return len(doc.Remaining(pattern.RatePatterns(s.Shape, s.Steps, s.Arrival, r.Total.IOPS)))
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
			rs.Steps = append(rs.Steps, pattern.RateStep{Share: s})
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
