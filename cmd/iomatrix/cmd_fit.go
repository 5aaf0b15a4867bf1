package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/answers/fit/rehearse"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

type fitOptions struct {
	Need, Workload, Format string
	rehearseOptions
}

// rehearseOptions are the flags of `fit --rehearse`.
type rehearseOptions struct {
	Target, Arrival, Out, Engine, Size string
	WithCaps, Force, AllowDestructive  bool
	Runtime, Ramp                      time.Duration
	Seed                               uint64

	set map[string]bool // the flags given, by name
}

// rehearseFlags are the flags that only apply with --rehearse.
var rehearseFlags = []string{"with-caps", "runtime", "ramp", "arrival", "out", "seed", "engine", "size", "force", "allow-destructive"}

func (o *rehearseOptions) AddFlags(f *pflag.FlagSet) {
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
}

func newFitCommand(g *globalOptions) *cobra.Command {
	o := &fitOptions{}
	cmd := &cobra.Command{
		Use:     "fit RESULTS.json (--need SPEC | --workload FILE [--rehearse TARGET [--with-caps]])",
		Short:   "Does this volume carry this workload? A verdict from measured cells, or from a rehearsal",
		Long:    longHelp("fit"),
		Example: examples("fit"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.set = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
			return runFit(cmd.Context(), g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Need, "need", "", "one workload: read=N,write=N,bs=SIZE[,qd=N][,p99<DURATION]")
	f.StringVar(&o.Workload, "workload", "", "a YAML file of systems to consolidate (see above)")
	formatVar(f, &o.Format, []string{"text", "json"}, "text or json")
	o.rehearseOptions.AddFlags(f)
	return cmd
}

func runFit(ctx context.Context, g *globalOptions, o *fitOptions, path string) error {
	if (o.Need == "") == (o.Workload == "") {
		return usagef("--need or --workload: give one of them")
	}
	if err := o.rehearseOptions.check(o.Need != ""); err != nil {
		return err
	}
	need, work, err := o.need()
	if err != nil {
		return err
	}
	doc, err := loadResults(path)
	if err != nil {
		return err
	}
	v, err := fit.Judge(doc, need)
	if errors.Is(err, fit.ErrCannotJudge) {
		return usagef("%s: %w", path, err)
	}
	if err != nil {
		return err
	}
	if o.Target != "" {
		return runRehearsal(ctx, g, o, path, doc, *work, v)
	}
	if err := writeAnswer(g, o.Format, v, fit.NewAnswer(doc, v, work)); err != nil {
		return err
	}
	if !v.Fits {
		return &commandError{Code: exitFailure, Err: fmt.Errorf("does not fit: %s", v.Why)}
	}
	return nil
}

func writeAnswer(g *globalOptions, format string, v fit.Verdict, a fit.Answer) error {
	if format == "json" {
		return a.WriteJSON(g.stdout)
	}
	return fit.WriteText(g.stdout, v, a)
}

// check refuses, before anything is read, a rehearsal flag without
// --rehearse, a rehearsal of a single need, and values that cannot be.
func (o *rehearseOptions) check(single bool) error {
	switch {
	case o.Target == "":
		for _, name := range rehearseFlags {
			if o.set[name] {
				return usagef("--%s: only applies with --rehearse TARGET", name)
			}
		}
	case single:
		return usagef("--rehearse: rehearses a workload file's systems: give --workload FILE, not --need")
	case o.set["runtime"] && o.Runtime <= 0:
		return usagef("--runtime: %s must be positive", o.Runtime)
	case o.Ramp < 0:
		return usagef("--ramp: %s must not be negative", o.Ramp)
	case o.WithCaps && os.Geteuid() != 0:
		return fault.Privilege("--with-caps needs root or CAP_SYS_ADMIN (cgroups are created through cgroupfs)")
	case o.Out != "":
		return checkOutPath("--out", o.Out)
	}
	return nil
}

// runRehearsal plans the rehearsal of work on --rehearse's target (the
// target, the streams, the caps: all checked before any I/O), runs it,
// and renders the lookup's answer with the rehearsal's.
func runRehearsal(ctx context.Context, g *globalOptions, o *fitOptions, lookup string, doc *results.Document, work fit.Workload, v fit.Verdict) error {
	ro := &o.rehearseOptions
	engine, err := engineName(ro.Engine)
	if err != nil {
		return err
	}
	size, err := sizeFlag(ro.Size, ro.set["size"])
	if err != nil {
		return err
	}
	plan, c, err := rehearse.Plan(rehearse.Request{Sys: g.sys, Target: ro.Target, Size: size, Force: ro.Force, AllowDestructive: ro.AllowDestructive,
		Workload: work, WorkloadFile: o.Workload, LookupFile: lookup, Lookup: v, LookupDevice: doc.Target.Device, Arrival: ro.Arrival, WithCaps: ro.WithCaps,
		Options: iotest.Options{Runtime: ro.Runtime, Ramp: ro.Ramp, Seed: ro.Seed, Engine: engine}, RandomSeed: !ro.set["seed"], Out: ro.Out, Notice: g.notice})
	if err != nil {
		return rehearseError(engine, err)
	}
	if ro.WithCaps && c.Caps == nil {
		g.notice("--with-caps: the lookup proposes no caps (the sum does not fit its cell): rehearsing the systems uncapped")
	}
	if c.Session, err = openSession(ctx, g, &measureOptions{AllowDestructive: ro.AllowDestructive}, nil, plan, results.AnyWrites(c.Patterns)); err != nil {
		return err
	}
	defer c.Session.Close()
	reh, err := rehearse.Run(ctx, c)
	if err != nil {
		return err
	}
	answer := fit.NewAnswer(doc, v, &work)
	answer.Rehearsal = reh.Rehearsal
	if err := writeAnswer(g, o.Format, v, answer); err != nil {
		return err
	}
	if o.Format == "text" {
		fmt.Fprintln(g.stdout)
		if err := report.WriteRehearsal(g.stdout, reh); err != nil {
			return err
		}
	}
	for _, sys := range reh.Rehearsal.Systems {
		if !sys.Fits {
			return &commandError{Code: exitFailure, Err: fmt.Errorf("does not fit, by the rehearsal: %s: %s", sys.Name, sys.Why)}
		}
	}
	return nil
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

// need is what --need or --workload asks for; work is nil for --need.
func (o *fitOptions) need() (fit.Need, *fit.Workload, error) {
	if o.Need != "" {
		need, err := fit.ParseNeed(o.Need)
		if err != nil {
			return fit.Need{}, nil, usagef("--need: %w", err)
		}
		return need, nil, nil
	}
	w, err := fit.ReadWorkload(o.Workload)
	if err != nil {
		return fit.Need{}, nil, err
	}
	return w.Sum(), &w, nil
}
