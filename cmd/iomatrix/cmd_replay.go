package main

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/iotest/trace"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// replayOptions are the flags of `iomatrix replay`.
type replayOptions struct {
	Speed            float64
	QueueDepth       int
	Device           string
	Size             string
	Seed             uint64
	Force            bool
	AllowDestructive bool
	Format           string
	Out              string
	flags            *pflag.FlagSet
}

func (o *replayOptions) AddFlags(f *pflag.FlagSet) {
	f.Float64Var(&o.Speed, "speed", 1, "scale the trace's time: 2 replays it twice as fast, 0.5 at half speed")
	f.IntVar(&o.QueueDepth, "qd", iotest.DefaultReplayDepth, "the most I/Os in flight (1-256): an I/O due while all are busy waits, and its response time counts the wait")
	f.StringVar(&o.Device, "device", "", "replay the I/O of this device (MAJ:MIN, blktrace) or file (fio's iolog) of a trace that holds several")
	f.StringVar(&o.Size, "size", "", "size of a file target, laid out once with random data (a new file gets 16GiB); on a block device, I/O is limited to the first `SIZE` bytes (default: the whole device)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of the data written (default: random, recorded in the results)")
	f.BoolVar(&o.Force, "force", false, "lay out an existing file that iomatrix did not create, destroying its contents")
	f.BoolVar(&o.AllowDestructive, "allow-destructive", false, "allow a trace's writes on a block device, destroying its data")
	formatVar(f, &o.Format, []string{"text", "json"}, "output on stdout: text or json (the results document)")
	f.StringVarP(&o.Out, "out", "o", "", "also write the results document to this file")
	forceFlag(f, "--out file")
}

func newReplayCommand(g *globalOptions) *cobra.Command {
	o := &replayOptions{}
	cmd := command("replay", "replay TRACE TARGET", "Replay a recorded trace (fio's iolog, blktrace, blkparse) on a target", exactArgs(2),
		func(cmd *cobra.Command, args []string) error {
			o.flags = cmd.Flags()
			return runReplay(cmd.Context(), o, g, args[0], args[1])
		})
	o.AddFlags(cmd.Flags())
	return cmd
}

func runReplay(ctx context.Context, o *replayOptions, g *globalOptions, tracePath, targetPath string) error {
	pl, plan, opts, err := o.prepare(g, tracePath, targetPath)
	if err != nil {
		return err
	}
	sess, err := session.Open(ctx, session.Options{Plan: plan, Writes: pl.Writes(), AllowDestructive: o.AllowDestructive, Notice: g.notice})
	if err != nil {
		return err
	}
	defer sess.Close()
	prog := newLiveLine(g)
	opts.Progress = func(pr iotest.Progress) { prog.Pattern(pr, opts) }
	res, runErr := iotest.Replay(ctx, sess.Target(), pl, opts)
	prog.Done()
	if runErr != nil && res.Replay == nil {
		return runErr
	}
	doc := sess.NewDocument("replay", opts)
	doc.Results = append(doc.Results, res)
	doc.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	if o.Out != "" {
		if err := results.WriteFileAtomic(o.Out, doc); err != nil {
			return err
		}
	}
	if o.Format == "json" {
		err = report.WriteJSON(g.stdout, doc)
	} else {
		err = report.WriteReplayText(g.stdout, doc, &doc.Results[0])
	}
	if err != nil {
		return err
	}
	return runErr
}

// prepare reads the trace and plans the target and the replay, touching
// nothing: bad input is refused before any I/O.
func (o *replayOptions) prepare(g *globalOptions, tracePath, targetPath string) (*iotest.ReplayPlan, *target.Plan, iotest.Options, error) {
	opts := iotest.Options{Engine: iotest.EngineUring, Seed: o.Seed, Notice: g.notice}
	if !o.flags.Changed("seed") {
		opts.Seed = rand.Uint64() >> 11 // fits a JSON number exactly
	}
	if err := iotest.CheckReplay(o.Speed, o.QueueDepth); err != nil {
		return nil, nil, opts, flagError(err)
	}
	size, err := sizeFlag(o.Size, o.flags.Changed("size"))
	if err != nil {
		return nil, nil, opts, err
	}
	tr, err := trace.ReadFile(tracePath, trace.Options{Device: o.Device})
	if err != nil {
		return nil, nil, opts, optionError(err)
	}
	plan, _, err := session.Prepare(session.Request{Sys: g.sys, Target: targetPath, Size: size, Writes: tr.Writes(),
		Force: o.Force, AllowDestructive: o.AllowDestructive, OpenLoop: true, Options: &opts, Notice: g.notice})
	if err != nil {
		return nil, nil, opts, engineError(iotest.EngineUring, err)
	}
	pl, err := iotest.PlanReplay(tr, tracePath, plan.Size, plan.Align, o.Speed, o.QueueDepth)
	if err != nil {
		return nil, nil, opts, flagError(err)
	}
	opts.Runtime = pl.Window()
	return pl, plan, opts, nil
}
