package isolate

import (
	"context"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// Asked is an isolation test as it is asked, before Check.
type Asked struct {
	// Control is how the aggressor is held: "iocost" (the kernel's
	// proportional controller, at the pair's weights), or else a cap
	// (the session's, in a cgroup of the aggressor's own).
	Control string
	// Victim and Aggressor are pattern specs (pattern.ParseSpec).
	Victim, Aggressor string
	// Auto says each pattern was asked to run until its IOPS are steady
	// (iotest.Auto): refused, the pair shares one fixed window.
	Auto         bool
	MinIsolation float64
	// Cap is the aggressor's limits, as cgroup.ParseCap reads them: the
	// cap control's, required (the caller puts the session under it);
	// under iocost, the io.max phase's, "" to search for it.
	Cap string
	// Cgroup is an existing cgroup asked to run in: refused, the pair's
	// cgroups are fresh.
	Cgroup string
	// Under iocost: the pair's io.weight (ParseWeights), the io.max
	// phases a search may run (1 to 20), and where the target's disk and
	// its iocost are read (FindIOCost).
	Weights            string
	IOMaxTries         int
	Sys                sysfs.FS
	CgroupRoot, Target string
	Notice             func(string)
}

// Test is an isolation test that Check found can run: its Options are
// the caller's to set (the window, the engine) before Run.
type Test struct {
	Config
	// device is the target's disk with iocost enabled, and iocost the
	// settings of its phases; nil under a cap.
	device *IOCostDevice
	iocost IOCostConfig
}

// Check refuses, before any I/O, a test that cannot run as asked: no
// cap, or an existing cgroup, for the cap control; a window of each
// pattern's own; a bad pattern spec; and under iocost, bad weights, a bad
// io.max, a search of too few or too many phases, or a target's disk
// where iocost cannot run or is not enabled (FindIOCost's errors). Bad
// input names the option at fault ("cap", "cgroup", "runtime",
// "victim", "aggressor", "weight", "iomax-tries").
func Check(a Asked) (*Test, error) {
	if err := a.checkControl(); err != nil {
		return nil, err
	}
	if a.Auto {
		return nil, fault.Input("runtime", "auto is not for isolate: the victim and the aggressor must share one fixed window")
	}
	t := &Test{Config: Config{MinIsolation: a.MinIsolation, Notice: a.Notice}}
	var err error
	if t.Victim, err = parseSpec("victim", a.Victim); err != nil {
		return nil, err
	}
	if t.Aggressor, err = parseSpec("aggressor", a.Aggressor); err != nil {
		return nil, err
	}
	if a.Control == "iocost" {
		if err := a.checkIOCost(t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// checkControl refuses the cgroups a control cannot run with, and a
// search of too few or too many phases.
func (a Asked) checkControl() error {
	switch {
	case a.Control == "iocost" && a.Cgroup != "":
		return fault.Input("cgroup", "isolate puts the victim and the aggressor in fresh cgroups of their own")
	case a.IOMaxTries < 0 || a.IOMaxTries > 20 || a.Control == "iocost" && a.IOMaxTries < 1:
		// Out of range whatever the control: 0 is a cap test's "not given".
		return fault.Input("iomax-tries", "%d: give 1 to 20 phases", a.IOMaxTries)
	case a.Control == "iocost":
		return nil
	case a.Cap == "" && a.Cgroup == "":
		return fault.Mentions("cap", func(n fault.Namer) string {
			return "required: the limits to put on the aggressor (e.g. " + n("cap") + " wiops=500)"
		})
	case a.Cgroup != "":
		return fault.Mentions("cgroup", func(n fault.Namer) string {
			return "isolate caps the aggressor in a fresh cgroup of its own: give " + n("cap")
		})
	}
	return nil
}

// parseSpec is the pattern of spec, given as option: a bad spec is bad
// input whose message leads with the option.
func parseSpec(option, spec string) (results.Pattern, error) {
	ps, err := pattern.ParseSpec(spec)
	if err != nil {
		return results.Pattern{}, fault.AsInput(fault.NewMention(func(n fault.Namer) string { return n(option) + " " + err.Error() }))
	}
	return ps.Pattern, nil
}

// checkIOCost reads the weights and the io.max of t's iocost phases, and
// finds iocost on the target's disk.
func (a Asked) checkIOCost(t *Test) error {
	c := &t.iocost
	var err error
	if c.VictimWeight, c.AggressorWeight, err = ParseWeights(a.Weights); err != nil {
		return err
	}
	if a.Cap != "" {
		l, err := cgroup.ParseCap(a.Cap)
		if err != nil {
			return fault.Input("cap", "%w", err)
		}
		c.Cap = &l
	}
	c.Searches = a.IOMaxTries
	t.device, err = FindIOCost(a.Sys, a.CgroupRoot, a.Target)
	return err
}

// Run starts s, a session opened on the target (under a cap, in the
// cap's cgroup; under iocost, in a cgroup without limits, the
// aggressor's), and measures the test on it: Run or RunIOCost.
func (t *Test) Run(ctx context.Context, s *session.Session) (*results.IsolateReport, error) {
	if err := s.Start(); err != nil {
		return nil, err
	}
	if t.device == nil {
		return Run(ctx, s, t.Config)
	}
	c := t.iocost
	c.Config = t.Config
	return t.device.run(ctx, s, c)
}
