package crosscheck

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
)

// Prepare makes a comparison of the patterns specs (ParsePatterns)
// ready before any I/O, touching nothing: the target planned and every
// pattern checked against it (Plan), the tools found and checked (New).
// It returns the target's plan, which the caller lays out and opens
// before Run. A pattern that cannot be read or held is bad input whose
// message names the pattern option (a fault.Mention).
func Prepare(ctx context.Context, specs []string, o Options) (*Comparison, *target.Plan, error) {
	var err error
	if o.Patterns, err = ParsePatterns(specs); err != nil {
		return nil, nil, patternError(err)
	}
	plan, err := o.Plan()
	if err != nil {
		return nil, nil, patternError(err)
	}
	c, err := New(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	return c, plan, nil
}

// patternError names the pattern option before a pattern's SpecError;
// any other error stays as it is.
func patternError(err error) error {
	var se *pattern.SpecError
	if !errors.As(err, &se) {
		return err
	}
	return fault.Mentions("", func(n fault.Namer) string { return n("pattern") + " " + se.Error() })
}

// Plan decides what happens to the target, touching nothing: it checks
// the options (Validate) and that the engine runs here, plans the target
// (target.NewPlan) and checks every pattern and the ring mode against
// it, so that bad input is refused before any I/O. It returns the
// target's plan, which the caller lays out and opens before Run, and
// completes o from it for New: Target and Size are the extent both tools
// address, ReadInPlace and Passthrough say what the target is. A pattern
// the target cannot hold is a *pattern.SpecError that names the target;
// a target's own fault is target's error.
func (o *Options) Plan() (*target.Plan, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var err error
	if o.Engine, err = iotest.ResolveEngine(o.Engine, o.Notice); err != nil {
		return nil, err
	}
	writes := false
	for _, ps := range o.Patterns {
		writes = writes || ps.Pattern.Writes()
	}
	plan, err := target.NewPlan(o.Target, target.Options{Size: planSize(o.Target, o.Size), Writes: writes, Force: o.Force,
		AllowDestructive: o.AllowDestructive, Sys: o.Sys})
	if err != nil {
		return nil, err
	}
	for _, ps := range o.Patterns {
		if err := pattern.CheckTarget(ps.Pattern, plan.Align, plan.Size); err != nil {
			return nil, o.targetError(ps, err)
		}
	}
	o.Passthrough = plan.Info.Kind == target.KindPassthrough
	for _, ps := range o.Patterns {
		err := iotest.CheckPassthrough(plan.Namespace(), ps.Pattern, iotest.Options{Engine: o.Engine, Ring: o.Ring})
		if pattern.IsField(err, "block_size") {
			return nil, o.targetError(ps, err)
		}
		if err != nil {
			return nil, err
		}
	}
	if o.Ring.Poll {
		if err := plan.CheckPoll(); err != nil {
			return nil, err
		}
	}
	o.Target, o.Size, o.ReadInPlace = plan.Path, plan.Size, plan.Action == target.ActionReadOnly
	return plan, nil
}

// targetError is a pattern that the target cannot hold, naming both.
func (o *Options) targetError(ps pattern.Spec, err error) error {
	return &pattern.SpecError{Spec: ps.Spec, Msg: o.Target + ": " + err.Error()}
}

// planSize is the size to plan path at when size was asked (0: none): a
// new file's default, or 0 for a target whose size iomatrix's layout
// rules decide.
func planSize(path string, size int64) int64 {
	if _, err := os.Stat(path); size == 0 && errors.Is(err, fs.ErrNotExist) {
		return NewFileSize
	}
	return size
}
