package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// capOptions are the flags that put a workload under a cgroup I/O cap.
type capOptions struct {
	Cap    string
	Cgroup string
}

func (o *capOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Cap, "cap", "", "run under a fresh cgroup with these I/O limits: riops=N,wiops=N,rbps=SIZE,wbps=SIZE (any subset)")
	f.StringVar(&o.Cgroup, "cgroup", "", "run inside this existing cgroup (e.g. a container's) under the limits configured there")
}

func (o *capOptions) enabled() bool { return o.Cap != "" || o.Cgroup != "" }

// privilegeError marks a refusal for lack of privilege: exit status 4.
type privilegeError struct{ msg string }

func (e privilegeError) Error() string { return e.msg }

// precheck validates the flags and the privilege, before anything else
// is looked at.
func (o *capOptions) precheck() error {
	if !o.enabled() {
		return nil
	}
	if o.Cap != "" && o.Cgroup != "" {
		return usagef("--cap and --cgroup together: give one (a fresh capped cgroup, or an existing one)")
	}
	if o.Cap != "" {
		if _, err := cgroup.ParseCap(o.Cap); err != nil {
			return usagef("--cap: %w", err)
		}
	}
	if os.Geteuid() != 0 {
		flag := "--cap"
		if o.Cap == "" {
			flag = "--cgroup"
		}
		return privilegeError{flag + " needs root or CAP_SYS_ADMIN (cgroups are created and joined through cgroupfs)"}
	}
	return nil
}

// capPlan is the cap decided before any I/O.
type capPlan struct {
	ctrl  cgroup.Controller
	limit cgroup.Limit
	join  string        // --cgroup
	group *cgroup.Group // made (or joined) by create
}

// detectCgroups finds the host's I/O controller; tests replace it to put
// another v2 controller in io's place (see cgroup.DetectFor).
var detectCgroups = func() (cgroup.Controller, error) { return cgroup.Detect(cgroup.DefaultRoot) }

// plan checks the cap flags against the target and the cgroup tree,
// touching nothing: a tree that cannot take iomatrix's cgroup (read-only,
// without the io controller, or where the no-internal-process rule of v2
// forbids it) is refused here, before any I/O.
func (o *capOptions) plan(g *globalOptions, target string) (*capPlan, error) {
	if !o.enabled() {
		return nil, nil
	}
	if err := o.precheck(); err != nil {
		return nil, err
	}
	cp := &capPlan{join: o.Cgroup}
	if o.Cap != "" {
		cp.limit, _ = cgroup.ParseCap(o.Cap) // checked by precheck
	}
	ctrl, err := detectCgroups()
	if err != nil {
		return nil, cgroupError(err)
	}
	cp.ctrl = ctrl
	// A file that does not exist yet will live on its directory's device.
	where := target
	if _, err := os.Stat(where); errors.Is(err, os.ErrNotExist) {
		where = filepath.Dir(target)
	}
	dev, notice, err := cgroup.ResolveDevice(sysfs.Default(), where)
	if err != nil {
		return nil, usageError{err}
	}
	if notice != "" {
		fmt.Fprintf(g.stderr, "iomatrix: %s\n", notice)
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
		return nil, usagef("--cgroup: %w", err)
	}
	cp.limit = grp.Limit
	if cp.limit.Empty() {
		fmt.Fprintf(g.stderr, "iomatrix: cgroup %s has no I/O limit on %s: measuring it uncapped\n", grp.Path, dev)
	}
	for key, from := range grp.From {
		fmt.Fprintf(g.stderr, "iomatrix: cgroup %s: its ancestor %s sets a stricter %s; the limit in force is %s\n", grp.Path, from, key, cp.limit)
	}
	return cp, nil
}

// cgroupError puts a cgroup tree's refusal in the terms of the exit
// status: what the host cannot do is bad input (2), what it does not let
// this process do is a matter of privilege (4).
func cgroupError(err error) error {
	switch {
	case errors.Is(err, unix.EROFS), errors.Is(err, fs.ErrPermission):
		return privilegeError{err.Error()}
	case errors.Is(err, cgroup.ErrInternalProcess), errors.Is(err, cgroup.ErrControllerMissing),
		errors.Is(err, cgroup.ErrNoThrottling), errors.Is(err, cgroup.ErrNoIOController):
		return usageError{err}
	}
	return err
}

// create makes (or joins) the cgroup. It comes before the target is laid
// out or measured, so that a refusal of the tree costs no I/O; release
// must follow on every path.
func (cp *capPlan) create() error {
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
func (cp *capPlan) release(g *globalOptions) {
	if cp == nil || cp.group == nil {
		return
	}
	if err := cp.group.Delete(); err != nil {
		fmt.Fprintf(g.stderr, "iomatrix: warning: %v\n", err)
	}
}

// capSession is a cgroup with a child inside it.
type capSession struct {
	group  *cgroup.Group
	runner *childRunner
	// lastActive is when the group last did I/O or had its limits set: a
	// pattern starts ThrottleQuiet after it, so that the kernel's throttle
	// begins a fresh slice with the pattern's first I/O (see
	// cgroup.AlignWindow).
	lastActive time.Time
}

// start starts the child in the cgroup create made. Close must run on
// every path: it stops the child (the cgroup goes with release).
func (cp *capPlan) start(g *globalOptions, t childTarget) (*capSession, error) {
	s := &capSession{group: cp.group, lastActive: time.Now()}
	notice := func(msg string) { fmt.Fprintf(g.stderr, "iomatrix: %s\n", msg) }
	var err error
	s.runner, err = startChild(g.stderr, t, cp.group.AddProc, notice)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs one pattern in the cgroup and records the kernel's counts.
func (s *capSession) Run(ctx context.Context, p results.Pattern, o iotest.Options) (results.Result, error) {
	if err := sleepCtx(ctx, time.Until(s.lastActive.Add(cgroup.ThrottleQuiet))); err != nil {
		return results.Result{}, err
	}
	before, cerr := s.group.Counters()
	res, err := s.runner.Run(ctx, p, o)
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

func (s *capSession) Close() error {
	return s.runner.Close()
}

// info is the cap object of the results file.
func (s *capSession) info() *results.Cap {
	return s.group.Limit.Record(s.group.Version(), s.group.Path)
}
