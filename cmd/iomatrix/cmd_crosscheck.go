package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/crosscheck"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
)

// crosscheckOptions are the flags of `iomatrix crosscheck`; the comparison
// itself is package crosscheck's.
type crosscheckOptions struct {
	Patterns                                           []string
	Pairs, SQPollCPU                                   int
	Runtime, Ramp, SQPollIdle                          time.Duration
	Size, Engine, FioExtra, Keep, Format               string
	FioDefaults, Poll, SQPoll, Force, AllowDestructive bool

	sizeSet, sqCPUSet bool // the flags given
}

func (o *crosscheckOptions) AddFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&o.Patterns, "pattern", nil, "pattern to compare, repeatable: `SPEC` = RW:BS:QD[:RWMIX[:JOBS]] [bssplit=MIX] [random_distribution=DIST] (default "+strings.Join(crosscheck.DefaultPatterns, ", ")+")")
	f.IntVar(&o.Pairs, "pairs", 3, "fio/iomatrix run pairs per pattern")
	durationVar(f, &o.Runtime, "runtime", 10*time.Second, "measured time of each run (a bare number is seconds)")
	durationVar(f, &o.Ramp, "ramp", time.Second, "warm-up of each run, left out of the figures by both tools (a bare number is seconds)")
	f.StringVar(&o.Size, "size", "", "the extent both tools measure: a new file is laid out at `SIZE` (default 4GiB), a file iomatrix laid out keeps its size "+
		"unless this is given, a block device is measured to its first SIZE bytes (default: whole); powers of two: 4g = 4GiB")
	f.StringVar(&o.Engine, "engine", iotest.EngineUring, "uring (fio --ioengine=io_uring --iodepth=QD --numjobs=JOBS) or psync (fio --ioengine=psync --iodepth=1 --numjobs=QD×JOBS)")
	f.BoolVar(&o.Poll, "poll", false, "both tools reap completions by polling: iomatrix --poll, fio --hipri (needs a disk with poll queues)")
	f.BoolVar(&o.SQPoll, "sqpoll", false, "both tools submit through a kernel thread: iomatrix --sqpoll, fio --sqthread_poll=1")
	f.IntVar(&o.SQPollCPU, "sqpoll-cpu", 0, "with --sqpoll: the submission thread's CPU, for both (fio --sqthread_poll_cpu)")
	durationVar(f, &o.SQPollIdle, "sqpoll-idle", 0, "refused: fio has no idle time for its submission thread")
	f.BoolVar(&o.FioDefaults, "fio-defaults", false, "run fio's io_uring engine with its defaults instead of its peak-IOPS options ("+strings.Join(crosscheck.FioTuned, " ")+")")
	f.StringVar(&o.FioExtra, "fio-extra", "", "more options for every fio run, split on whitespace, given last (so they override the peak-IOPS options; e.g. \"--nonvectored=1\")")
	f.StringVar(&o.Keep, "keep", "", "keep every run's raw JSON output and stderr, and this comparison as crosscheck.json, in `DIR`")
	formatVar(f, &o.Format, []string{"text", "json"}, "output on stdout: text (a table) or json (one document)")
	f.BoolVar(&o.Force, "force", false, "lay out an existing file that iomatrix did not create, destroying its contents (needed for write patterns)")
	f.BoolVar(&o.AllowDestructive, "allow-destructive", false, "allow write patterns on a block device, destroying its data")
}

