package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/progress"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// sweepOptions are the flags of `iomatrix sweep`.
type sweepOptions struct {
	profileOptions
	Resume string
	// ContinueOnError records a pattern's I/O error and goes on.
	ContinueOnError bool
	// Precondition is the random-write time after two sequential fills;
	// zero means no preconditioning.
	Precondition time.Duration
	// Frame writes progress and the document as frames (results.Frames)
	// on stdout, for a log that other lines share: a pod's.
	Frame bool
	// KeepMerges leaves the disk's request merging as it is, where the
	// profile asks to set it (the iocost profile's 4K cells).
	KeepMerges bool
	rateOptions
	content   contentOptions
	sentinels sentinelOptions
}

func (o *sweepOptions) AddFlags(f *pflag.FlagSet) {
	o.profileOptions.AddFlags(f, profiles.DefaultName, "iomatrix-PROFILE-TIMESTAMP.json")
	f.StringVar(&o.Resume, "resume", "", "continue the sweep saved in this results file: finished patterns are skipped")
	formatVar(f, &o.Format, []string{"text", "json"}, "output on stdout at the end: text (the matrix) or json (the results document)")
	f.BoolVar(&o.ContinueOnError, "continue-on-error", false, "on an I/O error, record the failed cell and go on with the next pattern (exit status 1 at the end)")
	f.BoolVar(&o.Frame, "frame", false, "with --format json: frame the document, and a line per finished pattern, so that a log shared with other output (a pod's, read by iomatrix k8s) carries them intact")
	f.BoolVar(&o.KeepMerges, "keep-merges", false, "leave the disk's request merging as it is: by default the cells a profile marks (the iocost profile's 4K cells) run with the disk's nomerges set as the profile says, and put back after each, which needs root")
	o.rateOptions.AddFlags(f)
	o.content.AddFlags(f)
	o.sentinels.AddFlags(f)
	forceFlag(f, "--out file, starting over (--resume continues it)")
	durationVar(f, &o.Precondition, "precondition", 0, "bring an SSD to steady state first: fill the whole target sequentially twice, then random 4k writes for this long (e.g. 30m; a bare number is seconds); overwrites the target")
}

func newSweepCommand(g *globalOptions) *cobra.Command {
	o := &sweepOptions{}
	cmd := command("sweep", "sweep [TARGET]", "Run every pattern of a profile and print the IOPS matrix", maxArgs(1), o.runE(func(ctx context.Context, target string) error { return runSweep(ctx, o, g, target) }))
	o.AddFlags(cmd.Flags())
	return cmd
}

func (o *sweepOptions) prepare(g *globalOptions, target string) (*sweepSetup, error) {
	if err := o.capOptions.precheck(); err != nil {
		return nil, err
	}
	if o.Frame && o.Format != "json" {
		return nil, usagef("--frame: only applies with --format json")
	}
	if err := o.rateOptions.check(o.given, o.Resume != ""); err != nil {
		return nil, err
	}
	if err := o.sentinels.check(o.given); err != nil {
		return nil, err
	}
	setup := &sweepSetup{target: target}
	if o.Resume == "" && o.given("rates") {
		rates, p, err := o.rateOptions.plan(o.Profile, o.given("pattern"))
		if err != nil {
			return nil, err
		}
		setup.rates, setup.profile = rates, p
	}
	if o.Resume != "" {
		d, err := results.ReadDocumentFile(o.Resume)
		if err != nil {
			return nil, usagef("--resume: %w", err)
		}
		setup.doc = d
		if err := o.adoptSettings(d, setup); err != nil {
			return nil, err
		}
		setup.out = o.Resume
	}
	if err := o.profileOptions.prepare(g, setup, "iomatrix-%s-%s.json", true); err != nil {
		return nil, err
	}
	if err := o.content.apply(o.given, setup); err != nil {
		return nil, err
	}
	if o.Precondition < 0 {
		return nil, usagef("--precondition: %s must not be negative", o.Precondition)
	}
	if d := setup.doc; d != nil {
		// A resumed sweep's cells all run in one ring mode.
		if asked := strings.Join(setup.opts.Ring.Words(), ","); asked != d.Settings.EngineOptions {
			return nil, usagef("--resume: the file's cells ran with engine options %q, these flags ask %q: give the file's (--poll, --sqpoll and their settings)",
				d.Settings.EngineOptions, asked)
		}
	}
	var err error
	if setup.sweep, err = session.NewSweep(setup.profile, setup.rates, setup.doc); err != nil {
		return nil, fmt.Errorf("--resume: %w", err)
	}
	o.openLoop = setup.sweep.OpenLoop()
	return setup, nil
}

