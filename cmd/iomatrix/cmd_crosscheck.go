package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	Patterns                []string
	Pairs                   int
	Runtime, Ramp           time.Duration
	Size, Engine, FioExtra  string
	FioDefaults             bool
	Poll, SQPoll            bool
	SQPollCPU               int
	SQPollIdle              time.Duration
	sqCPUSet                bool
	Keep, Format            string
	Force, AllowDestructive bool

	sizeSet bool
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
		return nil, nil, usagef("--pattern %w", err)
	}
	live := newLiveLine(g)
	co := crosscheck.Options{Engine: engine, Runtime: o.Runtime, Ramp: o.Ramp, FioDefaults: o.FioDefaults,
		Ring:     iotest.RingMode{Poll: o.Poll, SQPoll: o.SQPoll, SQIdle: o.SQPollIdle, SQAffine: o.sqCPUSet, SQCPU: o.SQPollCPU},
		FioExtra: strings.Fields(o.FioExtra), AllowDestructive: o.AllowDestructive, Keep: o.Keep, Patterns: pats, Pairs: o.Pairs,
		Status:     func(s string) { live.Printf("%s", s) }, // "" leaves the line cleared
		Notice:     func(s string) { fmt.Fprintf(g.stderr, "iomatrix: crosscheck: %s\n", s) },
		KeepFailed: func(err error) { fmt.Fprintf(g.stderr, "iomatrix: --keep: %v\n", err) },
	}
	if err := co.Validate(); err != nil {
		return nil, nil, crossError(err)
	}
	if co.Engine, err = iotest.ResolveEngine(engine, g.notice); err != nil {
		return nil, nil, engineError(engine, err)
	}
	if co.Iomatrix, err = os.Executable(); err != nil {
		return nil, nil, fmt.Errorf("find the iomatrix binary to run: %w", err)
	}
	plan, err := o.plan(g, path, pats)
	if err != nil {
		return nil, nil, err
	}
	co.Passthrough = plan.Info.Kind == target.KindPassthrough
	for _, ps := range pats {
		err := iotest.CheckPassthrough(plan.Namespace(), ps.Pattern, iotest.Options{Engine: co.Engine, Ring: co.Ring})
		if pattern.IsField(err, "block_size") {
			return nil, nil, usagef("--pattern %q: %s: %w", ps.Spec, path, err)
		}
		if err != nil {
			return nil, nil, flagError(err)
		}
	}
	if co.Ring.Poll {
		if err := plan.CheckPoll(); err != nil {
			return nil, nil, flagError(err)
		}
	}
	co.Target, co.Size, co.ReadInPlace = plan.Path, plan.Size, plan.Action == target.ActionReadOnly
	c, err := crosscheck.New(ctx, co)
	return c, plan, crossError(err)
}

// crossError words crosscheck's bad input in the flags' terms.
func crossError(err error) error {
	var set *crosscheck.ControlledError
	var refused *crosscheck.RefusedError
	switch {
	case errors.As(err, &set) && set.Option == "target":
		return usagef("--fio-extra: %s is set by TARGET", set.Arg)
	case errors.As(err, &set) && set.Option != "":
		return usagef("--fio-extra: %s is set by --%s", set.Arg, set.Option)
	case errors.As(err, &refused) && refused.Extra:
		return usagef("--fio-extra: fio refuses the command for --pattern %s: %s", refused.Spec, refused.Why)
	case errors.As(err, &refused):
		return usagef("fio refuses the command for --pattern %s: %s", refused.Spec, refused.Why)
	}
	return flagError(err)
}

// plan decides what happens to the target, touching nothing, and checks
// every pattern against it.
func (o *crosscheckOptions) plan(g *globalOptions, path string, pats []pattern.Spec) (*target.Plan, error) {
	size, err := o.sizeBytes(path)
	if err != nil {
		return nil, err
	}
	writes := false
	for _, ps := range pats {
		writes = writes || ps.Pattern.Writes()
	}
	plan, err := target.NewPlan(path, target.Options{Size: size, Writes: writes, Force: o.Force, AllowDestructive: o.AllowDestructive, Sys: g.sys})
	if err != nil {
		return nil, flagError(err)
	}
	for _, ps := range pats {
		if err := pattern.CheckTarget(ps.Pattern, plan.Align, plan.Size); err != nil {
			return nil, usagef("--pattern %q: %s: %w", ps.Spec, path, err)
		}
	}
	return plan, nil
}

// sizeBytes is --size in bytes; without it, a new file's size, or 0 for
// a target whose size iomatrix's layout rules decide.
func (o *crosscheckOptions) sizeBytes(target string) (int64, error) {
	if _, err := os.Stat(target); !o.sizeSet && errors.Is(err, fs.ErrNotExist) {
		return crosscheck.NewFileSize, nil
	}
	return sizeFlag(o.Size, o.sizeSet)
}
