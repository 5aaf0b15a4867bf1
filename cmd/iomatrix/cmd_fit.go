package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/answers/fit/rehearse"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// fitOptions are the flags of `iomatrix fit`: Target is --rehearse, and
// the flags after it only apply with it.
type fitOptions struct {
	Need, Workload, Format             string
	Target, Arrival, Out, Engine, Size string
	WithCaps, Force, AllowDestructive  bool
	Runtime, Ramp                      time.Duration
	Seed                               uint64
	Flat                               bool
	Speed                              float64
}

func (o *fitOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Need, "need", "", "one workload: read=N,write=N,bs=SIZE[,qd=N][,p99<DURATION]")
	f.StringVar(&o.Workload, "workload", "", "a YAML file of systems to consolidate (see above)")
	formatVar(f, &o.Format, []string{"text", "json"}, "text or json")
	f.StringVar(&o.Target, "rehearse", "", "run the workload's systems at once on this `TARGET` (a file or block device), each an open-loop stream at its own rates, and judge each on its response time")
	f.BoolVar(&o.WithCaps, "with-caps", false, "with --rehearse: run each system in a cgroup of its own under the cap the lookup proposes (needs root)")
	durationVar(f, &o.Runtime, "runtime", 0, "with --rehearse: the measured window (a bare number is seconds; default: long enough for every system's percentile bound to rest on enough I/Os, at least 10s)")
	durationVar(f, &o.Ramp, "ramp", 2*time.Second, "with --rehearse: warm-up before the window, excluded from every figure")
	choiceVar(f, &o.Arrival, "arrival", results.ArrivalUniform, []string{results.ArrivalUniform, results.ArrivalPoisson}, "with --rehearse: how each system's I/Os arrive: uniform (evenly spaced) or poisson")
	f.StringVarP(&o.Out, "out", "o", "", "with --rehearse: the rehearsal's results file, saved atomically (default: iomatrix-rehearsal-TIMESTAMP.json)")
	f.Uint64Var(&o.Seed, "seed", 0, "with --rehearse: seed for offsets and arrivals, counted up system by system (default: random, recorded)")
	f.StringVar(&o.Engine, "engine", "auto", "with --rehearse: I/O engine: uring, psync, or auto")
	f.StringVar(&o.Size, "size", "", "with --rehearse: size of a file target, as for sweep (default: a new file gets 16GiB, an existing one keeps its size)")
	f.BoolVar(&o.Force, "force", false, "with --rehearse: lay out an existing file that iomatrix did not create, destroying its contents")
	f.BoolVar(&o.AllowDestructive, "allow-destructive", false, "with --rehearse: let systems that write do so on a block device, destroying its data")
	f.BoolVar(&o.Flat, "flat", false, "with --rehearse: run a version 2 workload's systems at their flat rates and block size, without their observed timeline, size mix and durable writes")
	f.Float64Var(&o.Speed, "speed", 1, "with --rehearse: replay the observed timelines this many times faster (10: an hour in six minutes), at the observed rates")
	forceFlag(f, "--out file")
}

func newFitCommand(g *globalOptions) *cobra.Command {
	o := &fitOptions{}
	run := func(cmd *cobra.Command, args []string) error {
		return runFit(cmd.Context(), g, o, cmd.Flags(), args[0])
	}
	cmd := command("fit", "fit RESULTS.json (--need SPEC | --workload FILE [--rehearse TARGET [--with-caps]])",
		"Does this volume carry this workload? A verdict from measured cells, or from a rehearsal", exactArgs(1), run)
	o.AddFlags(cmd.Flags())
	return cmd
}

func runFit(ctx context.Context, g *globalOptions, o *fitOptions, f *pflag.FlagSet, path string) error {
	if err := o.check(f); err != nil {
		return err
	}
	need, work, err := fit.ReadNeed(o.Need, o.Workload)
	if err != nil {
		return err
	}
	doc, v, err := fit.JudgeFile(path, need)
	if err != nil {
		return err
	}
	var a fit.Answer
	var reh *results.Document
	if o.Target == "" {
		a = fit.NewAnswer(doc, v, work)
	} else if a, reh, err = o.rehearse(ctx, g, f, path, doc, v, *work); err != nil {
		return err
	}
	if err := fit.Write(g.stdout, o.Format, v, a, reh); err != nil {
		return err
	}
	if err := a.Failure(); err != nil {
		if errors.Is(err, fit.ErrInconclusive) {
			return &commandError{Code: exitInconclusive, Err: err}
		}
		return &commandError{Code: exitFailure, Err: err}
	}
	return nil
}