// adoptSettings takes the sweep's settings from the results file being
// resumed, refusing flags that contradict it (session.Resume): a sweep
// whose cells were measured differently would be a matrix of
// incomparable numbers.
func (o *sweepOptions) adoptSettings(d *results.Document, setup *sweepSetup) error {
	a := session.Asked{Target: setup.target, Auto: o.given("runtime") && o.Auto, Cap: o.limit, CapText: o.Cap, Cgroup: o.Cgroup,
		RateSweep: o.rateOptions.asked(o.given)}
	if o.given("profile") {
		p, err := profiles.Load(o.Profile)
		if err != nil {
			return usagef("--profile: %w", err)
		}
		a.Profile = p
	}
	if o.given("runtime") && !o.Auto {
		a.Runtime = &o.Runtime
	}
	a.MinRuntime, a.MaxRuntime, a.Ramp = given(o.given("min-runtime"), &o.MinRuntime), given(o.given("max-runtime"), &o.MaxRuntime), given(o.given("ramp"), &o.Ramp)
	if o.given("precision") {
		pct, err := units.ParsePercent(o.Precision)
		if err != nil {
			pct = math.NaN() // differs from any file's
		}
		a.Precision = new(pct / 100)
	}
	if o.given("size") {
		size, err := o.size()
		if err != nil {
			return err
		}
		a.Size = &size
	}
	r, err := session.Resume(d, a)
	var c *session.Conflict
	if o.given("out") && !sameFile(o.Out, o.Resume) && (err == nil || errors.As(err, &c) && (c.Setting == "cap" || c.Setting == "cgroup")) {
		return usagef("--out: a resumed sweep is saved to the file it resumes (%s)", o.Resume)
	}
	if err != nil {
		return resumeError(err)
	}
	if o.given("keep-merges") && o.KeepMerges != d.Settings.KeepMerges {
		return usagef("--keep-merges: the file's cells ran with the disk's request merging %s: resume it as they ran", mergesWord(d.Settings.KeepMerges))
	}
	o.KeepMerges = d.Settings.KeepMerges
	setup.target, setup.profile, setup.rates = r.Target, r.Profile, r.RateSweep
	o.Runtime, o.Ramp = r.Runtime, r.Ramp // not the profile's defaults: the file's
	if f := r.Auto; f != nil {
		o.Auto, o.MinRuntime, o.MaxRuntime = true, time.Duration(f.MinRuntimeNS), time.Duration(f.MaxRuntimeNS)
		o.Precision = units.FormatPercent(f.PrecisionPct)
	}
	if r.Join != "" {
		o.Cgroup = r.Join
	} else if r.Cap != nil {
		o.Cap = r.CapSpec // parsed by precheck, as if given
	}
	return nil
}

// mergesRequest asks what the sweep of profile on plan's target does to
// its disk's request merging.
func (o *sweepOptions) mergesRequest(g *globalOptions, plan *target.Plan, profile *profiles.Profile) session.MergesRequest {
	return session.MergesRequest{Sys: g.sys, Plan: plan, Profile: profile, Keep: o.KeepMerges, StateDir: session.DefaultMergesState, Notice: g.notice}
}

// mergesWord says how a file's cells left the disk's request merging.
func mergesWord(kept bool) string {
	if kept {
		return "kept as it was"
	}
	return "set as the profile asks"
}

