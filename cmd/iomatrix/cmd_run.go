package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// runOptions are the flags of `iomatrix run`: the pattern's fields, as
// pattern.Build reads them, and how it is measured.
type runOptions struct {
	measureOptions
	pattern.Fields
	latLogOptions
	Format string
	Out    string
}

func (o *runOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.RW, "rw", "randread", "workload: randread, randwrite, randrw, read (sequential) or write (sequential)")
	f.StringVar(&o.BlockSize, "bs", "4k", "block size: a multiple of the target's logical block size from 512 to 64MiB (4k = 4096)")
	f.IntVar(&o.ReadMix, "rwmix", 50, "percentage of reads for --rw randrw (0-100)")
	f.IntVar(&o.QueueDepth, "qd", 32, "I/Os kept in flight per job (1-256)")
	f.IntVar(&o.Jobs, "jobs", 1, "independent workers, each with its own queue (1-64)")
	f.StringVar(&o.BSSplit, "bssplit", "", "block-size mix in fio's syntax, e.g. 4k/60:16k/30:1m/10 (reads,writes for one each); replaces --bs")
	f.StringVar(&o.Distribution, "random-distribution", "uniform", "offsets of random I/O: uniform, zipf:THETA, pareto:H or normal:DEV% (fio's syntax, optional :CENTER)")
	f.StringVar(&o.Rate, "rate", "", "open loop: start I/Os on a schedule at this rate in IOPS (5000), per direction (riops=3000,wiops=1000; wburst=B brings the writes in bursts of B at once, wburst-iops=K only K of them a second) or as a share of the pattern's closed-loop maximum, measured first (80%); --qd is then the most in flight")
	f.StringVar(&o.Sync, "sync", "none", "durable writes, as a commit's: none, dsync (each write waits to be durable: RWF_DSYNC), "+
		"fdatasync:N or fsync:N (a sync after every N-th write, on average when N has decimals (1.5: two syncs in three writes), its wait counted in that write's latency; --qd 1; "+
		"on uring linked to the write, or with :after issued once the write completed, as a database and fio do)")
	f.StringVar(&o.Arrival, "arrival", results.ArrivalPoisson, "with --rate: poisson (random, independent arrivals) or uniform (evenly spaced)")
	f.IntVar(&o.Compress, "compress", 0, "written data compresses by this percentage (0-100): each 512-byte chunk is random, then zeros, as fio's buffer_compress_percentage")
	f.IntVar(&o.Dedupe, "dedupe", 0, "this percentage of writes (0-100) repeat an earlier write's data, as fio's dedupe_percentage")
	o.measureOptions.AddFlags(f)
	o.latLogOptions.AddFlags(f)
	formatVar(f, &o.Format, []string{"text", "json"}, "output on stdout: text or json (the results document)")
	f.StringVarP(&o.Out, "out", "o", "", "also write the results document to this file")
	forceFlag(f, "--out file")
}

func newRunCommand(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := command("run", "run [TARGET]", "Measure one pattern", maxArgs(1), func(cmd *cobra.Command, args []string) error {
		o.changed(cmd.Flags())
		return runRun(cmd.Context(), o, g, targetArg(args))
	})
	o.AddFlags(cmd.Flags())
	return cmd
}

// pattern is the pattern the flags write (pattern.Build), and the share
// of its closed-loop maximum in percent an open-loop run is to take (0:
// none).
func (o *runOptions) pattern() (results.Pattern, float64, error) {
	f := o.Fields
	f.BlockSizeGiven, f.ReadMixGiven, f.ArrivalGiven = o.given("bs"), o.given("rwmix"), o.given("arrival")
	return pattern.Build(f)
}

func runRun(ctx context.Context, o *runOptions, g *globalOptions, target string) error {
	rs, err := o.prepare(g, target)
	if err != nil {
		return err
	}
	sess, err := startSession(ctx, g, &o.measureOptions, rs.cp, rs.plan, rs.p.Writes())
	if err != nil {
		return err
	}
	defer sess.Close()
	doc := sess.NewDocument("run", rs.opts)
	prog := newLiveLine(g)
	opts := rs.opts
	logs, closeLogs, err := o.latLogOptions.open()
	if err != nil {
		return err
	}
	defer func() { _ = closeLogs() }() // closed and checked below; again on an early return
	opts.LatLog = logs
	opts.Progress = func(pr iotest.Progress) { prog.Pattern(pr, opts) }
	res, runErr := session.MeasureOne(ctx, sess.Runner(), doc, session.One{Pattern: rs.p, SharePct: rs.sharePct, Arrival: o.Arrival,
		Options: opts, Done: prog.Done, Notice: g.notice})
	if err := closeLogs(); err != nil && runErr == nil {
		runErr = err
	}
	if res == nil {
		return runErr
	}
	doc.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	if o.Out != "" {
		if err := results.WriteFileAtomic(o.Out, doc); err != nil {
			return err
		}
	}
	if err := printRun(g, o.Format, doc, res); err != nil {
		return err
	}
	return runErr
}

// runSetup is what `run` decides before any I/O.
type runSetup struct {
	p        results.Pattern
	sharePct float64 // of the closed-loop maximum, for --rate N%
	opts     iotest.Options
	plan     *target.Plan
	cp       *session.CapPlan // nil when uncapped
}

// prepare checks every flag and the target, touching nothing.
func (o *runOptions) prepare(g *globalOptions, target string) (*runSetup, error) {
	if err := o.capOptions.precheck(); err != nil {
		return nil, err
	}
	p, sharePct, err := o.pattern()
	if err != nil {
		return nil, err
	}
	opts, err := o.options(g)
	if err != nil {
		return nil, err
	}
	o.openLoop = sharePct > 0
	if err := o.latLogOptions.check(opts, p, sharePct, o.capOptions.enabled()); err != nil {
		return nil, err
	}
	size, err := o.size()
	if err != nil {
		return nil, err
	}
	plan, cp, err := o.resolve(g, target, size, []results.Pattern{p}, false, &opts)
	if err != nil {
		return nil, err
	}
	return &runSetup{p: p, sharePct: sharePct, opts: opts, plan: plan, cp: cp}, nil
}

// printRun writes the result on stdout in the chosen format.
func printRun(g *globalOptions, format string, doc *results.Document, res *results.Result) error {
	if format == "json" {
		return report.WriteJSON(g.stdout, doc)
	}
	return report.WriteRunText(g.stdout, doc, res)
}
