package rehearse

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// Request is a rehearsal as asked; Plan checks it and decides the rest.
type Request struct {
	// Sys is where the target's disk and this process's cgroup are read.
	Sys sysfs.FS
	// Target is the file or block device the systems run on, as given;
	// Size is a file's (0: a new file gets the default, an existing one
	// keeps its own).
	Target string
	Size   int64
	// Force lays out an existing file that iomatrix did not create;
	// AllowDestructive lets systems that write do so on a block device.
	Force, AllowDestructive bool
	Workload                fit.Workload
	// WorkloadFile and LookupFile name the workload and the results file
	// of the lookup, for the document and the notices.
	WorkloadFile, LookupFile string
	// Lookup is the lookup's verdict on the workload's sum, and
	// LookupDoc the results document it judged.
	Lookup    fit.Verdict
	LookupDoc *results.Document
	// Arrival is how each system's I/Os arrive: results.ArrivalUniform
	// or results.ArrivalPoisson.
	Arrival string
	// WithCaps runs each system in a cgroup of its own under the cap the
	// lookup proposes (Limits), when the lookup proposes any (the sum
	// fits its cell).
	WithCaps bool
	// Options are the window, engine and seed. Plan checks them,
	// resolves the engine, and aligns the window to the kernel's
	// throttle under caps.
	Options iotest.Options
	// Shape is how the systems' observed shapes are replayed (a version
	// 2 workload file).
	Shape ShapeOptions
	// DefaultWindow sets Options.Runtime to Window's (or to the
	// timelines' length, within MinWindow and MaxWindow); RandomSeed draws
	// Options.Seed at random (recorded in the document).
	DefaultWindow, RandomSeed bool
	// Out is the results file; "" names one in the current directory
	// from the time.
	Out string
	// Notice receives what the user should know (required).
	Notice func(string)
	// Layout, when set, is told the progress of laying out a file
	// target; ChildStderr, when set, receives the standard error of the
	// systems' processes under caps.
	Layout      func(done, total int64)
	ChildStderr io.Writer
}

// Config is a rehearsal as Plan decided it: the request with its
// options and results file settled, the target's plan, the systems'
// streams and caps.
type Config struct {
	Request
	// TargetPlan is the target's plan, which Run lays out and opens.
	TargetPlan *target.Plan
	// Patterns are the systems' streams (Patterns, shaped), in the
	// workload's order, and Shaped their shapes as replayed.
	Patterns []results.Pattern
	Shaped   []Shaped
	// Caps, when set, are the systems' cgroups (session.PlanStreamCaps),
	// in the workload's order; nil runs every system uncapped.
	Caps []*session.CapPlan
}

// Plan decides the rehearsal of r before any I/O, touching nothing: the
// window, the seed and the engine (a window or a ramp out of range is
// the engine's FieldError), the right to make cgroups for caps, the
// results file (bad input of the option "out" when it could not be
// saved), the target's plan (every stream checked against it: a stream
// that the target cannot run is bad input of the option "target"), and
// the systems' caps.
func Plan(r Request) (*Config, error) {
	c := &Config{Request: r, Patterns: Patterns(r.Workload, r.Arrival)}
	o := &c.Options
	shaped, err := shapeSystems(r.Workload, c.Patterns, r.Shape)
	if err != nil {
		if pattern.IsField(err, "speed") {
			return nil, err
		}
		return nil, workloadError(r.WorkloadFile, "", err)
	}
	c.Shaped = shaped
	var longest time.Duration
	for i, sh := range shaped {
		c.Patterns[i] = sh.Pattern
		if sh.Profile != nil {
			if err := sh.Profile.Check(sh.Pattern); err != nil {
				return nil, workloadError(r.WorkloadFile, r.Workload.Systems[i].Name, err)
			}
			longest = max(longest, sh.Profile.Duration())
		}
	}
	if r.DefaultWindow {
		o.Runtime = Window(r.Workload)
		if longest > 0 {
			// The timelines whole, within the window's bounds, and at
			// least what the bounds need.
			o.Runtime = max(o.Runtime, min(longest.Round(time.Second), MaxWindow))
		}
	}
	if r.RandomSeed {
		o.Seed = rand.Uint64() >> 11 // fits a JSON number exactly
	}
	o.Notice = r.Notice
	if err := c.check(); err != nil {
		return nil, err
	}
	c.TargetPlan, _, err = session.Prepare(session.Request{Sys: r.Sys, Target: r.Target, Size: r.Size, Patterns: c.Patterns, Force: r.Force,
		AllowDestructive: r.AllowDestructive, Options: o, Notice: r.Notice})
	if errors.As(err, new(*pattern.FieldError)) && !isRunSetting(err) {
		return nil, fault.Input("target", "%w", err)
	}
	if err != nil {
		return nil, err
	}
	if r.WithCaps && r.Lookup.Fits {
		if c.Caps, err = session.PlanStreamCaps(r.Sys, r.Target, Limits(r.Workload, r.Lookup), o, r.Notice); err != nil {
			return nil, err
		}
	}
	if c.Out == "" {
		c.Out = fmt.Sprintf("iomatrix-rehearsal-%s.json", time.Now().Format("20060102-150405"))
	}
	return c, nil
}

// workloadError is bad input of the workload file at path, said after
// the option's name as a fault in the file is (fit.ReadWorkload), of its
// system when one is named.
func workloadError(path, system string, err error) error {
	if system != "" {
		err = fmt.Errorf("system %s: %w", system, err)
	}
	return fault.Mentions("", func(n fault.Namer) string { return n("workload") + " " + path + ": " + err.Error() })
}

// isRunSetting tells whether err is the fault of a setting of the run
// (its engine, its window), which is the caller's to name, rather than
// of a stream that the target cannot hold.
func isRunSetting(err error) bool {
	return pattern.IsField(err, "engine") || pattern.IsField(err, "runtime") || pattern.IsField(err, "ramp")
}

// check refuses, before the target is planned, options out of range,
// caps without the right to make cgroups, and a results file that could
// not be saved.
func (c *Config) check() error {
	if err := c.Options.Validate(); err != nil {
		return err
	}
	if c.WithCaps && os.Geteuid() != 0 {
		return fault.Privilege("%w", fault.NewMention(func(n fault.Namer) string {
			return n("with-caps") + " needs root or CAP_SYS_ADMIN (cgroups are created through cgroupfs)"
		}))
	}
	if err := results.CheckSavable(c.Out); err != nil {
		return fault.Input("out", "%w", err)
	}
	return nil
}
