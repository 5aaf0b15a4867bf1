package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// cellLoop measures patterns one after another: the driver that sweep
// and cap verify share. Every finished cell is appended to doc and, when
// out is set, saved at once (atomically), so an interruption loses at
// most the pattern that was running, never a finished one.
type cellLoop struct {
	g    *globalOptions
	r    runner
	opts iotest.Options
	prog *sweepProgress
	doc  *results.Document
	out  string // "" saves nothing per cell
	// keepGoing records a cell that failed with an I/O error and goes on
	// (--continue-on-error); otherwise such a cell, saved with its error,
	// ends the loop.
	keepGoing bool
	// check, when set, annotates a result before it is saved.
	check func(res *results.Result)
}

// run measures todo and closes the progress display. It returns the
// number of cells that failed and were passed over, and the error that
// stopped the loop (an I/O error, a failed save, a lost child); an
// interruption stops it with nil: the caller looks at ctx, and the
// pattern that was running is discarded, never half-counted.
func (c *cellLoop) run(ctx context.Context, todo []results.Pattern) (failed int, err error) {
	defer c.prog.close()
	for _, p := range todo {
		c.prog.start(p)
		o := c.opts
		o.Progress = c.prog.live
		res, err := c.r.Run(ctx, p, o)
		if ctx.Err() != nil {
			return failed, nil
		}
		if err != nil && res.Name == "" {
			return failed, err // nothing was measured
		}
		noticeOtherLoad(c.g, res, c.doc.Target.Disk)
		if c.check != nil {
			c.check(&res)
		}
		c.doc.Results = append(c.doc.Results, res)
		if c.out != "" {
			if werr := results.WriteFileAtomic(c.out, c.doc); werr != nil {
				return failed, fmt.Errorf("save results (the previous version of %s is intact): %w", c.out, werr)
			}
		}
		c.prog.finished(res)
		if err != nil {
			if !c.keepGoing {
				return failed, err // an I/O error: stop with what is saved
			}
			// The cell is saved with its error; the loop goes on.
			fmt.Fprintf(c.g.stderr, "iomatrix: %v (continuing)\n", err)
			failed++
		}
	}
	return failed, nil
}

// finish tells whether every pattern was measured (the loop ended without
// error or interruption) and, if so, marks the document finished and
// saves it.
func (c *cellLoop) finish(ctx context.Context, runErr error) (complete bool, err error) {
	if runErr != nil || ctx.Err() != nil {
		return false, nil
	}
	c.doc.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	if c.out == "" {
		return true, nil
	}
	return true, results.WriteFileAtomic(c.out, c.doc)
}

// resolve checks what a sweep or cap verify will do before any I/O: the
// target's plan, the cap's and the engine, which it records in setup.opts
// (with the measured window aligned to the kernel's throttle under a cap).
func (o *profileOptions) resolve(g *globalOptions, setup *sweepSetup, precondition bool) (*iotest.Plan, *capPlan, error) {
	plan, err := o.plan(setup.target, setup.size, setup.profile.Patterns, precondition)
	if err != nil {
		return nil, nil, err
	}
	cp, err := o.capOptions.plan(g, setup.target)
	if err != nil {
		return nil, nil, err
	}
	if cp != nil {
		alignToThrottle(g, &setup.opts)
	}
	engine, err := resolveEngine(setup.opts)
	if err != nil {
		return nil, nil, err
	}
	setup.opts.Engine = engine
	return plan, cp, nil
}

// newDocument starts the results of setup measured on t.
func (setup *sweepSetup) newDocument(t *iotest.Target) *results.Document {
	doc := results.NewDocument(t.Info, results.Settings{
		Profile: setup.profile.Name, Engine: setup.opts.Engine, RuntimeNS: int64(setup.opts.Runtime), RampNS: int64(setup.opts.Ramp),
		SizeBytes: t.Size, Seed: setup.opts.Seed, Auto: autoSettings(setup.opts),
	}, time.Now().UTC().Format(time.RFC3339))
	if setup.profile.Source != "built-in" {
		doc.Settings.ProfileFile, _ = filepath.Abs(setup.profile.Source)
	}
	return doc
}

// anyWrites tells whether a pattern of pats writes.
func anyWrites(pats []results.Pattern) bool {
	for _, p := range pats {
		if p.Writes() {
			return true
		}
	}
	return false
}
