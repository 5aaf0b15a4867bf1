package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// CapRequest is what a measurement runs under: a fresh cgroup with
// Limit, or the existing cgroup Join under the limits configured there.
// The caller has parsed the cap once into Limit; its device is filled in
// from the target.
type CapRequest struct {
	Limit *cgroup.Limit
	Join  string
}

// CapPlan is the cap decided before any I/O: the controller, the limit
// in force and, once the session is open, its cgroup.
type CapPlan struct {
	ctrl  cgroup.Controller
	limit cgroup.Limit
	join  string
	group *cgroup.Group // made (or joined) by create
}

// DetectCgroups finds the host's I/O controller, and this process's
// cgroup in sys; tests replace it to put another v2 controller in io's
// place (see cgroup.DetectFor).
var DetectCgroups = func(sys sysfs.FS) (cgroup.Controller, error) { return cgroup.Detect(sys, cgroup.DefaultRoot) }

// capInputError is err as bad input of the option that asked for the
// cap: the cap's own, or the cgroup to join.
func capInputError(req CapRequest, err error) error {
	if req.Join != "" {
		return fault.Input("cgroup", "%w", err)
	}
	return fault.Input("cap", "%w", err)
}

// planCap checks a cap against the target and the cgroup tree, touching
// nothing: a tree that cannot take iomatrix's cgroup (read-only, without
// the io controller, or where the no-internal-process rule of v2 forbids
// it) is refused here, before any I/O. Notices (a partition's disk, a
// joined cgroup without limits or under a stricter ancestor) go to
// notice.
func planCap(sys sysfs.FS, req CapRequest, target string, notice func(string)) (*CapPlan, error) {
	cp := &CapPlan{join: req.Join}
	if req.Limit != nil {
		cp.limit = *req.Limit
	}
	ctrl, err := DetectCgroups(sys)
	if err != nil {
		return nil, cgroupError(err)
	}
	cp.ctrl = ctrl
	dev, msg, err := cgroup.ResolveDevice(sys, cgroup.TargetPath(target))
	if errors.Is(err, cgroup.ErrPassthrough) {
		return nil, capInputError(req, err)
	}
	if err != nil {
		return nil, fault.AsInput(err)
	}
	if msg != "" {
		notice(msg)
	}
	cp.limit.Device = dev
	if cp.join == "" {
		if _, err := ctrl.Placement(); err != nil {
			return nil, cgroupError(err)
		}
		return cp, nil
	}
	grp, err := cgroup.Join(ctrl, cp.join, dev)
	if err != nil {
		return nil, fault.Input("cgroup", "%w", err)
	}
	cp.limit = grp.Limit
	if cp.limit.Empty() {
		notice(fmt.Sprintf("cgroup %s has no I/O limit on %s: measuring it uncapped", grp.Path, dev))
	}
	for key, from := range grp.From {
		notice(fmt.Sprintf("cgroup %s: its ancestor %s sets a stricter %s; the limit in force is %s", grp.Path, from, key, cp.limit))
	}
	return cp, nil
}

// cgroupError puts a cgroup tree's refusal in the terms of the exit
// status: what the host cannot do is bad input, what it does not let
// this process do is a matter of privilege.
func cgroupError(err error) error {
	switch {
	case errors.Is(err, unix.EROFS), errors.Is(err, fs.ErrPermission):
		return &fault.PrivilegeError{Err: err}
	case errors.Is(err, cgroup.ErrInternalProcess), errors.Is(err, cgroup.ErrControllerMissing),
		errors.Is(err, cgroup.ErrNoThrottling), errors.Is(err, cgroup.ErrNoIOController):
		return fault.AsInput(err)
	}
	return err
}

// create makes (or joins) the cgroup. It comes before the target is laid
// out or measured, so that a refusal of the tree costs no I/O; release
// must follow on every path.
func (cp *CapPlan) create() error {
	if cp == nil {
		return nil
	}
	var err error
	if cp.join != "" {
		cp.group, err = cgroup.Join(cp.ctrl, cp.join, cp.limit.Device)
	} else {
		cp.group, err = cgroup.Create(cp.ctrl, cp.limit)
	}
	return cgroupError(err)
}

// release deletes the cgroup create made (a joined one stays), after the
// child has gone; a cgroup that cannot go (processes left in it) is
// reported, never dropped silently.
func (cp *CapPlan) release(notice func(string)) {
	if cp == nil || cp.group == nil {
		return
	}
	if err := cp.group.Delete(); err != nil {
		notice(fmt.Sprintf("warning: %v", err))
	}
}

// capRunner runs patterns in a child inside the cgroup.
type capRunner struct {
	group *cgroup.Group
	child *childRunner
	// lastActive is when the group last did I/O or had its limits set: a
	// pattern starts ThrottleQuiet after it, so that the kernel's throttle
	// begins a fresh slice with the pattern's first I/O (see
	// cgroup.AlignWindow).
	lastActive time.Time
}

// Run runs one pattern in the cgroup and records the kernel's counts.
func (s *capRunner) Run(ctx context.Context, p results.Pattern, o iotest.Options) (results.Result, error) {
	return s.run(ctx, time.Time{}, p, o)
}

// run runs p at the moment at (zero: at once), but not before the group
// has been quiet for cgroup.ThrottleQuiet.
func (s *capRunner) run(ctx context.Context, at time.Time, p results.Pattern, o iotest.Options) (results.Result, error) {
	if quiet := s.lastActive.Add(cgroup.ThrottleQuiet); at.IsZero() || at.Before(quiet) {
		if err := sleepCtx(ctx, time.Until(quiet)); err != nil {
			return results.Result{}, err
		}
		if !at.IsZero() {
			at = time.Time{}
		}
	}
	before, cerr := s.group.Counters()
	res, err := s.child.runAt(ctx, at, p, o)
	s.lastActive = time.Now()
	after, cerr2 := s.group.Counters()
	if cerr == nil && cerr2 == nil && res.Name != "" {
		res.CgroupIOs = &results.Counts{Reads: after.ReadIOs - before.ReadIOs, Writes: after.WriteIOs - before.WriteIOs}
	}
	return res, err
}

// sleepCtx waits for d, or less if ctx ends first (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Device is the device the cap applies to: the target's disk (or the
// partition's, as cgroup.ResolveDevice found it).
func (cp *CapPlan) Device() sysfs.DevNum { return cp.limit.Device }
