package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/answers/capverify"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

func newCapCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cap",
		Short: "Verify, list and clean up cgroup I/O caps",
		Long:  longHelp("cap"),
		Args:  unknownCommand,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCapVerifyCommand(g), newCapShowCommand(g), newCapCleanupCommand(g))
	return cmd
}

// verifyOptions are the flags of `iomatrix cap verify`.
type verifyOptions struct {
	profileOptions
	Tolerance string
	Baseline  string
}

func newCapVerifyCommand(g *globalOptions) *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:     "verify [TARGET] --cap riops=N,... | --cgroup PATH",
		Short:   "Check that a cgroup cap holds, cell by cell",
		Long:    longHelp("cap-verify"),
		Example: examples("cap-verify"),
		Args:    maxArgs(1),
		RunE:    o.runE(func(ctx context.Context, target string) error { return runVerify(ctx, o, g, target) }),
	}
	f := cmd.Flags()
	o.profileOptions.AddFlags(f, "quick", "iomatrix-verify-TIMESTAMP.json")
	f.StringVar(&o.Format, "format", "text", "output on stdout: text (verdict tables) or json (one verdict document)")
	f.StringVar(&o.Tolerance, "tolerance", "5%", "allowed deviation of the measured IOPS from the expected")
	f.StringVar(&o.Baseline, "baseline", "", "uncapped results of the same patterns (a results file); default: measure them first")
	return cmd
}

func runVerify(ctx context.Context, o *verifyOptions, g *globalOptions, target string) error {
	vs, err := o.prepareVerify(g, target)
	if err != nil {
		return err
	}
	setup := vs.setup
	fmt.Fprintf(g.stderr, "iomatrix: cap verify %s on %s: %s, results: %s\n", setup.profile.Name, setup.target, units.Count(len(setup.todo), "pattern"), setup.out)
	sess, err := openSession(ctx, g, &o.measureOptions, vs.cp, vs.plan, results.AnyWrites(setup.todo))
	if err != nil {
		return err
	}
	defer sess.Close()
	if vs.baseline == nil {
		vs.baselineFile = baselineOut(setup.out)
		if vs.baseline, err = measureBaseline(ctx, g, setup, sess, vs.baselineFile); err != nil {
			return err
		}
	}
	if err := sess.Start(); err != nil {
		return err
	}
	doc := setup.newDocument(sess)
	fmt.Fprintf(g.stderr, "iomatrix: measuring under %s\n", report.DescribeCap(doc.Cap))
	loop := session.Loop{Runner: sess.Runner(), Options: setup.opts, Display: newSweepProgress(g, len(setup.todo), 0, setup.opts), Doc: doc, Out: setup.out,
		Check: capverify.CellJudge(sysfs.Default(), doc.Cap, vs.tolerance, vs.baseline), Notice: g.notice}
	_, runErr := loop.Run(ctx, setup.todo)
	complete, err := loop.Finish(ctx, runErr)
	if err != nil {
		return err
	}
	v, err := vs.printVerdict(g, o.Format, doc, complete)
	switch {
	case err != nil:
		return err
	case runErr != nil:
		return runErr
	case ctx.Err() != nil:
		return ctx.Err()
	case v.Failed > 0:
		return &commandError{Code: exitFailure, Err: errors.New(v.Summary)}
	case v.Inconclusive > 0:
		return &commandError{Code: exitInconclusive, Err: errors.New(v.Summary)}
	}
	return nil
}

// verifySetup is what cap verify decides before any I/O.
type verifySetup struct {
	setup        *sweepSetup
	plan         *target.Plan
	cp           *session.CapPlan
	tolerance    float64
	baseline     map[string]results.Result // by name; nil: measured first
	baselineFile string
}

