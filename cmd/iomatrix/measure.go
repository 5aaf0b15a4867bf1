package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/progress"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// measureOptions are the flags every measuring command shares: how long,
// how, and what it may do to the target.
type measureOptions struct {
	Runtime time.Duration
	// Auto is --runtime auto: each pattern runs until its IOPS are steady
	// and precise, between MinRuntime and MaxRuntime.
	Auto                   bool
	MinRuntime, MaxRuntime time.Duration
	Precision              string
	Ramp                   time.Duration
	Size                   string
	Engine                 string
	Poll, SQPoll           bool
	SQPollIdle             time.Duration
	SQPollCPU              int
	Seed                   uint64
	Force                  bool
	AllowDestructive       bool
	capOptions

	// flags are the command's, once parsed: given says which were given.
	flags *pflag.FlagSet
	// openLoop: patterns run open-loop at a share of a maximum measured
	// first (session.Request.OpenLoop).
	openLoop bool
	// merges sets the disk's request merging around the cells that ask
	// for it (session.PlanMerges); nil changes nothing.
	merges *session.Merges
}

func (o *measureOptions) AddFlags(f *pflag.FlagSet) {
	o.Runtime = 60 * time.Second
	f.Var(runtimeValue{o}, "runtime", "measured time per pattern (a bare number is seconds), or auto: each pattern runs until its IOPS are steady "+
		"and known within --precision, at least --min-runtime and at most --max-runtime (see docs/sweeps.md, \"--runtime auto\")")
	durationVar(f, &o.MinRuntime, "min-runtime", iotest.DefaultMinRuntime, "with --runtime auto: the shortest a pattern is measured")
	durationVar(f, &o.MaxRuntime, "max-runtime", iotest.DefaultMaxRuntime, "with --runtime auto: the longest a pattern is measured; "+
		"one not steady and precise by then is marked not converged in every report")
	f.StringVar(&o.Precision, "precision", "2%", "with --runtime auto: the widest 95 % confidence interval of a pattern's mean IOPS, "+
		"as ± a share of it (allowing for seconds that are not independent)")
	durationVar(f, &o.Ramp, "ramp", 5*time.Second, "warm-up time before each measurement, excluded from every statistic (a bare number is seconds)")
	// No default value: the default depends on the target, so the text
	// states it once for each kind.
	f.StringVar(&o.Size, "size", "", "size of a file target, laid out once with random data: a new file gets 16GiB (or the profile's size, if it sets one), "+
		"a file iomatrix laid out keeps its size unless this is given; on a block device, I/O is limited to the first `SIZE` bytes (default: the whole device); powers of two: 1g = 1GiB")
	f.StringVar(&o.Engine, "engine", "auto", "I/O engine: uring, psync, or auto (uring when available)")
	f.BoolVar(&o.Poll, "poll", false, "uring: reap completions by polling the device (IOPOLL, fio's --hipri), with no interrupt; needs a disk with poll queues (queue/io_poll 1: NVMe with nvme.poll_queues=N)")
	f.BoolVar(&o.SQPoll, "sqpoll", false, "uring: a kernel thread takes each ring's submissions (SQPOLL, fio's --sqthread_poll), with no syscall per batch; its CPU is recorded beside each cell")
	durationVar(f, &o.SQPollIdle, "sqpoll-idle", 0, "with --sqpoll: how long the submission thread polls without work before it sleeps (whole ms; default: the kernel's, 1s)")
	f.IntVar(&o.SQPollCPU, "sqpoll-cpu", 0, "with --sqpoll: the CPU the submission thread runs on (default: wherever the scheduler puts it)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for offsets and read/write draws; the same seed repeats the same sequence (default: random, recorded in the results)")
	f.BoolVar(&o.Force, "force", false, "lay out an existing file that iomatrix did not create, destroying its contents")
	f.BoolVar(&o.AllowDestructive, "allow-destructive", false, "allow write patterns on a block device, destroying its data")
	o.capOptions.AddFlags(f)
	addFioAlways(f)
}

// openSession makes the cap's cgroup (cp nil: uncapped), and lays out and
// opens the target, showing the layout's progress.
func openSession(ctx context.Context, g *globalOptions, o *measureOptions, cp *session.CapPlan, plan *target.Plan, writes bool) (*session.Session, error) {
	line := newLiveLine(g)
	s, err := session.Open(ctx, session.Options{Plan: plan, Cap: cp, Writes: writes, AllowDestructive: o.AllowDestructive,
		Notice: g.notice, ChildStderr: unwrapped(g.stderr), Layout: line.Layout, Merges: o.merges})
	line.Done()
	return s, err
}

