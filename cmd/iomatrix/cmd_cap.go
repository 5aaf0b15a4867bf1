package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/answers/capverify"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

func newCapCommand(g *globalOptions) *cobra.Command {
	return group("cap", "Verify, list and clean up cgroup I/O caps (and verify a volume's provisioned limits)", newCapVerifyCommand(g), newCapShowCommand(g), newCapCleanupCommand(g))
}

// verifyOptions are the flags of `iomatrix cap verify`.
type verifyOptions struct {
	profileOptions
	Tolerance   float64 // a fraction
	Baseline    string
	Provisioned string

	// provisioned is --provisioned, parsed once by checkProvisioned.
	provisioned *capverify.Limits
}

func newCapVerifyCommand(g *globalOptions) *cobra.Command {
	o := &verifyOptions{}
	cmd := command("cap-verify", "verify [TARGET] --cap riops=N,... | --cgroup PATH | --provisioned iops=N,...", "Check that a cgroup cap, or a volume's provisioned limits, hold, cell by cell",
		maxArgs(1), o.runE(func(ctx context.Context, target string) error { return runVerify(ctx, o, g, target) }))
	f := cmd.Flags()
	o.profileOptions.AddFlags(f, "quick", "iomatrix-verify-TIMESTAMP.json")
	formatVar(f, &o.Format, []string{"text", "json"}, "output on stdout: text (verdict tables) or json (one verdict document)")
	fractionVar(f, &o.Tolerance, "tolerance", "5%", "allowed deviation of the measured IOPS from the expected")
	f.StringVar(&o.Baseline, "baseline", "", "uncapped results of the same patterns (a results file); default: measure them first")
	f.StringVar(&o.Provisioned, "provisioned", "", "judge the volume against the limits its provider sells it with, no cgroup: riops=N,wiops=N,rbps=SIZE,wbps=SIZE, "+
		"and iops=N,bps=SIZE for limits on reads and writes together (any subset; see docs/caps.md, \"Provisioned limits\")")
	forceFlag(f, "--out file and the baseline saved beside it (OUT-baseline.json)")
	return cmd
}

func runVerify(ctx context.Context, o *verifyOptions, g *globalOptions, target string) error {
	c, setup, err := o.prepareVerify(g, target)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "iomatrix: cap verify %s on %s: %s, results: %s\n", setup.profile.Name, setup.target, units.Count(len(setup.todo), "pattern"), setup.out)
	sess, err := openSession(ctx, g, &o.measureOptions, c.cp, c.plan, results.AnyWrites(setup.todo))
	if err != nil {
		return err
	}
	defer sess.Close()
	c.Session = sess
	c.NewDocument = func() *results.Document { return setup.newDocument(sess) }
	doc, v, runErr := capverify.Measure(ctx, c.Config)
	if doc == nil {
		return runErr
	}
	if o.Format == "json" {
		err = report.WriteJSON(g.stdout, v)
	} else {
		err = report.WriteCapCheck(g.stdout, doc, v)
	}
	switch {
	case err != nil:
		return err
	case runErr != nil:
		return runErr
	case v.Failed > 0:
		return &commandError{Code: exitFailure, Err: errors.New(v.Summary)}
	case v.Above > 0 || v.Inconclusive > 0:
		// Above a volume's limits is not judged either (capverify.Verdict).
		return &commandError{Code: exitInconclusive, Err: errors.New(v.Summary)}
	}
	return nil
}

// verifyPlan is cap verify's measurement as decided before any I/O.
type verifyPlan struct {
	capverify.Config
	plan *target.Plan
	cp   *session.CapPlan
}

