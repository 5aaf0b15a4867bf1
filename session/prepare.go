package session

import (
	"slices"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// Request is what a measuring command asks for, checked by Prepare
// before any I/O.
type Request struct {
	// Sys is where the target's disk, the cap's device and this
	// process's cgroup are read.
	Sys      sysfs.FS
	Target   string
	Size     int64 // 0: the target's own, or the default of a new file
	Patterns []results.Pattern
	// Writes says the target is written even if no pattern writes
	// (preconditioning).
	Writes                  bool
	Force, AllowDestructive bool
	// OpenLoop says some patterns run open-loop although their rate is
	// set only once their closed-loop maximum is measured (a share of it):
	// the engine and the options are checked for it before any I/O.
	OpenLoop bool
	// Cap is the cap to measure under; nil measures uncapped.
	Cap *CapRequest
	// Options are the engine's options: Prepare aligns their window to
	// the throttle under a cap, and resolves their engine.
	Options *iotest.Options
	Notice  func(string)
}

// Prepare decides what a measurement will do, touching nothing: the
// target's plan (every pattern checked against it), the cap's plan, and
// in r.Options the engine and, under a cap, the window aligned to the
// kernel's throttle (told to Notice when it differs from what was
// asked). A pattern field at fault is an pattern.FieldError when there is
// one pattern, which names it.
func Prepare(r Request) (*target.Plan, *CapPlan, error) {
	writes := r.Writes || results.AnyWrites(r.Patterns)
	plan, err := target.NewPlan(r.Target, target.Options{Size: r.Size, Writes: writes, Force: r.Force, AllowDestructive: r.AllowDestructive, Sys: r.Sys})
	if err != nil {
		return nil, nil, err
	}
	if r.Cap != nil && plan.Info.Kind == target.KindPassthrough {
		// Before anything else is checked: no cap can hold there at all.
		return nil, nil, capInputError(*r.Cap, &cgroup.PassthroughError{Path: plan.Path, Disk: plan.Info.Disk})
	}
	if err := checkPatterns(r, plan, true); err != nil {
		return nil, nil, err
	}
	var cp *CapPlan
	if r.Cap != nil {
		if cp, err = planCap(r.Sys, *r.Cap, r.Target, r.Notice); err != nil {
			return nil, nil, err
		}
		if msg := alignToThrottle(r.Options); msg != "" {
			r.Notice(msg)
		}
	}
	if r.Options.Ring.Poll {
		if err := plan.CheckPoll(); err != nil {
			return nil, nil, err
		}
	}
	if r.Options.Engine, err = iotest.ResolveEngine(r.Options.Engine, r.Options.Notice); err != nil {
		return plan, cp, err
	}
	if err := checkPatterns(r, plan, false); err != nil {
		return nil, nil, err // with the engine resolved: auto that fell back to psync
	}
	if r.OpenLoop || slices.ContainsFunc(r.Patterns, func(p results.Pattern) bool { return p.Rate.Open() }) {
		if err := iotest.CheckOpen(*r.Options, r.Options.Engine); err != nil {
			return nil, nil, err
		}
	}
	// auto that fell back to psync must not drop a ring mode silently.
	return plan, cp, r.Options.Ring.Check(r.Options.Engine)
}

// checkPatterns checks every pattern of r against the target: its size
// and alignment (facts: once), and what a passthrough target cannot run
// with the engine (again once the engine is resolved). A pattern field at
// fault is named as such when there is one pattern.
func checkPatterns(r Request, plan *target.Plan, facts bool) error {
	for _, p := range r.Patterns {
		var err error
		if facts {
			err = pattern.CheckTarget(p, plan.Align, plan.Size)
		}
		if err == nil {
			err = iotest.CheckPassthrough(plan.Namespace(), p, *r.Options)
		}
		if err == nil {
			err = iotest.CheckSync(p, *r.Options)
		}
		if err != nil {
			if len(r.Patterns) == 1 {
				return err
			}
			return fault.Input("", "%s: pattern %s: %w", r.Target, p.Name(), err)
		}
	}
	return nil
}
