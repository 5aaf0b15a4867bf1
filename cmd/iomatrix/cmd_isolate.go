package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/answers/isolate"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

type isolateOptions struct {
	measureOptions
	Victim       string
	Aggressor    string
	MinIsolation float64
	Format       string
	Control      string
	Weight       string
	IOMaxTries   int
	iocost       iocostHostOptions
}

func newIsolateCommand(g *globalOptions) *cobra.Command {
	o := &isolateOptions{}
	cmd := &cobra.Command{
		Use:     "isolate TARGET (--cap LIMITS | --control iocost)",
		Short:   "Does a cap shield the neighbours? A victim alone, beside an aggressor, beside the capped aggressor",
		Long:    longHelp("isolate"),
		Example: examples("isolate"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.changed(cmd.Flags())
			if o.Control == "iocost" {
				return runIsolateIOCost(cmd.Context(), g, o, args[0])
			}
			return runIsolate(cmd.Context(), g, o, args[0])
		},
	}
	f := cmd.Flags()
	o.measureOptions.AddFlags(f)
	o.Runtime = 30 * time.Second
	f.Lookup("runtime").DefValue = "30s"
	f.StringVar(&o.Victim, "victim", "randread:4k:1", "the victim pattern, RW:BS:QD[:RWMIX[:JOBS]]")
	f.StringVar(&o.Aggressor, "aggressor", "randwrite:16k:32", "the aggressor pattern, capped in phase 3")
	fractionVar(f, &o.MinIsolation, "min-isolation", "90%", "the isolation (victim IOPS beside the capped aggressor ÷ alone) that passes")
	formatVar(f, &o.Format, []string{"text", "json", "html"}, "text, json or html")
	choiceVar(f, &o.Control, "control", "cap", []string{"cap", "iocost"}, "how the aggressor is held: cap (io.max or blkio throttle, --cap) or iocost (the kernel's proportional controller, --weight)")
	f.StringVar(&o.Weight, "weight", "victim=500,aggressor=100", "with --control iocost: the io.weight of each, 1–10000")
	f.IntVar(&o.IOMaxTries, "iomax-tries", isolate.DefaultSearches, "with --control iocost and no --cap: the io.max phases the search for the cap that protects the victim as well may run")
	f.StringVar(&o.iocost.CgroupFS, "cgroupfs", cgroup.DefaultRoot, "with --control iocost: where the cgroup2 root is mounted")
	f.StringVar(&o.iocost.SysFS, "sysfs", sysfs.SysRoot, "with --control iocost: where sysfs is mounted")
	return cmd
}

// isolateInput is what every control takes from the flags.
type isolateInput struct {
	victim, aggressor results.Pattern
	opts              iotest.Options
	size              int64
}

// common checks the flags every control takes: the window, the patterns,
// the engine options and the size.
func (o *isolateOptions) common(g *globalOptions) (in isolateInput, err error) {
	if o.Auto {
		return in, usagef("--runtime: auto is not for isolate: the victim and the aggressor must share one fixed window")
	}
	if in.victim, err = specFlag("--victim", o.Victim); err != nil {
		return in, err
	}
	if in.aggressor, err = specFlag("--aggressor", o.Aggressor); err != nil {
		return in, err
	}
	if in.opts, err = o.options(g); err != nil {
		return in, err
	}
	in.size, err = o.size()
	return in, err
}

// specFlag is the pattern of a flag's RW:BS:QD[:RWMIX[:JOBS]].
func specFlag(flag, spec string) (results.Pattern, error) {
	ps, err := pattern.ParseSpec(spec)
	if err != nil {
		return results.Pattern{}, usagef("%s %w", flag, err)
	}
	return ps.Pattern, nil
}

// start prepares the target and the cgroup of the pair (the cap's, or
// one without limits) and starts the session's child in it.
func (o *isolateOptions) start(ctx context.Context, g *globalOptions, target string, in *isolateInput) (*session.Session, error) {
	pats := []results.Pattern{in.victim, in.aggressor}
	plan, cp, err := o.resolve(g, target, in.size, pats, false, &in.opts)
	if err != nil {
		return nil, err
	}
	// The child opens the target for writing only when a pattern writes:
	// a read-only pair on a block device needs no --allow-destructive,
	// which the parent's plan did not ask for either.
	return startSession(ctx, g, &o.measureOptions, cp, plan, results.AnyWrites(pats))
}