func newCrosscheckCommand(g *globalOptions) *cobra.Command {
	o := &crosscheckOptions{}
	cmd := &cobra.Command{
		Use:     "crosscheck [TARGET]",
		Short:   "Compare iomatrix with fio on the same target, run for run",
		Long:    longHelp("crosscheck"),
		Example: examples("crosscheck"),
		Args:    maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.sizeSet, o.sqCPUSet = cmd.Flags().Changed("size"), cmd.Flags().Changed("sqpoll-cpu")
			return runCrosscheck(cmd.Context(), o, g, targetArg(args))
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runCrosscheck(ctx context.Context, o *crosscheckOptions, g *globalOptions, target string) error {
	c, plan, err := o.prepare(ctx, g, target)
	if err != nil {
		return err
	}
	if o.Keep != "" {
		if err := os.MkdirAll(o.Keep, 0o755); err != nil {
			return fmt.Errorf("--keep: %w", err)
		}
	}
	sess, err := openSession(ctx, g, &measureOptions{}, nil, plan, false)
	if err != nil {
		return err
	}
	t := sess.Target()
	sess.Close() // each run opens it on its own; nothing was written through it
	info, npat := t.Info, len(c.Options().Patterns)
	info.SizeBytes = t.Size
	fmt.Fprintf(g.stderr, "iomatrix: crosscheck: %s × %s × 2 tools, about %s\n",
		units.Count(npat, "pattern"), units.Count(o.Pairs, "pair"), c.Estimate().Round(time.Second))
	var sink crosscheck.Sink
	if o.Format != "json" {
		sink = c.Text(g.stdout)
	}
	doc, err := c.Run(ctx, info, sink)
	if sink == nil {
		if jerr := doc.WriteJSON(g.stdout); jerr != nil {
			return jerr
		}
	}
	if err != nil || doc.FailedRuns == 0 {
		return err
	}
	kept := ", or re-run with --keep DIR for their raw output"
	if o.Keep != "" {
		kept = " and their raw output in " + o.Keep
	}
	return fmt.Errorf("%s of %d failed, their figures left out: see the lines above%s", units.Count(doc.FailedRuns, "run"), 2*o.Pairs*npat, kept)
}

// prepare checks every flag, the tools and the target, touching nothing:
// bad input is refused before any I/O.
func (o *crosscheckOptions) prepare(ctx context.Context, g *globalOptions, path string) (*crosscheck.Comparison, *target.Plan, error) {
	engine, err := engineName(o.Engine)
	if err != nil {
		return nil, nil, err
	}
	pats, err := crosscheck.ParsePatterns(o.Patterns)
	if err != nil {
		return nil, nil, crossError(engine, err)
	}
	size, err := sizeFlag(o.Size, o.sizeSet)
	if err != nil {
		return nil, nil, err
	}
	live := newLiveLine(g)
	co := crosscheck.Options{Target: path, Size: size, Engine: engine, Runtime: o.Runtime, Ramp: o.Ramp, FioDefaults: o.FioDefaults,
		Ring:     iotest.RingMode{Poll: o.Poll, SQPoll: o.SQPoll, SQIdle: o.SQPollIdle, SQAffine: o.sqCPUSet, SQCPU: o.SQPollCPU},
		FioExtra: strings.Fields(o.FioExtra), Force: o.Force, AllowDestructive: o.AllowDestructive, Keep: o.Keep, Patterns: pats, Pairs: o.Pairs, Sys: g.sys,
		Status:     func(s string) { live.Printf("%s", s) }, // "" leaves the line cleared
		Notice:     func(s string) { fmt.Fprintf(g.stderr, "iomatrix: crosscheck: %s\n", s) },
		KeepFailed: func(err error) { fmt.Fprintf(g.stderr, "iomatrix: --keep: %v\n", err) },
	}
	plan, err := co.Plan()
	if err != nil {
		return nil, nil, crossError(engine, err)
	}
	c, err := crosscheck.New(ctx, co)
	return c, plan, crossError(engine, err)
}

// crossError words crosscheck's bad input in the flags' terms: a pattern
// names --pattern, a fio option that crosscheck sets names the flag (or
// TARGET) that sets it, an engine that cannot run names --engine.
func crossError(engine string, err error) error {
	var set *crosscheck.ControlledError
	switch {
	case errors.As(err, new(*pattern.SpecError)):
		return usagef("--pattern %w", err)
	case errors.As(err, &set) && set.Option == "target":
		return usagef("--fio-extra: %s is set by TARGET", set.Arg)
	case errors.As(err, &set) && set.Option != "":
		return usagef("--fio-extra: %s is set by %s", set.Arg, flagName(set.Option))
	}
	return engineError(engine, err)
}
