package iotest

import (
	"context"
	"fmt"
	"time"

	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// PreconditionStep is where a precondition is, for progress displays.
type PreconditionStep struct {
	Phase string  // "fill 1/2", "fill 2/2", "random writes"
	Done  float64 // fraction of the phase, 0..1
	IOPS  float64
}

// Precondition brings an SSD to steady state before a measurement, as
// storage benchmarks (SNIA PTS) do: two sequential fills of the whole
// target, then random 4 KiB writes for randomFor. Nothing of it is
// measured. It writes every block: the target must allow writes.
func Precondition(ctx context.Context, t *target.Target, engine string, seed uint64, randomFor time.Duration, progress func(PreconditionStep)) error {
	if !t.Writable() {
		return fmt.Errorf("precondition %s: %w: target was opened read-only", t.Path, target.ErrBadTarget)
	}
	bs := int64(1 << 20)
	for bs > t.Align && t.Size%bs != 0 {
		bs /= 2
	}
	report := func(st PreconditionStep) {
		if progress != nil {
			progress(st)
		}
	}
	fill := results.Pattern{Access: results.Sequential, BlockSize: bs, ReadPct: 0, QueueDepth: 8, Jobs: 1}
	ios := uint64(t.Size / bs)
	for pass := 1; pass <= 2; pass++ {
		phase := fmt.Sprintf("fill %d/2", pass)
		o := Options{Runtime: maxTimeline, Seed: seed, Engine: engine, MaxIOs: ios}
		o.Progress = func(p Progress) {
			report(PreconditionStep{Phase: phase, Done: float64(p.IOs) / float64(ios), IOPS: p.IOPS})
		}
		report(PreconditionStep{Phase: phase})
		r, err := Run(ctx, t, fill, o)
		if err != nil {
			return fmt.Errorf("precondition %s: %w", phase, err)
		}
		report(PreconditionStep{Phase: phase, Done: 1, IOPS: r.Total.IOPS})
	}
	if randomFor <= 0 {
		return nil
	}
	rnd := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 0, QueueDepth: 32, Jobs: 1}
	if t.Align > 4096 {
		rnd.BlockSize = t.Align
	}
	o := Options{Runtime: randomFor, Seed: seed + 1, Engine: engine}
	o.Progress = func(p Progress) {
		report(PreconditionStep{Phase: "random writes", Done: p.Elapsed.Seconds() / randomFor.Seconds(), IOPS: p.IOPS})
	}
	report(PreconditionStep{Phase: "random writes"})
	r, err := Run(ctx, t, rnd, o)
	if err != nil {
		return fmt.Errorf("precondition random writes: %w", err)
	}
	report(PreconditionStep{Phase: "random writes", Done: 1, IOPS: r.Total.IOPS})
	return nil
}