// runIsolate is isolate --control cap (isolate.Run): the capped phase's
// window is aligned to the throttle, and the same for all four.
func runIsolate(ctx context.Context, g *globalOptions, o *isolateOptions, target string) error {
	switch {
	case o.Cap == "" && o.Cgroup == "":
		return usagef("--cap: required: the limits to put on the aggressor (e.g. --cap wiops=500)")
	case o.Cgroup != "":
		return usagef("--cgroup: isolate caps the aggressor in a fresh cgroup of its own: give --cap")
	}
	in, err := o.common(g)
	if err != nil {
		return err
	}
	if err := o.capOptions.precheck(); err != nil {
		return err
	}
	sess, err := o.start(ctx, g, target, &in)
	if err != nil {
		return err
	}
	defer sess.Close()
	rep, err := isolate.Run(ctx, isolate.Config{Victim: in.victim, Aggressor: in.aggressor, Options: in.opts, MinIsolation: o.MinIsolation, Session: sess, Notice: g.notice})
	if err != nil {
		return err
	}
	return writeIsolate(g, o.Format, rep)
}

// runIsolateIOCost is isolate --control iocost (isolate.RunIOCostSession):
// the pair in sibling cgroups at their io.weight, with iocost as set up
// on the target's disk (iocost apply), checked before any I/O.
func runIsolateIOCost(ctx context.Context, g *globalOptions, o *isolateOptions, target string) error {
	switch {
	case o.Cgroup != "":
		return usagef("--cgroup: isolate puts the victim and the aggressor in fresh cgroups of their own")
	case o.IOMaxTries < 1 || o.IOMaxTries > 20:
		return usagef("--iomax-tries: %d: give 1 to 20 phases", o.IOMaxTries)
	}
	in, err := o.common(g)
	if err != nil {
		return err
	}
	c := isolate.IOCostConfig{Victim: in.victim, Aggressor: in.aggressor, MinIsolation: o.MinIsolation, Searches: o.IOMaxTries, Notice: g.notice}
	if c.VictimWeight, c.AggressorWeight, err = isolate.ParseWeights(o.Weight); err != nil {
		return err
	}
	if o.Cap != "" {
		if c.Cap, err = parseCapFlag(o.Cap); err != nil {
			return err
		}
	}
	dev, err := isolate.FindIOCost(o.iocost.sys(), o.iocost.CgroupFS, target)
	var off *isolate.OffError
	if errors.As(err, &off) {
		return usagef("--control iocost: %w: set it up first, from a sweep of the iocost profile: iomatrix iocost apply %s --from RESULTS.json", err, target)
	}
	if err != nil {
		return iocostError(err)
	}
	o.Cap, o.capOptions.limit = "", &cgroup.Limit{} // the session's cgroup is the aggressor's
	sess, err := o.start(ctx, g, target, &in)
	if err != nil {
		return err
	}
	defer sess.Close()
	c.Options = in.opts // with the engine start chose
	rep, err := isolate.RunIOCostSession(ctx, sess, dev, c)
	if err != nil {
		return err
	}
	return writeIsolate(g, o.Format, rep)
}

// writeIsolate prints the report in format, and turns its verdict into
// the exit status: 0 protected, 1 not, 3 inconclusive.
func writeIsolate(g *globalOptions, format string, rep *results.IsolateReport) error {
	var err error
	switch format {
	case "json":
		err = report.WriteJSON(g.stdout, rep)
	case "html":
		err = report.WriteIsolateHTML(g.stdout, rep)
	default:
		err = report.WriteIsolateText(g.stdout, rep)
	}
	if err != nil {
		return err
	}
	switch {
	case rep.Inconclusive:
		return &commandError{Code: exitInconclusive, Err: fmt.Errorf("%s", rep.Verdict)}
	case !rep.Protected:
		return &commandError{Code: exitFailure, Err: fmt.Errorf("%s", rep.Verdict)}
	}
	return nil
}
