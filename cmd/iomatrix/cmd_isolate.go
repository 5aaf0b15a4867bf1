package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/answers/isolate"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

type isolateOptions struct {
	measureOptions
	Victim       string
	Aggressor    string
	MinIsolation string
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
			return runIsolate(cmd.Context(), g, o, args[0])
		},
	}
	f := cmd.Flags()
	o.measureOptions.AddFlags(f)
	o.Runtime = 30 * time.Second
	f.Lookup("runtime").DefValue = "30s"
	f.StringVar(&o.Victim, "victim", "randread:4k:1", "the victim pattern, RW:BS:QD[:RWMIX[:JOBS]]")
	f.StringVar(&o.Aggressor, "aggressor", "randwrite:16k:32", "the aggressor pattern, capped in phase 3")
	f.StringVar(&o.MinIsolation, "min-isolation", "90%", "the isolation (victim IOPS beside the capped aggressor ÷ alone) that passes")
	f.StringVar(&o.Format, "format", "text", "text, json or html")
	f.StringVar(&o.Control, "control", "cap", "how the aggressor is held: cap (io.max or blkio throttle, --cap) or iocost (the kernel's proportional controller, --weight)")
	f.StringVar(&o.Weight, "weight", "victim=500,aggressor=100", "with --control iocost: the io.weight of each, 1–10000")
	f.IntVar(&o.IOMaxTries, "iomax-tries", isolate.DefaultSearches, "with --control iocost and no --cap: the io.max phases the search for the cap that protects the victim as well may run")
	f.StringVar(&o.iocost.CgroupFS, "cgroupfs", cgroup.DefaultRoot, "with --control iocost: where the cgroup2 root is mounted")
	f.StringVar(&o.iocost.SysFS, "sysfs", "/sys", "with --control iocost: where sysfs is mounted")
	return cmd
}

func (o *isolateOptions) patterns() (victim, aggressor results.Pattern, err error) {
	for _, x := range []struct {
		flag, spec string
		into       *results.Pattern
	}{{"--victim", o.Victim, &victim}, {"--aggressor", o.Aggressor, &aggressor}} {
		ps, err := pattern.ParseSpec(x.spec)
		if err != nil {
			return victim, aggressor, usagef("%s %w", x.flag, err)
		}
		*x.into = ps.Pattern
	}
	return victim, aggressor, nil
}

// isolateInput is what every control takes from the flags.
type isolateInput struct {
	minIso            float64
	victim, aggressor results.Pattern
	opts              iotest.Options
	size              int64
}

// common checks the flags every control takes: the window, the format,
// the pass mark, the patterns, the engine options and the size.
func (o *isolateOptions) common(g *globalOptions) (in isolateInput, err error) {
	if o.Auto {
		return in, usagef("--runtime: auto is not for isolate: the victim and the aggressor must share one fixed window")
	}
	if o.Format != "text" && o.Format != "json" && o.Format != "html" {
		return in, usagef("--format: %q is not one of text, json, html", o.Format)
	}
	if in.minIso, err = parsePercentFlag("--min-isolation", o.MinIsolation); err != nil {
		return in, err
	}
	if in.victim, in.aggressor, err = o.patterns(); err != nil {
		return in, err
	}
	if in.opts, err = o.options(g); err != nil {
		return in, err
	}
	in.size, err = o.size()
	return in, err
}

func runIsolate(ctx context.Context, g *globalOptions, o *isolateOptions, target string) error {
	switch o.Control {
	case "cap":
	case "iocost":
		return runIsolateIOCost(ctx, g, o, target)
	default:
		return usagef("--control: %q is not one of cap, iocost", o.Control)
	}
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
	minIso, victim, aggressor, opts, size := in.minIso, in.victim, in.aggressor, in.opts, in.size
	if err := o.capOptions.precheck(); err != nil {
		return err
	}
	// Under the cap (required), the capped phase's window is aligned to
	// the throttle, and the same for all three.
	plan, cp, err := o.resolve(g, target, size, []results.Pattern{victim, aggressor}, false, &opts)
	if err != nil {
		return err
	}

	// The capped child opens the target for writing only when a pattern
	// writes: a read-only pair on a block device needs no
	// --allow-destructive, which the parent's plan did not ask for either.
	sess, err := startSession(ctx, g, &o.measureOptions, cp, plan, results.AnyWrites([]results.Pattern{victim, aggressor}))
	if err != nil {
		return err
	}
	defer sess.Close()
	rep, err := isolate.Run(ctx, isolate.Config{Victim: victim, Aggressor: aggressor, Options: opts, MinIsolation: minIso, Session: sess, Notice: g.notice})
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