// prepareVerify checks every flag, the target, the cgroup tree and a
// given baseline, touching nothing.
func (o *verifyOptions) prepareVerify(g *globalOptions, target string) (*verifySetup, error) {
	if err := o.capOptions.precheck(); err != nil {
		return nil, err
	}
	tol, err := parsePercentFlag("--tolerance", o.Tolerance)
	if err != nil {
		return nil, err
	}
	tol *= 100
	if !o.capOptions.enabled() {
		return nil, usagef("cap verify needs --cap riops=N,... or --cgroup PATH")
	}
	if err := checkFormat(o.Format); err != nil {
		return nil, err
	}
	vs := &verifySetup{setup: &sweepSetup{target: target}, tolerance: tol, baselineFile: o.Baseline}
	if err := o.prepare(g, vs.setup, "iomatrix-verify-%[2]s.json", false); err != nil {
		return nil, err
	}
	if o.Baseline == "" {
		if _, err := os.Stat(baselineOut(vs.setup.out)); err == nil {
			return nil, usagef("--out: %s exists; reuse it with --baseline %s or choose another --out", baselineOut(vs.setup.out), baselineOut(vs.setup.out))
		}
	}
	asked := vs.setup.opts // before the window is aligned to the throttle
	if vs.plan, vs.cp, err = o.resolve(g, vs.setup.target, vs.setup.size, vs.setup.profile.Patterns, false, &vs.setup.opts); err != nil {
		return nil, err
	}
	if o.Baseline != "" {
		if vs.baseline, err = loadBaseline(o.Baseline, vs.setup, vs.plan, asked); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// printVerdict writes the verdict of doc on stdout in the chosen format.
func (vs *verifySetup) printVerdict(g *globalOptions, format string, doc *results.Document, complete bool) (*results.CapVerdict, error) {
	v := capverify.Verdict(doc, capverify.VerdictRun{
		ResultsFile: vs.setup.out, BaselineFile: vs.baselineFile, TolerancePct: vs.tolerance, Complete: complete})
	if format == "json" {
		return v, report.WriteJSON(g.stdout, v)
	}
	return v, report.WriteCapCheck(g.stdout, doc, v)
}

// baselineOut is where cap verify saves the baseline it measures.
func baselineOut(out string) string { return strings.TrimSuffix(out, ".json") + "-baseline.json" }

// loadBaseline reads the uncapped IOPS of every pattern of setup from a
// results file (see session.CheckBaseline).
func loadBaseline(path string, setup *sweepSetup, plan *target.Plan, asked iotest.Options) (map[string]results.Result, error) {
	d, err := loadResults(path)
	if err != nil {
		return nil, err
	}
	baseline, err := session.CheckBaseline(d, session.BaselineFor{Plan: plan, Asked: asked, Options: setup.opts, Patterns: setup.todo})
	if err != nil {
		return nil, usagef("--baseline %s: %w", path, err)
	}
	return baseline, nil
}

// measureBaseline measures every pattern uncapped, saves the results to
// out and returns them by name.
func measureBaseline(ctx context.Context, g *globalOptions, setup *sweepSetup, sess *session.Session, out string) (map[string]results.Result, error) {
	fmt.Fprintf(g.stderr, "iomatrix: measuring the uncapped baseline first (%s)\n", out)
	bdoc := setup.newDocument(sess)
	// Saved after every cell, like the capped phase: an interruption keeps
	// what was measured.
	loop := session.Loop{Runner: sess.Local(), Options: setup.opts, Display: newSweepProgress(g, len(setup.todo), 0, setup.opts), Doc: bdoc, Out: out, Notice: g.notice}
	if err := loop.Measure(ctx, setup.todo); err != nil {
		return nil, err
	}
	return bdoc.ByName(), nil
}

func newCapShowCommand(g *globalOptions) *cobra.Command {
	var device string
	cmd := &cobra.Command{
		Use:   "show [--device PATH]",
		Short: "List the I/O limits configured on this host",
		Long:  longHelp("cap-show"),
		Args:  maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
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
		},
	}
	cmd.Flags().StringVar(&device, "device", "", "only limits on the device of this path")
	return cmd
}

func newCapCleanupCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "cleanup",
		Short: "Remove cgroups left by an iomatrix that was killed",
		Long:  longHelp("cap-cleanup"),
		Args:  maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
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
		},
	}
}
