package iotest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Limits of a pattern. They are part of the user interface: --help quotes them.
const (
	MinBlockSize  = 512
	MaxBlockSize  = 64 << 20
	MaxQueueDepth = 256
	MaxJobs       = 64
)

// ErrBadPattern marks a pattern that cannot run; the message names the field.
var ErrBadPattern = errors.New("invalid pattern")

// FieldError names the pattern field at fault so callers can map it to a
// flag or a profile key.
type FieldError struct {
	Field string // "block_size", "read_pct", "queue_depth", "jobs", "access", "bssplit", "random_distribution"
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }
func (e *FieldError) Unwrap() error { return ErrBadPattern }

// IsField tells whether err is a FieldError about field.
func IsField(err error, field string) bool {
	var fe *FieldError
	return errors.As(err, &fe) && fe.Field == field
}

// ValidatePattern checks a pattern on its own: what the engine can run;
// ValidatePatternFor adds the target's alignment and size.
func ValidatePattern(p results.Pattern) error {
	switch p.Access {
	case results.Random, results.Sequential:
	default:
		return &FieldError{"access", fmt.Sprintf("%q is not random or sequential", p.Access)}
	}
	if p.BlockSize < MinBlockSize || p.BlockSize > MaxBlockSize {
		return &FieldError{"block_size", fmt.Sprintf("%d bytes is outside %s..%s", p.BlockSize, units.FormatSize(MinBlockSize), units.FormatSize(MaxBlockSize))}
	}
	if p.BlockSize%MinBlockSize != 0 {
		return &FieldError{"block_size", fmt.Sprintf("%d bytes is not a multiple of 512", p.BlockSize)}
	}
	if p.ReadPct < 0 || p.ReadPct > 100 {
		return &FieldError{"read_pct", fmt.Sprintf("%d is outside 0..100", p.ReadPct)}
	}
	if p.QueueDepth < 1 || p.QueueDepth > MaxQueueDepth {
		return &FieldError{"queue_depth", fmt.Sprintf("%d is outside 1..%d", p.QueueDepth, MaxQueueDepth)}
	}
	if p.Jobs < 1 || p.Jobs > MaxJobs {
		return &FieldError{"jobs", fmt.Sprintf("%d is outside 1..%d", p.Jobs, MaxJobs)}
	}
	if buf := int64(p.Jobs) * int64(p.QueueDepth) * p.BlockSize; buf > MaxBufferBytes {
		return &FieldError{"block_size", fmt.Sprintf("jobs × queue depth × block size = %s of I/O buffers, more than %s", units.FormatSize(buf), units.FormatSize(MaxBufferBytes))}
	}
	if err := ValidateRate(p); err != nil {
		return err
	}
	return validateMix(p)
}

// validateMix checks a pattern's block-size mix and distribution: they
// parse, are in the canonical form that makes equal patterns ==, and the
// mix's sizes are sizes the engine can run.
func validateMix(p results.Pattern) error {
	if p.BSSplit != "" {
		b, err := results.ParseBSSplit(p.BSSplit)
		if err != nil {
			return &FieldError{"bssplit", mixMsg(err)}
		}
		for _, s := range b.Sizes() {
			if s < MinBlockSize || s > MaxBlockSize || s%MinBlockSize != 0 {
				return &FieldError{"bssplit", fmt.Sprintf("size %s is not a multiple of 512 from %s to %s", units.FormatSize(s), units.FormatSize(MinBlockSize), units.FormatSize(MaxBlockSize))}
			}
		}
		canonical, largest := b.Canonical(p.ReadPct)
		if canonical != p.BSSplit {
			return &FieldError{"bssplit", fmt.Sprintf("%q is not in canonical form %q", p.BSSplit, canonical)}
		}
		if largest != p.BlockSize {
			return &FieldError{"block_size", fmt.Sprintf("%d bytes is not the mix's largest size, %d", p.BlockSize, largest)}
		}
	}
	if p.Distribution != "" {
		d, err := results.ParseDistribution(p.Distribution)
		if err != nil {
			return &FieldError{"random_distribution", mixMsg(err)}
		}
		if d.String() != p.Distribution {
			return &FieldError{"random_distribution", fmt.Sprintf("%q is not in canonical form %q", p.Distribution, d.String())}
		}
		if p.Access != results.Random {
			return &FieldError{"random_distribution", "a skewed distribution applies to random offsets only"}
		}
	}
	return nil
}

// mixSizes are the sizes a pattern issues: its mix's, or its block size.
func mixSizes(p results.Pattern) []int64 {
	if b, err := results.ParseBSSplit(p.BSSplit); p.BSSplit != "" && err == nil {
		return b.Sizes()
	}
	return []int64{p.BlockSize}
}

