package iotest

import (
	"runtime"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

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
	// LatLog, when it has a writer, receives the latency of every I/O of
	// the window (see LatLog).
	LatLog LatLog
	// Profile, when set, shapes an open-loop pattern's rates over time
	// (see RateProfile).
	Profile *RateProfile

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
		return pattern.Fieldf("runtime", "%s must be positive", o.Runtime)
	}
	if o.Ramp < 0 {
		return pattern.Fieldf("ramp", "%s must not be negative", o.Ramp)
	}
	if err := o.LatLog.check(o); err != nil {
		return err
	}
	switch o.Engine {
	case "", EngineAuto, EngineUring, EnginePsync:
	default:
		return pattern.Fieldf("engine", "%q is not one of auto, uring, psync", o.Engine)
	}
	return o.Ring.Check(o.Engine)
}

// Check refuses a ring mode on an engine without rings, and settings out
// of range.
func (m RingMode) Check(engine string) error {
	switch {
	case m.Plain():
		if m.SQIdle != 0 || m.SQAffine {
			return pattern.Mention("sqpoll-idle", func(n fault.Namer) string {
				return n("sqpoll-idle") + " and " + n("sqpoll-cpu") + " set the submission thread of " + n("sqpoll")
			})
		}
		return nil
	case engine == EnginePsync:
		field := "poll"
		if !m.Poll {
			field = "sqpoll"
		}
		return pattern.Mention(field, func(n fault.Namer) string {
			return "polled completions and a submission thread are the uring engine's: not with " + n("engine") + " psync"
		})
	case m.SQIdle < 0 || m.SQIdle > time.Hour:
		return pattern.Fieldf("sqpoll-idle", "%s is outside 0 to 1h", m.SQIdle)
	case m.SQIdle%time.Millisecond != 0:
		return pattern.Fieldf("sqpoll-idle", "%s: the kernel takes whole milliseconds", m.SQIdle)
	case m.SQAffine && (m.SQCPU < 0 || m.SQCPU >= runtime.NumCPU()):
		return pattern.Fieldf("sqpoll-cpu", "%d is not a CPU of this machine (0 to %d)", m.SQCPU, runtime.NumCPU()-1)
	}
	return nil
}

// Engine names.
const (
	EngineAuto  = "auto"
	EngineUring = "uring"
	EnginePsync = "psync"
)
