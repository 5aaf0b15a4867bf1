package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/answers/observe"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

type observeOptions struct {
	Interval, Duration time.Duration
	Window, SaveEvery  time.Duration
	AllDevices         bool
	Partitions         bool
	Cgroups            string
	Cgroup             []string
	MySQL              []string
	Out                string
	Workload           string
	Statistic          string
	Headroom           string
	From               string
	Quiet              bool
	EnableV1           bool
	Force              bool
	ProcFS, SysFS      string
	CgroupFS           string

	saveEverySet bool
}

func (o *observeOptions) AddFlags(f *pflag.FlagSet) {
	durationVar(f, &o.Interval, "interval", time.Second, "sampling interval (100ms to 1m)")
	durationVar(f, &o.Duration, "duration", 0, "stop after this long (e.g. 24h; default: until Ctrl-C or SIGTERM)")
	durationVar(f, &o.Window, "window", observe.DefaultWindow, "how far back the per-interval timelines reach in the file (at least 1m); per-minute ones cover the whole observation")
	durationVar(f, &o.SaveEvery, "save-every", 10*time.Second, "save the document this often (at most 10s unless you accept losing more on a crash; at least every --interval)")
	f.BoolVar(&o.AllDevices, "all-devices", false, "observe every whole device, virtual ones (loop, zram, device-mapper, md) included; their I/O is then counted on the disks below them too")
	f.BoolVar(&o.Partitions, "partitions", false, "observe partitions too")
	f.StringVar(&o.Cgroups, "cgroups", "", "auto: every leaf service, scope and container under system.slice, machine.slice, kubepods*, libpod_parent and docker, named by unit, container or pod; found again every 10s")
	f.StringArrayVar(&o.Cgroup, "cgroup", nil, "observe this cgroup as a system: PATH[=NAME], PATH below the I/O controller's hierarchy (repeatable)")
	f.StringArrayVar(&o.MySQL, "mysql", nil, "read a MySQL or MariaDB server's InnoDB counters for a system: [SYSTEM=]env:VAR, [SYSTEM=]file:PATH (mode 0600) or a DSN without password (the password from $MYSQL_PWD); repeatable")
	f.StringVarP(&o.Out, "out", "o", "", "the observation's file, saved atomically (default: iomatrix-observe-TIMESTAMP.json)")
	f.StringVar(&o.Workload, "workload", "", "write the `FILE` that fit --workload reads, from the observation when it ends (or from --from)")
	f.StringVar(&o.Statistic, "statistic", fit.DefaultStatistic, "the workload's rates: p50, p95, p99 or max of the per-minute rates, the same of the per-second ones (p95-second…), mean, or busiest-hour")
	f.StringVar(&o.Headroom, "headroom", "0%", "raise every rate in the workload file by this much (e.g. 30%)")
	f.StringVar(&o.From, "from", "", "sample nothing: read this observation and write its --workload (and its report)")
	f.BoolVar(&o.EnableV1, "v1-enable-counters", false, "cgroup v1: make the kernel count cgroup I/O on the observed devices, which it does only once a throttle rule was set on a device, by setting and at once removing one in a cgroup of iomatrix's own (nothing is limited; the device's throttling stays on, without limits, until it goes away)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress on stderr")
	f.BoolVar(&o.Force, "force", false, "replace an existing --out file (a week's observation is not overwritten by mistake)")
	f.StringVar(&o.ProcFS, "procfs", "/proc", "where procfs is mounted (a container observing its host: the host's /proc mounted elsewhere)")
	f.StringVar(&o.SysFS, "sysfs", "/sys", "where sysfs is mounted")
	f.StringVar(&o.CgroupFS, "cgroupfs", cgroup.DefaultRoot, "where cgroupfs is mounted")
}