// given is p when the flag was given, else nil.
func given[T any](set bool, p *T) *T {
	if set {
		return p
	}
	return nil
}

// resumeError words a setting given on resuming that differs from the
// file's in the flags' terms (the target is no flag, and names the
// profile by its name).
func resumeError(err error) error {
	var c *session.Conflict
	switch {
	case !errors.As(err, &c) || c.Setting == "target" || c.Setting == "profile":
		return usagef("--resume: %w", err)
	case c.File == "":
		return usagef("--resume: the file was measured without a cap; resume it without --cap/--cgroup")
	}
	return usagef("--resume: --%w", err)
}

func runSweep(ctx context.Context, o *sweepOptions, g *globalOptions, target string) error {
	setup, err := o.prepare(g, target)
	if err != nil {
		return err
	}
	// The sentinel's pattern is held against the target with the
	// profile's.
	pats := append(slices.Clone(setup.profile.Patterns), o.sentinels.patternOf(setup))
	plan, cp, err := o.resolve(g, setup.target, setup.size, pats, o.Precondition > 0, &setup.opts)
	if err != nil {
		return err
	}
	if o.merges, err = session.PlanMerges(o.mergesRequest(g, plan, setup.profile)); err != nil {
		return err
	}
	total, todo := setup.sweep.Count()
	estimate := time.Duration(todo) * (setup.opts.Runtime + setup.opts.Ramp)
	sentinels, watching, err := o.sentinels.plan(o.given, setup, estimate)
	if err != nil {
		return err
	}
	g.notice(progress.Plan(setup.profile.Name, todo, total, setup.opts, estimate))
	if todo > 0 {
		g.notice(watching)
	}
	g.notice("results: " + setup.out)
	sess, err := startSession(ctx, g, &o.measureOptions, cp, plan, results.AnyWrites(pats))
	if err != nil {
		return err
	}
	defer sess.Close()
	doc := setup.doc
	if doc == nil {
		doc = setup.newDocument(sess)
		doc.Settings.KeepMerges = o.KeepMerges && len(setup.profile.Nomerges) > 0
	}
	adoptSentinels(doc, sentinels)
	if err := sess.StartSaving(doc, setup.out); err != nil {
		return err
	}
	prog := newSweepProgress(g, total, total-todo, setup.opts)
	if o.Frame {
		prog.Frames = g.stdout
	}
	if o.Precondition > 0 && todo > 0 {
		if err := sess.Precondition(ctx, setup.opts, o.Precondition, prog); err != nil {
			return err
		}
	}
	loop := session.Loop{Runner: sess.Runner(), Options: setup.opts, Display: prog, Doc: doc, Out: setup.out, KeepGoing: o.ContinueOnError, Notice: g.notice}
	if sentinels != nil {
		loop.Watch = &session.Watch{Display: prog}
	}
	failed, runErr := setup.sweep.Run(ctx, &loop)
	complete, err := loop.Finish(ctx, runErr)
	if err != nil {
		return err
	}
	switch {
	case o.Frame:
		err = results.WriteDocumentFrames(g.stdout, doc)
	case o.Format == "json":
		err = report.WriteJSON(g.stdout, doc)
	default:
		err = report.WriteSweepText(g.stdout, doc, setup.out, complete)
	}
	var stopped *session.DriftStopped
	switch {
	case err != nil:
		return err
	case errors.As(runErr, &stopped):
		return &commandError{Code: exitInconclusive, Err: fmt.Errorf("%w; the sweep stopped there (--on-drift stop), its results saved: continue it with --resume %s",
			runErr, setup.out)}
	case runErr != nil:
		return runErr
	case ctx.Err() != nil:
		return ctx.Err()
	case failed > 0:
		return fmt.Errorf("%d of %s failed with I/O errors (recorded in %s)", failed, units.Count(todo, "pattern"), setup.out)
	}
	return nil
}
