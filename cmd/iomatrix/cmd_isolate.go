package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/answers/isolate"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

type isolateOptions struct {
	measureOptions
	Victim, Aggressor string
	MinIsolation      float64
	Format, Control   string
	Weight            string
	IOMaxTries        int
	iocost            iocostHostOptions
}

func newIsolateCommand(g *globalOptions) *cobra.Command {
	o := &isolateOptions{}
	cmd := command("isolate", "isolate TARGET (--cap LIMITS | --control iocost)",
		"Does a cap shield the neighbours? A victim alone, beside an aggressor, beside the capped aggressor", exactArgs(1),
		func(cmd *cobra.Command, args []string) error {
			o.changed(cmd.Flags())
			rep, err := o.run(cmd.Context(), g, args[0])
			if err != nil {
				return err
			}
			return writeIsolate(g, o.Format, rep)
		})
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

// run checks the test asked (isolate.Check) and the measuring flags,
// opens the session on target and runs the test on it.
func (o *isolateOptions) run(ctx context.Context, g *globalOptions, target string) (*results.IsolateReport, error) {
	if o.Control != "iocost" {
		// What only iocost reads would be dropped in silence: the user
		// meant another test than the one that would run.
		for _, name := range []string{"weight", "iomax-tries", "cgroupfs", "sysfs"} {
			if o.given(name) {
				return nil, usagef("--%s: only applies with --control iocost", name)
			}
		}
	}
	t, err := isolate.Check(isolate.Asked{Control: o.Control, Victim: o.Victim, Aggressor: o.Aggressor, Auto: o.Auto, MinIsolation: o.MinIsolation,
		Cap: o.Cap, Cgroup: o.Cgroup, Weights: o.Weight, IOMaxTries: o.IOMaxTries, Sys: o.iocost.sys(), CgroupRoot: o.iocost.CgroupFS, Target: target, Notice: g.notice})
	if err != nil {
		return nil, isolateError(err, target)
	}
	if t.Options, err = o.options(g); err != nil {
		return nil, err
	}
	size, err := o.size()
	if err != nil {
		return nil, err
	}
	if o.Control == "iocost" {
		o.capOptions.limit = &cgroup.Limit{} // the session's cgroup is the aggressor's, without limits
	} else if err := o.capOptions.precheck(); err != nil {
		return nil, err
	}
	pats := []results.Pattern{t.Victim, t.Aggressor}
	plan, cp, err := o.resolve(g, target, size, pats, false, &t.Options)
	if err != nil {
		return nil, err
	}
	// The child opens the target for writing only when a pattern writes:
	// a read-only pair on a block device needs no --allow-destructive,
	// which the parent's plan did not ask for either.
	sess, err := openSession(ctx, g, &o.measureOptions, cp, plan, results.AnyWrites(pats))
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	return t.Run(ctx, sess)
}

// isolateError words the refusals of iocost's disk: one where iocost is
// off says how to set it up.
func isolateError(err error, target string) error {
	var off *isolate.OffError
	var ie *fault.InputError
	switch {
	case errors.As(err, &off):
		return usagef("--control iocost: %w: set it up first, from a sweep of the iocost profile: iomatrix iocost apply %s --from RESULTS.json", err, target)
	case errors.As(err, &ie) && ie.Option == "device":
		return usagef("TARGET %w", ie.Err) // the target's disk: isolate takes no DEVICE
	}
	return iocostError(err)
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
