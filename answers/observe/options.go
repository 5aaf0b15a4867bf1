package observe

import (
	"fmt"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// Options are an observation's settings as the user gives them; Config
// checks them, and the sources they name, before any sampling.
type Options struct {
	Interval, Duration, Window, SaveEvery time.Duration
	// SaveEveryGiven says SaveEvery was asked for: shorter than Interval
	// it is then refused, where the default becomes Interval.
	SaveEveryGiven bool
	// Devices are the devices asked for (ResolveDevices); none: every
	// real disk, or every whole device with AllDevices.
	Devices                []string
	AllDevices, Partitions bool
	// Cgroups is "auto" (Discover finds the systems) or empty; Cgroup
	// names cgroups one by one, PATH[=NAME] (ParseCgroupSpec).
	Cgroups string
	Cgroup  []string
	// MySQL and Postgres are the database sources (OpenDatabases),
	// whose servers' cgroups are read where the host has an I/O
	// controller.
	MySQL, Postgres  []string
	EnableV1Counters bool
	// SysFS, ProcFS and CgroupFS are where sysfs, procfs and cgroupfs
	// are mounted (a container observing its host: the host's, mounted
	// elsewhere).
	SysFS, ProcFS, CgroupFS string
	// Out is the document's file; empty: iomatrix-observe-TIMESTAMP.json.
	Out string
}

// Config checks every option and the sources they name (procfs's
// diskstats, the devices, the cgroup controller, each cgroup) and
// returns the observation's configuration, its databases not yet open
// (Config.OpenDatabases). Bad input is a fault.InputError naming the
// option at fault.
func (o Options) Config() (Config, error) {
	if err := o.checkSchedule(); err != nil {
		return Config{}, err
	}
	if !o.SaveEveryGiven && o.SaveEvery < o.Interval {
		o.SaveEvery = o.Interval // a save per sample: there is nothing newer to save
	}
	if o.Out == "" {
		o.Out = fmt.Sprintf("iomatrix-observe-%s.json", time.Now().Format("20060102-150405"))
	}
	fs := sysfs.NewFS(o.SysFS, o.ProcFS)
	cfg := Config{FS: fs, Interval: o.Interval, Duration: o.Duration, Window: o.Window,
		SaveEvery: o.SaveEvery, Out: o.Out, AutoCgroups: o.Cgroups == "auto", DeviceArgs: o.Devices, EnableV1Counters: o.EnableV1Counters,
		Devices: DeviceSelection{All: o.AllDevices, Partitions: o.Partitions}}
	if err := fs.CheckProc(); err != nil {
		return Config{}, fault.Input("procfs", "%w", err)
	}
	if err := fs.CheckSys(); err != nil {
		return Config{}, fault.Input("sysfs", "%w", err)
	}
	if len(o.Devices) > 0 {
		devs, err := ResolveDevices(fs, o.Devices)
		if err != nil {
			return Config{}, fault.AsInput(err)
		}
		cfg.Devices.Named = devs
	} else if err := o.checkSomething(fs, cfg.Devices); err != nil {
		return Config{}, err
	}
	if cfg.AutoCgroups || len(o.Cgroup) > 0 || len(o.MySQL) > 0 || len(o.Postgres) > 0 {
		ctrl, err := cgroup.Detect(fs, o.CgroupFS)
		switch {
		case err == nil:
			cfg.Ctrl = ctrl
		case cfg.AutoCgroups:
			return Config{}, fault.AsInput(&sourceError{"cgroups", "auto", err})
		case len(o.Cgroup) > 0:
			return Config{}, fault.Input("cgroup", "%w", err)
		}
	}
	if o.EnableV1Counters && cfg.Ctrl.Version != 1 {
		return Config{}, fault.Mentions("v1-enable-counters", func(n fault.Namer) string {
			return fmt.Sprintf("only for cgroup v1, with %s or %s (this host's I/O controller: %s)", n("cgroup"), n("cgroups"), controllerName(cfg.Ctrl))
		})
	}
	for _, s := range o.Cgroup {
		spec, err := ParseCgroupSpec(cfg.Ctrl, s)
		if err != nil {
			return Config{}, fault.Input("cgroup", "%w", err)
		}
		if err := checkTwice(cfg.Cgroups, spec); err != nil {
			return Config{}, fault.Input("cgroup", "%w", err)
		}
		cfg.Cgroups = append(cfg.Cgroups, spec)
	}
	return cfg, nil
}

// checkTwice refuses a cgroup given before, or one within or around it,
// and a system's name given before: the I/O would be counted twice in the
// sum that fit judges.
func checkTwice(had []CgroupSpec, spec CgroupSpec) error {
	for _, h := range had {
		switch {
		case h.Path == spec.Path:
			return fmt.Errorf("%s=%s: cgroup %s given twice (as %s and %s): its I/O would be counted twice", spec.Path, spec.Name, spec.Path, h.Name, spec.Name)
		case nested(h.Path, spec.Path):
			return fmt.Errorf("%s=%s: cgroup %s and cgroup %s (system %s) lie one within the other: the inner one's I/O would be counted twice", spec.Path, spec.Name, spec.Path, h.Path, h.Name)
		case h.Name == spec.Name:
			return fmt.Errorf("%s=%s: a second system named %s (the first: %s): name them apart, PATH=NAME", spec.Path, spec.Name, spec.Name, h.Path)
		}
	}
	return nil
}

// nested tells whether one of the cgroup paths a and b (each "/" or
// "/a/b", below the hierarchy's root) lies within the other.
func nested(a, b string) bool {
	within := func(in, out string) bool { return out == "/" || strings.HasPrefix(in, out+"/") }
	return a != b && (within(a, b) || within(b, a))
}

// checkSomething refuses an observation of nothing: no device named,
// no system asked for, and no device that the selection takes in
// diskstats now (a virtual machine's disks without --all-devices, or a
// sysfs that lists none of them).
func (o Options) checkSomething(fs sysfs.FS, sel DeviceSelection) error {
	if o.Cgroups != "" || len(o.Cgroup) > 0 || len(o.MySQL) > 0 || len(o.Postgres) > 0 {
		return nil
	}
	_, names, err := fs.AllDiskStats()
	if err != nil {
		return fault.Input("procfs", "%w", err)
	}
	s := &selector{sys: fs, sel: sel, known: map[sysfs.DevNum]selected{}}
	for dev, name := range names {
		if s.take(dev, name) {
			return nil
		}
	}
	return fault.Mentions("", func(n fault.Namer) string {
		return fmt.Sprintf("nothing to observe: none of the %d devices in diskstats is a disk this selection takes (name a DEVICE, or give %s, %s, %s, %s or %s)",
			len(names), n("all-devices"), n("cgroup"), n("cgroups"), n("mysql"), n("postgres"))
	})
}

// checkSchedule checks the times and the cgroups' mode, which need
// nothing of the host.
func (o Options) checkSchedule() error {
	switch {
	case o.Interval < 100*time.Millisecond || o.Interval > time.Minute:
		return fault.Input("interval", "%s is outside 100ms to 1m", o.Interval)
	case o.Duration < 0:
		return fault.Input("duration", "%s is negative", o.Duration)
	case o.Window < MinWindow:
		return fault.Input("window", "%s is shorter than 1m", o.Window)
	case o.SaveEveryGiven && o.SaveEvery < o.Interval:
		return fault.Mentions("save-every", func(n fault.Namer) string {
			return fmt.Sprintf("%s is shorter than %s %s", o.SaveEvery, n("interval"), o.Interval)
		})
	case o.Cgroups != "" && o.Cgroups != "auto":
		return fault.Mentions("cgroups", func(n fault.Namer) string {
			return fmt.Sprintf("%q is not auto (name cgroups one by one with %s PATH=NAME)", o.Cgroups, n("cgroup"))
		})
	}
	return nil
}

func controllerName(c cgroup.Controller) string {
	if c.Version == 0 {
		return "none asked for"
	}
	return fmt.Sprintf("cgroup v%d, %s", c.Version, c.Mode)
}

// sourceError is a failure of one of the sources an option names (a
// cgroup, a database), worded "OPTION SOURCE: why". The option is a
// fault.Mention, so that a front end spells it its own way; the cause
// stays reachable with errors.Is and errors.As.
type sourceError struct {
	option, source string
	err            error
}

func (e *sourceError) Error() string { return e.option + " " + e.source + ": " + e.err.Error() }

func (e *sourceError) Unwrap() []error {
	return []error{fault.NewMention(func(n fault.Namer) string {
		return n(e.option) + " " + e.source + ": " + e.err.Error()
	}), e.err}
}