// startSession opens a session and starts its runner: for the commands
// that measure under the cap from the first pattern on.
func startSession(ctx context.Context, g *globalOptions, o *measureOptions, cp *session.CapPlan, plan *target.Plan, writes bool) (*session.Session, error) {
	s, err := openSession(ctx, g, o, cp, plan, writes)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// engineError words an engine that cannot run (asked as engine) as bad
// input of --engine.
func engineError(engine string, err error) error {
	if errors.Is(err, iotest.ErrNoUring) {
		return usagef("--engine %s: %w", engine, err)
	}
	return flagError(err)
}

// changed records the parsed flags, to tell which the user gave.
func (o *measureOptions) changed(f *pflag.FlagSet) { o.flags = f }

// given tells whether the user gave the flag name.
func (o *measureOptions) given(name string) bool { return o.flags != nil && o.flags.Changed(name) }

// options checks the flags and turns them into engine options.
func (o *measureOptions) options(g *globalOptions) (iotest.Options, error) {
	engine, err := engineName(o.Engine)
	if err != nil {
		return iotest.Options{}, err
	}
	opts := iotest.Options{Runtime: o.Runtime, Ramp: o.Ramp, Seed: o.Seed, Engine: engine,
		Ring: iotest.RingMode{Poll: o.Poll, SQPoll: o.SQPoll, SQIdle: o.SQPollIdle, SQAffine: o.given("sqpoll-cpu"), SQCPU: o.SQPollCPU}}
	if opts.Auto, err = o.auto(); err != nil {
		return opts, err
	}
	if opts.Auto != nil {
		opts.Runtime = opts.Auto.MaxRuntime // what every bound and estimate uses
	}
	if !o.given("seed") {
		opts.Seed = rand.Uint64() >> 11 // fits a JSON number exactly
	}
	opts.Notice = g.notice
	return opts, opts.Validate()
}

// auto turns --runtime auto and its flags into the engine's settings, or
// nil for a fixed runtime; the auto flags without it are refused rather
// than ignored.
func (o *measureOptions) auto() (*iotest.Auto, error) {
	if !o.Auto {
		for _, name := range []string{"min-runtime", "max-runtime", "precision"} {
			if o.given(name) {
				return nil, usagef("--%s: only applies with --runtime auto (got --runtime %s)", name, o.Runtime)
			}
		}
		return nil, nil
	}
	pct, err := units.ParsePercent(o.Precision)
	if err != nil {
		return nil, usagef("--precision: %q is not a percentage (e.g. 2%%)", o.Precision)
	}
	a := &iotest.Auto{MinRuntime: o.MinRuntime, MaxRuntime: o.MaxRuntime, Precision: pct / 100}
	return a, a.Validate()
}

// runtimeValue is --runtime: a duration (a bare number is seconds) or
// auto.
type runtimeValue struct{ o *measureOptions }

func (v runtimeValue) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		v.o.Auto = true
		return nil
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%w, or auto", err)
	}
	v.o.Runtime, v.o.Auto = d, false
	return nil
}

func (v runtimeValue) String() string {
	if v.o.Auto {
		return "auto"
	}
	return durationValue{&v.o.Runtime}.String()
}

func (runtimeValue) Type() string { return "duration|auto" }

// size is --size in bytes, or 0 when not given: a file then keeps the size
// it was laid out at, a new file gets the default and a device is measured
// whole.
func (o *measureOptions) size() (int64, error) { return sizeFlag(o.Size, o.given("size")) }

// sizeFlag is a --size given (in bytes), 0 when not given.
func sizeFlag(s string, given bool) (int64, error) {
	if !given {
		return 0, nil
	}
	size, err := units.ParseSize(s)
	if err != nil {
		return 0, usagef("--size: %w", err)
	}
	if size <= 0 {
		return 0, usagef("--size: must be positive")
	}
	return size, nil
}

// resolve decides what a measurement will do before any I/O
// (session.Prepare): the target's plan for pats (writes: it will be
// written even if no pattern writes), the cap's, and the engine, which it
// records in opts, with the measured window aligned to the kernel's
// throttle under a cap.
func (o *measureOptions) resolve(g *globalOptions, target string, size int64, pats []results.Pattern, writes bool, opts *iotest.Options) (*target.Plan, *session.CapPlan, error) {
	r := session.Request{Sys: g.sys, Target: target, Size: size, Patterns: pats, Writes: writes, Force: o.Force, AllowDestructive: o.AllowDestructive,
		OpenLoop: o.openLoop, Options: opts, Notice: g.notice}
	if o.enabled() {
		if err := o.precheck(); err != nil {
			return nil, nil, err
		}
		r.Cap = &session.CapRequest{Limit: o.limit, Join: o.Cgroup}
	}
	engine := opts.Engine
	plan, cp, err := session.Prepare(r)
	return plan, cp, engineError(engine, err)
}

// newLiveLine is a status line on standard error, drawn on a terminal.
func newLiveLine(g *globalOptions) *progress.Line { return progress.NewLine(g.stderr, g.stderrTTY) }

// newSweepProgress shows a loop over total patterns on standard error.
func newSweepProgress(g *globalOptions, total, done int, o iotest.Options) *progress.Sweep {
	return progress.NewSweep(g.stderr, g.stderrTTY, total, done, o)
}
