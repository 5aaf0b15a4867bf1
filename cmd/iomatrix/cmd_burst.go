package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/burst"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// burstOptions are the flags of `iomatrix burst`.
type burstOptions struct {
	measureOptions
	Pattern    string
	MaxRuntime time.Duration
	Refill     time.Duration
	Probe      time.Duration
	MinDrop    float64 // a fraction
	Hold       int
	Format     string
	Out        string
	Chart      string
}

func (o *burstOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Pattern, "pattern", "randread:4k:32", "the pattern run flat out, RW:BS:QD[:RWMIX[:JOBS]] (randread:4k:32; randwrite:64k:8 for a write cache)")
	durationVar(f, &o.MaxRuntime, "max-runtime", burst.DefaultMaxRuntime, "the longest the pattern runs looking for the step (a bare number is seconds)")
	durationVar(f, &o.Refill, "refill", 0, "after the step, idle this long and run again: what the volume earned back is its refill rate (0: no idle probe)")
	durationVar(f, &o.Probe, "probe", burst.DefaultProbeRuntime, "after the step, run this long at 4× the block size to tell an IOPS bucket from a bandwidth bucket (0: no probe)")
	fractionVar(f, &o.MinDrop, "min-drop", "20%", "the smallest drop that is a step, as a share of the rate before it")
	f.IntVar(&o.Hold, "hold", burst.DefaultStepRule.MinAfter, "the seconds the rate must stay down before the step is taken (at least 2)")
	formatVar(f, &o.Format, []string{"text", "json"}, "output on stdout: text or json (the burst document)")
	f.StringVarP(&o.Out, "out", "o", "", "also write the burst document (JSON) to this file, saved after each phase")
	f.StringVar(&o.Chart, "chart", "", "write the rate over time with the step marked to this file: an SVG image (FILE.svg) or a page (FILE.html)")
	// What the target may be and how it is run, as run's.
	f.StringVar(&o.Size, "size", "", "size of a file target, laid out once with random data (a new file gets 16GiB); on a block device, I/O is limited to the first `SIZE` bytes (default: the whole device)")
	f.StringVar(&o.Engine, "engine", "auto", "I/O engine: uring, psync, or auto (uring when available)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for offsets and read/write draws (default: random, recorded in the document)")
	f.BoolVar(&o.Force, "force", false, "lay out an existing file that iomatrix did not create, destroying its contents")
	f.BoolVar(&o.AllowDestructive, "allow-destructive", false, "allow a write pattern on a block device, destroying its data")
	forceFlag(f, "--out or --chart file")
}

func newBurstCommand(g *globalOptions) *cobra.Command {
	o := &burstOptions{}
	cmd := command("burst", "burst [TARGET]", "Find where a volume's rate steps down: its burst, its bucket and its baseline", maxArgs(1), func(cmd *cobra.Command, args []string) error {
		o.changed(cmd.Flags())
		return runBurst(cmd.Context(), o, g, targetArg(args))
	})
	o.AddFlags(cmd.Flags())
	return cmd
}

// burstSetup is what `burst` decides before any I/O.
type burstSetup struct {
	c     burst.Config
	opts  iotest.Options
	chart func(*bytes.Buffer, *results.Burst) error
	*runSetup
}