// ValidatePatternFor checks the pattern against a target's direct-I/O alignment
// and size.
func ValidatePatternFor(p results.Pattern, align int64, size int64) error {
	if err := ValidatePattern(p); err != nil {
		return err
	}
	for _, s := range mixSizes(p) {
		if align > 0 && s%align != 0 {
			field := "block_size"
			if p.BSSplit != "" {
				field = "bssplit"
			}
			return &FieldError{field, fmt.Sprintf("%d bytes is not a multiple of the target's direct-I/O alignment %d", s, align)}
		}
	}
	if size > 0 {
		need := p.BlockSize
		if p.Access == results.Sequential {
			need *= int64(p.Jobs)
		}
		if size < need {
			return &FieldError{"block_size", fmt.Sprintf("target of %s is smaller than %s needed", units.FormatSize(size), units.FormatSize(need))}
		}
	}
	return nil
}

// Options are the run settings shared by every pattern of a run or sweep.
type Options struct {
	Runtime time.Duration // measured window; with Auto, ignored
	// Auto, when set, lets each cell decide its window's length (see Auto).
	Auto   *Auto
	Ramp   time.Duration // I/O before the window, excluded from every statistic
	Seed   uint64        // offsets and read/write draws repeat for the same seed
	Engine string        // "auto", "uring" or "psync"
	// Ring is how the uring engine's rings complete and submit: polled
	// completions, a kernel submission thread (the uring engine only).
	Ring RingMode
	// MaxIOs, when set, ends each job after that many I/Os even if the
	// runtime has not passed (used to write a target a set number of times).
	MaxIOs uint64

	// Progress, when set, is called about once a second from a goroutine
	// of the run with the I/Os completed so far in the current phase.
	Progress func(Progress)
	// Notice receives one-line notices (e.g. the engine fallback).
	Notice func(string)
}

// window is the longest the measured window can last.
func (o Options) window() time.Duration {
	if o.Auto != nil {
		return o.Auto.MaxRuntime
	}
	return o.Runtime
}

// Progress is a live snapshot handed to Options.Progress.
type Progress struct {
	Pattern results.Pattern
	Ramping bool
	Elapsed time.Duration // since the start of the phase
	IOs     uint64        // completed in the phase so far
	IOPS    float64       // over the last interval
}

// Validate checks the options on their own.
func (o Options) Validate() error {
	if o.Auto != nil {
		if err := o.Auto.Validate(); err != nil {
			return err
		}
	} else if o.Runtime <= 0 {
		return &FieldError{"runtime", fmt.Sprintf("%s must be positive", o.Runtime)}
	}
	if o.Ramp < 0 {
		return &FieldError{"ramp", fmt.Sprintf("%s must not be negative", o.Ramp)}
	}
	switch o.Engine {
	case "", EngineAuto, EngineUring, EnginePsync:
	default:
		return &FieldError{"engine", fmt.Sprintf("%q is not one of auto, uring, psync", o.Engine)}
	}
	return o.Ring.Check(o.Engine)
}

// Check refuses a ring mode on an engine without rings, and settings out
// of range.
func (m RingMode) Check(engine string) error {
	switch {
	case m.Plain():
		if m.SQIdle != 0 || m.SQAffine {
			return &FieldError{"sqpoll-idle", "--sqpoll-idle and --sqpoll-cpu set the submission thread of --sqpoll"}
		}
		return nil
	case engine == EnginePsync:
		field := "poll"
		if !m.Poll {
			field = "sqpoll"
		}
		return &FieldError{field, "polled completions and a submission thread are the uring engine's: not with --engine psync"}
	case m.SQIdle < 0 || m.SQIdle > time.Hour:
		return &FieldError{"sqpoll-idle", fmt.Sprintf("%s is outside 0 to 1h", m.SQIdle)}
	case m.SQIdle%time.Millisecond != 0:
		return &FieldError{"sqpoll-idle", fmt.Sprintf("%s: the kernel takes whole milliseconds", m.SQIdle)}
	case m.SQAffine && (m.SQCPU < 0 || m.SQCPU >= runtime.NumCPU()):
		return &FieldError{"sqpoll-cpu", fmt.Sprintf("%d is not a CPU of this machine (0 to %d)", m.SQCPU, runtime.NumCPU()-1)}
	}
	return nil
}

// Engine names.
const (
	EngineAuto  = "auto"
	EngineUring = "uring"
	EnginePsync = "psync"
)

// ApplyMix is p with a block-size mix (fio's bssplit syntax) and an
// offset distribution (fio's random_distribution syntax), each "" for
// none, in canonical form and checked on its own (ValidatePattern). With a
// mix, p's BlockSize becomes the mix's largest size. A field at fault is a
// FieldError, "bssplit" or "random_distribution".
func ApplyMix(p results.Pattern, bssplit, distribution string) (results.Pattern, error) {
	p, err := p.WithBSSplit(bssplit)
	if err != nil {
		return p, &FieldError{"bssplit", mixMsg(err)}
	}
	if p, err = p.WithDistribution(distribution); err != nil {
		return p, &FieldError{"random_distribution", mixMsg(err)}
	}
	return p, ValidatePattern(p)
}

// mixMsg is a mix's parse error without the sentinel's words: the
// FieldError names the field instead.
func mixMsg(err error) string {
	return strings.TrimPrefix(err.Error(), results.ErrBadMix.Error()+": ")
}