// check refuses, before anything is read, --need with --workload or
// neither, a rehearsal of a single need, and a rehearsal's flag without
// --rehearse.
func (o *fitOptions) check(f *pflag.FlagSet) error {
	switch {
	case (o.Need == "") == (o.Workload == ""):
		return usagef("--need or --workload: give one of them")
	case o.Target != "" && o.Need != "":
		return usagef("--rehearse: rehearses a workload file's systems: give --workload FILE, not --need")
	}
	for _, name := range []string{"with-caps", "runtime", "ramp", "arrival", "out", "seed", "engine", "size", "force", "allow-destructive", "flat", "speed"} {
		if o.Target == "" && f.Changed(name) {
			return usagef("--%s: only applies with --rehearse TARGET", name)
		}
	}
	return nil
}

// rehearse runs work's systems at once on --rehearse's target, every
// flag checked before any I/O (rehearse.Plan), and returns the lookup's
// answer with the rehearsal's verdicts, and the rehearsal's document.
func (o *fitOptions) rehearse(ctx context.Context, g *globalOptions, f *pflag.FlagSet, lookup string, doc *results.Document, v fit.Verdict, work fit.Workload) (fit.Answer, *results.Document, error) {
	engine, err := engineName(o.Engine)
	if err != nil {
		return fit.Answer{}, nil, err
	}
	size, err := sizeFlag(o.Size, f.Changed("size"))
	if err != nil {
		return fit.Answer{}, nil, err
	}
	if f.Changed("speed") && (o.Flat || work.Version < fit.WorkloadV2) {
		return fit.Answer{}, nil, usagef("--speed: replays observed timelines, which only a version 2 workload file without --flat has")
	}
	line := newLiveLine(g)
	defer line.Done()
	obs := &rehearse.ObservationSeries{WorkloadFile: o.Workload}
	c, err := rehearse.Plan(rehearse.Request{Sys: g.sys, Target: o.Target, Size: size, Force: o.Force, AllowDestructive: o.AllowDestructive,
		Workload: work, WorkloadFile: o.Workload, LookupFile: lookup, Lookup: v, LookupDoc: doc, Arrival: o.Arrival, WithCaps: o.WithCaps, Out: o.Out,
		Options: iotest.Options{Runtime: o.Runtime, Ramp: o.Ramp, Seed: o.Seed, Engine: engine}, DefaultWindow: !f.Changed("runtime"), RandomSeed: !f.Changed("seed"),
		Shape:  rehearse.ShapeOptions{Flat: o.Flat, Speed: o.Speed, Series: obs.Find},
		Notice: func(s string) { line.Done(); g.notice(s) }, Layout: line.Layout, ChildStderr: unwrapped(g.stderr)})
	if err != nil {
		return fit.Answer{}, nil, rehearseError(engine, err)
	}
	// Plan named the file, and read the timelines' observations: held to
	// the output rule as --out is (checkFiles).
	files := g.files
	if o.Out == "" {
		files = files.withOutput("--out", c.Out, "")
	}
	for _, path := range obs.Files {
		files = files.withInput("--workload's timeline", path)
	}
	if o.Out == "" || len(obs.Files) > 0 {
		if err := files.check(); err != nil {
			return fit.Answer{}, nil, err
		}
	}
	if o.WithCaps && c.Caps == nil {
		g.notice("--with-caps: the lookup proposes no caps (the sum does not fit its cell): rehearsing the systems uncapped")
	}
	return rehearse.Run(ctx, c)
}

// rehearseError names --rehearse as the flag of a target that cannot
// hold the systems' streams, and --engine as that of an engine that
// cannot run.
func rehearseError(engine string, err error) error {
	var target *fault.InputError
	if errors.As(err, &target) && target.Option == "target" {
		return usagef("--rehearse %w", target.Err)
	}
	return engineError(engine, err)
}