// prepareVerify checks every flag, the target, the cgroup tree and a
// given baseline, touching nothing.
func (o *verifyOptions) prepareVerify(g *globalOptions, path string) (*verifyPlan, *sweepSetup, error) {
	if err := o.checkProvisioned(); err != nil {
		return nil, nil, err
	}
	if err := o.capOptions.precheck(); err != nil {
		return nil, nil, err
	}
	if !o.capOptions.enabled() && o.provisioned == nil {
		return nil, nil, usagef("cap verify needs --cap riops=N,..., --cgroup PATH or --provisioned iops=N,...")
	}
	setup := &sweepSetup{target: path}
	if err := o.prepare(g, setup, "iomatrix-verify-%[2]s.json", false); err != nil {
		return nil, nil, err
	}
	if len(setup.profile.Loads) > 0 {
		// Its loads would be dropped in silence: the cap model judges
		// closed-loop cells only.
		return nil, nil, usagef("--profile: %s has loads (open-loop runs), which cap verify does not judge: give a profile of patterns only", setup.profile.Name)
	}
	var base *results.Document
	if o.Baseline != "" {
		// Read before the plan, whose notices would precede its refusal.
		var err error
		if base, err = results.ReadResultsFile(o.Baseline); err != nil {
			return nil, nil, err
		}
	}
	c := &verifyPlan{Config: capverify.Config{BaselineFile: o.Baseline, Out: setup.out, TolerancePct: 100 * o.Tolerance, Sys: g.sys,
		Provisioned: o.provisioned, Display: func() session.Display { return newSweepProgress(g, len(setup.todo), 0, setup.opts) }, Notice: g.notice}}
	if out := capverify.BaselineOut(setup.out); o.Baseline == "" && o.provisioned == nil {
		// The uncapped cells are saved beside the results: an output too.
		if err := g.files.withOutput("--out", out, fmt.Sprintf("reuse it with --baseline %s, ", out)).check(); err != nil {
			return nil, nil, err
		}
		c.BaselineFile = out
	}
	asked := setup.opts // before the window is aligned to the throttle
	var err error
	if c.plan, c.cp, err = o.resolve(g, setup.target, setup.size, setup.profile.Patterns, false, &setup.opts); err != nil {
		return nil, nil, err
	}
	c.Patterns, c.Options = setup.todo, setup.opts
	if base != nil {
		c.Baseline, err = session.CheckBaseline(base, session.BaselineFor{Plan: c.plan, Asked: asked, Options: setup.opts, Patterns: setup.todo})
		if err != nil {
			return nil, nil, usagef("--baseline %s: %w", o.Baseline, err)
		}
	}
	return c, setup, nil
}

// checkProvisioned reads --provisioned, the one place its string is
// parsed, and refuses what cannot go with it: a cgroup's cap (the limits
// are the volume's own) and a baseline (a volume has no figures without
// its limits).
func (o *verifyOptions) checkProvisioned() error {
	if !o.given("provisioned") || o.provisioned != nil {
		return nil
	}
	switch {
	case o.Cap != "":
		return usagef("--provisioned and --cap together: give one (a volume's own limits, or a cgroup's cap)")
	case o.Cgroup != "":
		return usagef("--provisioned and --cgroup together: give one (a volume's own limits, or a cgroup's)")
	case o.Baseline != "":
		return usagef("--provisioned and --baseline together: a volume has no figures without its limits, so it has no uncapped baseline")
	}
	l, err := capverify.ParseProvisioned(o.Provisioned)
	if err != nil {
		return usagef("--provisioned: %w", err)
	}
	o.provisioned = &l
	return nil
}

func newCapShowCommand(g *globalOptions) *cobra.Command {
	var device string
	cmd := command("cap-show", "show [--device PATH]", "List the I/O limits configured on this host", maxArgs(0), func(cmd *cobra.Command, _ []string) error {
		ctrl, err := cgroup.Detect(g.sys, cgroup.DefaultRoot)
		if err != nil {
			return err
		}
		var dev *sysfs.DevNum
		if device != "" {
			d, notice, err := cgroup.ResolveDevice(g.sys, device)
			if err != nil {
				return usagef("--device: %w", err)
			}
			if notice != "" {
				g.notice(notice)
			}
			dev = &d
		}
		list, err := cgroup.Show(ctrl, dev)
		if err != nil {
			return err
		}
		return cgroup.WriteConfigured(g.stdout, ctrl, list)
	})
	cmd.Flags().StringVar(&device, "device", "", "only limits on the device of this path")
	return cmd
}

func newCapCleanupCommand(g *globalOptions) *cobra.Command {
	return command("cap-cleanup", "cleanup", "Remove cgroups left by an iomatrix that was killed", maxArgs(0), func(cmd *cobra.Command, _ []string) error {
		if os.Geteuid() != 0 {
			return fault.Privilege("cap cleanup needs root or CAP_SYS_ADMIN")
		}
		ctrl, err := cgroup.Detect(g.sys, cgroup.DefaultRoot)
		if err != nil {
			return err
		}
		removed, err := cgroup.Cleanup(g.sys, ctrl)
		for _, p := range removed {
			fmt.Fprintf(g.stdout, "removed %s\n", p)
		}
		if err != nil {
			return err
		}
		if len(removed) == 0 {
			fmt.Fprintln(g.stdout, "no leftover iomatrix cgroups")
		}
		return nil
	})
}