func newObserveCommand(g *globalOptions) *cobra.Command {
	o := &observeOptions{}
	cmd := &cobra.Command{
		Use:     "observe [DEVICE...] [--cgroups auto] [--cgroup PATH=NAME...] [--mysql SYSTEM=SOURCE...] [--duration D]",
		Short:   "Record what running systems demand of their disks, per device and per cgroup, and write the workload fit judges",
		Long:    longHelp("observe"),
		Example: examples("observe"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.saveEverySet = cmd.Flags().Changed("save-every")
			return runObserve(cmd.Context(), g, o, args)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runObserve(ctx context.Context, g *globalOptions, o *observeOptions, args []string) error {
	headroom, err := units.ParsePercent(o.Headroom)
	if err != nil || headroom < 0 || headroom > 1000 {
		return usagef("--headroom: %q is not a percentage from 0 to 1000 (e.g. 30%%)", o.Headroom)
	}
	stat, err := fit.ParseStatistic(o.Statistic)
	if err != nil {
		return usagef("--statistic: %w", err)
	}
	if o.Workload != "" {
		if err := checkOutPath("--workload", o.Workload); err != nil {
			return err
		}
	}
	if o.From != "" {
		return observeFrom(g, o, args, stat, headroom)
	}
	cfg, err := o.config(g, args)
	if err != nil {
		return err
	}
	if cfg.Out == "" {
		cfg.Out = fmt.Sprintf("iomatrix-observe-%s.json", time.Now().Format("20060102-150405"))
	}
	if err := checkOutPath("--out", cfg.Out); err != nil {
		return err
	}
	if _, err := os.Stat(cfg.Out); err == nil && !o.Force {
		return usagef("--out: %s exists; name another file, or give --force to replace it", cfg.Out)
	}
	dbs, err := openDatabases(ctx, o, cfg.Ctrl)
	if err != nil {
		return err
	}
	defer func() {
		for _, d := range dbs {
			_ = d.DB.Close() // read-only connections: nothing to lose
		}
	}()
	cfg.Databases = dbs
	if !o.Quiet {
		cfg.Saved = observeProgress(g, cfg)
	}
	obs, err := observe.New(cfg)
	if err != nil {
		return observeError(err)
	}
	if !o.Quiet {
		fmt.Fprintf(g.stderr, "iomatrix: observing into %s every %s%s; Ctrl-C stops and keeps everything\n", cfg.Out, cfg.Interval, untilText(cfg.Duration))
	}
	doc, err := obs.Run(ctx)
	if err != nil {
		return err
	}
	if o.Workload != "" {
		if err := writeObservedWorkload(g, doc, stat, headroom, cfg.Out, o.Workload); err != nil {
			return err
		}
	}
	return renderObservation(g, doc)
}

func untilText(d time.Duration) string {
	if d == 0 {
		return " until interrupted"
	}
	return " for " + d.String()
}

// config checks every flag and the sources they name, before sampling.
func (o *observeOptions) config(g *globalOptions, args []string) (observe.Config, error) {
	if o.Interval < 100*time.Millisecond || o.Interval > time.Minute {
		return observe.Config{}, usagef("--interval: %s is outside 100ms to 1m", o.Interval)
	}
	if o.Duration < 0 {
		return observe.Config{}, usagef("--duration: %s is negative", o.Duration)
	}
	if o.Window < observe.MinWindow {
		return observe.Config{}, usagef("--window: %s is shorter than 1m", o.Window)
	}
	if o.SaveEvery < o.Interval {
		if o.saveEverySet {
			return observe.Config{}, usagef("--save-every: %s is shorter than --interval %s", o.SaveEvery, o.Interval)
		}
		o.SaveEvery = o.Interval // a save per sample: there is nothing newer to save
	}
	if o.Cgroups != "" && o.Cgroups != "auto" {
		return observe.Config{}, usagef("--cgroups: %q is not auto (name cgroups one by one with --cgroup PATH=NAME)", o.Cgroups)
	}
	fs := sysfs.NewFS(o.SysFS, o.ProcFS)
	cfg := observe.Config{FS: fs, Interval: o.Interval, Duration: o.Duration, Window: o.Window,
		SaveEvery: o.SaveEvery, Out: o.Out, AutoCgroups: o.Cgroups == "auto", DeviceArgs: args, EnableV1Counters: o.EnableV1,
		Devices: observe.DeviceSelection{All: o.AllDevices, Partitions: o.Partitions}}
	if _, err := os.Stat(filepath.Join(o.ProcFS, "diskstats")); err != nil {
		return cfg, usagef("--procfs: %s has no diskstats: %w", o.ProcFS, err)
	}
	if len(args) > 0 {
		devs, err := observe.ResolveDevices(fs, args)
		if err != nil {
			return cfg, usagef("%w", err)
		}
		cfg.Devices.Named = devs
	}
	if cfg.AutoCgroups || len(o.Cgroup) > 0 || len(o.MySQL) > 0 {
		ctrl, err := cgroup.Detect(g.sys, o.CgroupFS)
		switch {
		case err == nil:
			cfg.Ctrl = ctrl
		case cfg.AutoCgroups || len(o.Cgroup) > 0:
			flag := "--cgroup"
			if cfg.AutoCgroups {
				flag = "--cgroups auto"
			}
			return cfg, usagef("%s: %w", flag, err)
		}
	}
	if o.EnableV1 && cfg.Ctrl.Version != 1 {
		return cfg, usagef("--v1-enable-counters: only for cgroup v1, with --cgroup or --cgroups (this host's I/O controller: %s)", controllerName(cfg.Ctrl))
	}
	for _, s := range o.Cgroup {
		spec, err := observe.ParseCgroupSpec(cfg.Ctrl, s)
		if err != nil {
			return cfg, usagef("--cgroup: %w", err)
		}
		cfg.Cgroups = append(cfg.Cgroups, spec)
	}
	return cfg, nil
}

// observeError turns the observer's refusals into bad input naming the
// source at fault.
func observeError(err error) error {
	var ce *observe.CgroupError
	switch {
	case errors.As(err, &ce):
		return usagef("--cgroup %s: %s", ce.Spec.Path, ce.Why)
	case errors.Is(err, observe.ErrNoCgroups):
		return usagef("--cgroup: %w", err)
	}
	return err
}

// observeProgress prints a line on stderr at every save: how long, what,
// and what saving cost.
func observeProgress(g *globalOptions, cfg observe.Config) func(observe.SaveInfo) {
	var last time.Duration
	return func(s observe.SaveInfo) {
		if !s.Final && s.Elapsed-last < time.Minute && s.Elapsed > 0 {
			return
		}
		last = s.Elapsed
		fmt.Fprintf(g.stderr, "iomatrix: %s observed, %d devices, %d systems; saved %s (%s in %s)\n",
			s.Elapsed.Round(time.Second), s.Devices, s.Systems, cfg.Out, units.FormatSize(int64(s.Bytes)), s.Took.Round(time.Microsecond*100))
	}
}

func observeFrom(g *globalOptions, o *observeOptions, args []string, stat fit.Statistic, headroom float64) error {
	if len(args) > 0 {
		return usagef("--from reads an observation: it takes no DEVICE")
	}
	doc, err := results.ReadObservationFile(o.From)
	if err != nil {
		return fault.AsInput(err)
	}
	if o.Workload == "" {
		return renderObservation(g, doc)
	}
	return writeObservedWorkload(g, doc, stat, headroom, o.From, o.Workload)
}

func writeObservedWorkload(g *globalOptions, doc *results.Observation, stat fit.Statistic, headroom float64, source, path string) error {
	data, err := fit.ObservedWorkload(doc, stat, headroom, source)
	if err != nil {
		return err
	}
	if err := results.WriteBytesAtomic(path, data); err != nil {
		return fmt.Errorf("write workload %s: %w", path, err)
	}
	fmt.Fprintf(g.stderr, "iomatrix: wrote %s (judge it: iomatrix fit SWEEP.json --workload %s)\n", path, path)
	return nil
}

func controllerName(c cgroup.Controller) string {
	if c.Version == 0 {
		return "none asked for"
	}
	return fmt.Sprintf("cgroup v%d, %s", c.Version, c.Mode)
}
