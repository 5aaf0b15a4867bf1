package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// Sweep is what a sweep measures: a profile's patterns, then their
// open-loop loads (profiles.OpenLoad); or a load–latency sweep of one
// shape (Rates). Doc is the document being resumed, nil for a new one.
type Sweep struct {
	Profile *profiles.Profile
	Rates   *RateSweep
	Doc     *results.Document
}

// NewSweep is the sweep of profile, or the load–latency sweep of its one
// shape that rates asks (nil: none); doc is the document resumed (nil: a
// new one), whose rates are read again here.
func NewSweep(profile *profiles.Profile, rates *results.RateSweepSettings, doc *results.Document) (Sweep, error) {
	w := Sweep{Profile: profile, Doc: doc}
	if rates != nil {
		steps, err := pattern.ParseRateSteps(rates.Rates)
		if err != nil {
			return w, fmt.Errorf("the file's rates: %w", err)
		}
		w.Rates = &RateSweep{Shape: rates.Shape, Steps: steps, Arrival: rates.Arrival}
	}
	return w, nil
}

// OpenLoop tells whether cells of the sweep run open-loop at a share of a
// closed-loop maximum measured first (Request.OpenLoop).
func (w Sweep) OpenLoop() bool { return w.Rates != nil || len(w.Profile.Loads) > 0 }

// Todo are the profile's patterns the document still lacks.
func (w Sweep) Todo() []results.Pattern { return w.Doc.Remaining(w.Profile.Patterns) }

// Count is the number of cells of the sweep, and of those still to be
// measured.
func (w Sweep) Count() (total, todo int) {
	switch {
	case w.Rates != nil:
		return w.Rates.Total(), w.Rates.Todo(w.Doc)
	case len(w.Profile.Loads) > 0:
		return w.Profile.Cells(), len(w.Todo()) + LoadsTodo(ProfileLoads(w.Profile.Loads), w.Doc)
	}
	return len(w.Profile.Patterns), len(w.Todo())
}

// Run measures what the sweep still lacks through l, then, with a
// Watch, the sentinel's last run and the cells it makes due again
// (Loop.EndWatch), and closes l's display; failed and err as Loop.Run. A
// load whose closed-loop maximum failed or did no I/O stops the sweep
// there (ErrNoMaximum, said of which maximum).
func (w Sweep) Run(ctx context.Context, l *Loop) (failed int, err error) {
	c := *l
	display := c.Display
	c.Display = keepOpen{display}
	defer display.Close()
	switch {
	case w.Rates != nil:
		rs := *w.Rates
		rs.Loop = &c
		failed, err = rs.Run(ctx)
		if errors.Is(err, ErrNoMaximum) {
			err = fmt.Errorf("load–latency sweep: %w", err)
		}
	case len(w.Profile.Loads) > 0:
		failed, err = RunWithLoads(ctx, &c, w.Todo(), ProfileLoads(w.Profile.Loads))
		if errors.Is(err, ErrNoMaximum) {
			err = fmt.Errorf("the profile's open-loop loads: %w", err)
		}
	default:
		failed, err = c.Run(ctx, w.Todo())
	}
	if err == nil && ctx.Err() == nil {
		f, e := c.EndWatch(ctx)
		failed, err = failed+f, e
	}
	return failed, err
}
