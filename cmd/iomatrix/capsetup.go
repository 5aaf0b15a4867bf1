package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
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
	join  string // --cgroup
}

// plan checks the cap flags against the target, touching nothing.
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
	ctrl, err := cgroup.Detect(cgroup.DefaultRoot)
	if err != nil {
		return nil, err
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
	if cp.join != "" {
		grp, err := cgroup.Join(ctrl, cp.join, dev)
		if err != nil {
			return nil, usagef("--cgroup: %w", err)
		}
		cp.limit = grp.Limit
		if cp.limit.Empty() {
			fmt.Fprintf(g.stderr, "iomatrix: cgroup %s has no I/O limit on %s: measuring it uncapped\n", grp.Path, dev)
		}
	}
	return cp, nil
}

// capSession is a cgroup with a worker inside it.
type capSession struct {
	group  *cgroup.Group
	runner *workerRunner
	// lastActive is when the group last did I/O or had its limits set: a
	// pattern starts ThrottleQuiet after it, so that the kernel's throttle
	// begins a fresh slice with the pattern's first I/O (see
	// cgroup.AlignWindow).
	lastActive time.Time
}

// start creates (or joins) the cgroup and starts the worker in it. close
// must run on every path: it stops the worker and deletes the cgroup.
func (cp *capPlan) start(g *globalOptions, t workerTarget) (*capSession, error) {
	var grp *cgroup.Group
	var err error
	if cp.join != "" {
		grp, err = cgroup.Join(cp.ctrl, cp.join, cp.limit.Device)
	} else {
		grp, err = cgroup.Create(cp.ctrl, cp.limit)
	}
	if err != nil {
		return nil, err
	}
	s := &capSession{group: grp, lastActive: time.Now()}
	notice := func(msg string) { fmt.Fprintf(g.stderr, "iomatrix: %s\n", msg) }
	s.runner, err = startWorker(g.stderr, t, grp.AddProc, notice)
	if err != nil {
		grp.Delete()
		return nil, err
	}
	return s, nil
}

// Run runs one pattern in the cgroup and records the kernel's counts.
func (s *capSession) Run(ctx context.Context, p iotest.Pattern, o iotest.Options) (iotest.Result, error) {
	if err := sleepCtx(ctx, time.Until(s.lastActive.Add(cgroup.ThrottleQuiet))); err != nil {
		return iotest.Result{}, err
	}
	before, cerr := s.group.Counters()
	res, err := s.runner.Run(ctx, p, o)
	s.lastActive = time.Now()
	after, cerr2 := s.group.Counters()
	if cerr == nil && cerr2 == nil && res.Name != "" {
		res.CgroupIOs = &iotest.Completed{Reads: after.ReadIOs - before.ReadIOs, Writes: after.WriteIOs - before.WriteIOs}
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
	s.runner.Close()
	return s.group.Delete()
}

// info is the cap object of the results file.
func (s *capSession) info() *iotest.Cap {
	l := s.group.Limit
	return &iotest.Cap{CgroupVersion: s.group.Version(), Cgroup: s.group.Path, Device: l.Device.String(),
		ReadIOPS: l.ReadIOPS, WriteIOPS: l.WriteIOPS, ReadBPS: l.ReadBPS, WriteBPS: l.WriteBPS}
}
