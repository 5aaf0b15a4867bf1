package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/crosscheck"
	"github.com/iomatrix/iomatrix/iotest"
)

// crosscheckOptions are the flags of `iomatrix crosscheck`; the comparison
// itself is package crosscheck's.
type crosscheckOptions struct {
	Patterns                                           []string
	Pairs, SQPollCPU                                   int
	Runtime, Ramp, SQPollIdle                          time.Duration
	Size, Engine, FioExtra, Keep, Format               string
	FioDefaults, Poll, SQPoll, Force, AllowDestructive bool
}

func (o *crosscheckOptions) AddFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&o.Patterns, "pattern", nil, "pattern to compare, repeatable: `SPEC` = RW:BS:QD[:RWMIX[:JOBS]] [bssplit=MIX] [random_distribution=DIST] [buffer_compress_percentage=PCT] [dedupe_percentage=PCT] (default "+strings.Join(crosscheck.DefaultPatterns, ", ")+")")
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
	forceFlag(f, "comparison kept in --keep DIR ("+crosscheck.KeptDocument+")")
}

func newCrosscheckCommand(g *globalOptions) *cobra.Command {
	o := &crosscheckOptions{}
	run := func(cmd *cobra.Command, args []string) error {
		return runCrosscheck(cmd.Context(), g, o, cmd.Flags(), targetArg(args))
	}
	cmd := command("crosscheck", "crosscheck [TARGET]", "Compare iomatrix with fio on the same target, run for run", maxArgs(1), run)
	o.AddFlags(cmd.Flags())
	return cmd
}

// runCrosscheck checks every flag, the tools and the target before any
// I/O (crosscheck.Prepare), lays the target out, compares and reports.
func runCrosscheck(ctx context.Context, g *globalOptions, o *crosscheckOptions, f *pflag.FlagSet, path string) error {
	engine, err := engineName(o.Engine)
	if err != nil {
		return err
	}
	size, err := sizeFlag(o.Size, f.Changed("size"))
	if err != nil {
		return err
	}
	// The comparison kept is an output too, in a DIR made if missing
	// (held to the rule as --keep, checkFiles).
	if fi, err := os.Stat(o.Keep); err == nil && fi.IsDir() {
		if err := g.files.withOutput("--keep", filepath.Join(o.Keep, crosscheck.KeptDocument), "").check(); err != nil {
			return err
		}
	}
	live := newLiveLine(g)
	c, plan, err := crosscheck.Prepare(ctx, o.Patterns, crosscheck.Options{Target: path, Size: size, Engine: engine, Runtime: o.Runtime, Ramp: o.Ramp,
		Ring:        iotest.RingMode{Poll: o.Poll, SQPoll: o.SQPoll, SQIdle: o.SQPollIdle, SQAffine: f.Changed("sqpoll-cpu"), SQCPU: o.SQPollCPU},
		FioDefaults: o.FioDefaults, FioExtra: strings.Fields(o.FioExtra), Force: o.Force, AllowDestructive: o.AllowDestructive, Keep: o.Keep, Pairs: o.Pairs, Sys: g.sys,
		Status:     func(s string) { live.Printf("%s", s) }, // "" leaves the line cleared
		Notice:     func(s string) { g.notice("crosscheck: " + s) },
		KeepFailed: func(err error) { g.notice("--keep: " + err.Error()) },
	})
	if err != nil {
		return crossError(engine, err)
	}
	sess, err := openSession(ctx, g, &measureOptions{}, nil, plan, false)
	if err != nil {
		return err
	}
	sess.Close() // each run opens it on its own; nothing was written through it
	return c.Report(ctx, sess.Target().Info, g.stdout, o.Format)
}

// crossError words crosscheck's bad input where the option's flag would
// not: a fio option that the target sets names TARGET, an engine that
// cannot run names --engine.
func crossError(engine string, err error) error {
	var set *crosscheck.ControlledError
	if errors.As(err, &set) && set.Option == "target" {
		return usagef("--fio-extra: %s is set by TARGET", set.Arg)
	}
	return engineError(engine, err)
}
