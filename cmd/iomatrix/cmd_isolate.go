package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/isolate"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

type isolateOptions struct {
	measureOptions
	Victim       string
	Aggressor    string
	MinIsolation string
	Format       string
}

func newIsolateCommand(g *globalOptions) *cobra.Command {
	o := &isolateOptions{}
	cmd := &cobra.Command{
		Use:     "isolate TARGET --cap LIMITS",
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
	return cmd
}

func (o *isolateOptions) patterns() (victim, aggressor results.Pattern, err error) {
	for _, x := range []struct {
		flag, spec string
		into       *results.Pattern
	}{{"--victim", o.Victim, &victim}, {"--aggressor", o.Aggressor, &aggressor}} {
		ps, err := iotest.ParsePatternSpec(x.spec)
		if err != nil {
			return victim, aggressor, usagef("%s %w", x.flag, err)
		}
		*x.into = ps.Pattern
	}
	return victim, aggressor, nil
}

func runIsolate(ctx context.Context, g *globalOptions, o *isolateOptions, target string) error {
	switch {
	case o.Cap == "" && o.Cgroup == "":
		return usagef("--cap: required: the limits to put on the aggressor (e.g. --cap wiops=500)")
	case o.Cgroup != "":
		return usagef("--cgroup: isolate caps the aggressor in a fresh cgroup of its own: give --cap")
	case o.Auto:
		return usagef("--runtime: auto is not for isolate: the victim and the aggressor must share one fixed window")
	}
	if o.Format != "text" && o.Format != "json" && o.Format != "html" {
		return usagef("--format: %q is not one of text, json, html", o.Format)
	}
	minIso, err := parsePercentFlag("--min-isolation", o.MinIsolation)
	if err != nil {
		return err
	}
	victim, aggressor, err := o.patterns()
	if err != nil {
		return err
	}
	if err := o.capOptions.precheck(); err != nil {
		return err
	}
	opts, err := o.options(g)
	if err != nil {
		return err
	}
	size, err := o.size()
	if err != nil {
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
	switch o.Format {
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