// prepare checks every flag and the target, touching nothing.
func (o *burstOptions) prepare(g *globalOptions, target string) (*burstSetup, error) {
	spec, err := pattern.ParseSpec(o.Pattern)
	if err != nil {
		return nil, usagef("--pattern: %w", err)
	}
	p := spec.Pattern
	if o.Hold < 2 {
		return nil, usagef("--hold: %d seconds; the rate must stay down 2 at least", o.Hold)
	}
	if !(o.MinDrop > 0 && o.MinDrop < 1) {
		return nil, usagef("--min-drop: %s is not between 0 and 100 %%", units.FormatPercent(o.MinDrop*100))
	}
	if o.MaxRuntime < iotest.SteadyWindow*time.Second {
		return nil, usagef("--max-runtime: %s is shorter than 5s", o.MaxRuntime)
	}
	if need := time.Duration(burst.DefaultStepRule.MinBefore+o.Hold) * time.Second; o.MaxRuntime < need {
		return nil, usagef("--max-runtime: %s is shorter than the %s a step needs (%d seconds before it, --hold %d after)", o.MaxRuntime, need, burst.DefaultStepRule.MinBefore, o.Hold)
	}
	if o.Refill < 0 || o.Probe < 0 {
		return nil, usagef("--refill and --probe: must not be negative")
	}
	s := &burstSetup{}
	switch ext := strings.ToLower(filepath.Ext(o.Chart)); {
	case o.Chart == "":
	case ext == ".svg":
		s.chart = func(b *bytes.Buffer, d *results.Burst) error { return report.WriteBurstSVG(b, d) }
	case ext == ".html" || ext == ".htm":
		s.chart = func(b *bytes.Buffer, d *results.Burst) error { return report.WriteBurstHTML(b, d) }
	default:
		return nil, usagef("--chart: %q is neither FILE.svg nor FILE.html", o.Chart)
	}
	// The run's window is an auto window that the burst's rule ends
	// (burst.Measure sets it); the engine's options are run's.
	o.Auto, o.Precision, o.measureOptions.MaxRuntime = true, "2%", o.MaxRuntime
	opts, err := o.options(g)
	if err != nil {
		return nil, err
	}
	opts.Auto = nil
	rule := burst.DefaultStepRule
	rule.MinDrop, rule.MinAfter = o.MinDrop, o.Hold
	probe := o.Probe
	if probe == 0 {
		probe = -1
	}
	s.c = burst.Config{Pattern: p, MaxRuntime: o.MaxRuntime, Rule: rule, Refill: o.Refill, ProbeRuntime: probe}
	if err := s.c.Check(); err != nil {
		return nil, flagError(err)
	}
	size, err := o.size()
	if err != nil {
		return nil, err
	}
	pats := []results.Pattern{p}
	if pp, why := burst.ProbePattern(p); why == "" && probe > 0 {
		pats = append(pats, pp)
	}
	plan, _, err := o.resolve(g, target, size, pats, false, &opts)
	if err != nil {
		return nil, err
	}
	s.opts = opts
	s.runSetup = &runSetup{p: p, opts: opts, plan: plan}
	return s, nil
}

func runBurst(ctx context.Context, o *burstOptions, g *globalOptions, target string) error {
	s, err := o.prepare(g, target)
	if err != nil {
		return err
	}
	sess, err := startSession(ctx, g, &o.measureOptions, nil, s.plan, s.p.Writes())
	if err != nil {
		return err
	}
	defer sess.Close()
	doc := sess.NewDocument("burst", s.opts)
	d := &results.Burst{SchemaVersion: results.SchemaVersion, Tool: doc.Tool, Host: doc.Host, Target: doc.Target, Settings: doc.Settings}
	line := newLiveLine(g)
	c := s.c
	c.Runner, c.Options, c.Doc = sess.Runner(), s.opts, d
	c.Progress = func(pr iotest.Progress) { line.Pattern(pr, s.opts) }
	c.Phase = func(phase string, wait time.Duration) {
		line.Done()
		switch phase {
		case "burst":
			g.notice(fmt.Sprintf("burst: %s flat out until its rate steps down and stays down %ds (at most %s)", c.Pattern.Name(), c.Rule.MinAfter, c.MaxRuntime))
		case "probe":
			g.notice(fmt.Sprintf("burst: %s; probing another block size", d.Summary))
		case "idle":
			g.notice(fmt.Sprintf("burst: idle for %s, then run again to find what the volume earned back", wait))
		case "refill":
			g.notice("burst: running again after the idle time")
		}
	}
	if o.Out != "" {
		c.Save = func(d *results.Burst) error { return results.WriteBurstFile(o.Out, d) }
	}
	d, runErr := burst.Measure(ctx, c)
	line.Done()
	if d == nil {
		return runErr
	}
	if s.chart != nil {
		var b bytes.Buffer
		if err := s.chart(&b, d); err != nil {
			return errors.Join(runErr, err)
		}
		if err := results.WriteBytesAtomic(o.Chart, b.Bytes()); err != nil {
			return errors.Join(runErr, err)
		}
	}
	var err2 error
	if o.Format == "json" {
		err2 = report.WriteJSON(g.stdout, d)
	} else {
		err2 = report.WriteBurstText(g.stdout, d)
	}
	return errors.Join(runErr, err2)
}
