package rehearse

import (
	"errors"
	"fmt"
	"math/rand/v2"
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
	// LookupDevice the device (MAJ:MIN) its results file measured, ""
	// when it does not say.
	Lookup       fit.Verdict
	LookupDevice string
	// Arrival is how each system's I/Os arrive: results.ArrivalUniform
	// or results.ArrivalPoisson.
	Arrival string
	// WithCaps runs each system in a cgroup of its own under the cap the
	// lookup proposes (Limits), when the lookup proposes any (the sum
	// fits its cell).
	WithCaps bool
	// Options are the window, engine and seed: a Runtime of 0 is
	// Window's. Plan resolves the engine, and aligns the window to the
	// kernel's throttle under caps.
	Options iotest.Options
	// RandomSeed draws Options.Seed at random (recorded in the document).
	RandomSeed bool
	// Out is the results file; "" names one in the current directory
	// from the time.
	Out string
	// Notice receives what the user should know (required).
	Notice func(string)
}

// Config is a rehearsal as Plan decided it: the request with its
// options and results file settled, the systems' streams and caps; the
// caller opens the session.
type Config struct {
	Request
	// Patterns are the systems' streams (Patterns), in the workload's
	// order.
	Patterns []results.Pattern
	// Caps, when set, are the systems' cgroups (session.PlanStreamCaps),
	// in the workload's order; nil runs every system uncapped.
	Caps []*session.CapPlan
	// Session is open on the target's plan, laid out.
	Session *session.Session
}

// Plan decides the rehearsal of r before any I/O, touching nothing: the
// window, the seed and the engine, the target's plan (every stream
// checked against it), the systems' caps and the results file. It
// returns the target's plan, which the caller opens into
// Config.Session before Run. A stream that the target cannot run is
// bad input of the option "target".
func Plan(r Request) (*target.Plan, *Config, error) {
	c := &Config{Request: r, Patterns: Patterns(r.Workload, r.Arrival)}
	o := &c.Options
	if o.Runtime == 0 {
		o.Runtime = Window(r.Workload)
	}
	if r.RandomSeed {
		o.Seed = rand.Uint64() >> 11 // fits a JSON number exactly
	}
	o.Notice = r.Notice
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	plan, _, err := session.Prepare(session.Request{Sys: r.Sys, Target: r.Target, Size: r.Size, Patterns: c.Patterns, Force: r.Force,
		AllowDestructive: r.AllowDestructive, Options: o, Notice: r.Notice})
	if errors.As(err, new(*pattern.FieldError)) {
		return nil, nil, fault.Input("target", "%w", err)
	}
	if err != nil {
		return nil, nil, err
	}
	if r.WithCaps && r.Lookup.Fits {
		if c.Caps, err = session.PlanStreamCaps(r.Sys, r.Target, Limits(r.Workload, r.Lookup), o, r.Notice); err != nil {
			return nil, nil, err
		}
	}
	if c.Out == "" {
		c.Out = fmt.Sprintf("iomatrix-rehearsal-%s.json", time.Now().Format("20060102-150405"))
	}
	return plan, c, nil
}
