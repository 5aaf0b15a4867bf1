package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/answers/observe"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// observeOptions are observe's flags: the observation's own (checked by
// observe.Options.Config) and those of the files it writes.
type observeOptions struct {
	observe.Options
	Workload, Statistic, Headroom, From string
	Quiet                               bool
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
	f.StringArrayVar(&o.Postgres, "postgres", nil, "read a PostgreSQL (14 or later) server's statistics for a system: [SYSTEM=]env:VAR, [SYSTEM=]file:PATH (mode 0600) or a libpq connection string or URI without password (the password from $PGPASSWORD); repeatable")
	f.StringVarP(&o.Out, "out", "o", "", "the observation's file, saved atomically (default: iomatrix-observe-TIMESTAMP.json)")
	f.StringVar(&o.Workload, "workload", "", "write the `FILE` that fit --workload reads, from the observation when it ends (or from --from)")
	f.StringVar(&o.Statistic, "statistic", fit.DefaultStatistic, "the workload's rates: p50, p95, p99 or max of the per-minute rates, the same of the per-second ones (p95-second…), mean, or busiest-hour")
	f.StringVar(&o.Headroom, "headroom", "0%", "raise every rate in the workload file by this much (e.g. 30%)")
	f.StringVar(&o.From, "from", "", "sample nothing: read this observation and write its --workload (and its report)")
	f.BoolVar(&o.EnableV1Counters, "v1-enable-counters", false, "cgroup v1: make the kernel count cgroup I/O on the observed devices, which it does only once a throttle rule was set on a device, by setting and at once removing one in a cgroup of iomatrix's own (nothing is limited; the device's throttling stays on, without limits, until it goes away)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress on stderr")
	forceFlag(f, "--out or --workload file (a week's observation is not overwritten by mistake)")
	f.StringVar(&o.ProcFS, "procfs", "/proc", "where procfs is mounted (a container observing its host: the host's /proc mounted elsewhere)")
	f.StringVar(&o.SysFS, "sysfs", "/sys", "where sysfs is mounted")
	f.StringVar(&o.CgroupFS, "cgroupfs", cgroup.DefaultRoot, "where cgroupfs is mounted")
}

func newObserveCommand(g *globalOptions) *cobra.Command {
	o := &observeOptions{}
	cmd := &cobra.Command{
		Use:     "observe [DEVICE...] [--cgroups auto] [--cgroup PATH=NAME...] [--mysql SYSTEM=SOURCE...] [--postgres SYSTEM=SOURCE...] [--duration D]",
		Short:   "Record what running systems demand of their disks, per device and per cgroup, and write the workload fit judges",
		Long:    longHelp("observe"),
		Example: examples("observe"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.SaveEveryGiven, o.Devices = cmd.Flags().Changed("save-every"), args
			return runObserve(cmd.Context(), g, o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runObserve(ctx context.Context, g *globalOptions, o *observeOptions) error {
	headroom, err := units.ParsePercent(o.Headroom)
	if err != nil || headroom < 0 || headroom > 1000 {
		return usagef("--headroom: %q is not a percentage from 0 to 1000 (e.g. 30%%)", o.Headroom)
	}
	stat, err := fit.ParseStatistic(o.Statistic)
	if err != nil {
		return usagef("--statistic: %w", err)
	}
	if o.From != "" {
		return observeFrom(g, o, stat, headroom)
	}
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	if o.Out == "" { // Config named the file: held to the output rule as --out is (checkFiles)
		if err := g.files.withOutput("--out", cfg.Out, "").check(); err != nil {
			return err
		}
	}
	if err := cfg.OpenDatabases(ctx, o.MySQL, o.Postgres, os.LookupEnv); err != nil {
		return err
	}
	defer cfg.CloseDatabases()
	if !o.Quiet {
		cfg.Saved = observeProgress(g, cfg)
	}
	obs, err := observe.New(cfg)
	if err != nil {
		return err
	}
	if !o.Quiet {
		until := " until interrupted"
		if cfg.Duration > 0 {
			until = " for " + cfg.Duration.String()
		}
		fmt.Fprintf(g.stderr, "iomatrix: observing into %s every %s%s; Ctrl-C stops and keeps everything\n", cfg.Out, cfg.Interval, until)
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
	return report.WriteObservation(g.stdout, doc, "text")
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

func observeFrom(g *globalOptions, o *observeOptions, stat fit.Statistic, headroom float64) error {
	if len(o.Devices) > 0 {
		return usagef("--from reads an observation: it takes no DEVICE")
	}
	doc, err := results.ReadObservationFile(o.From)
	if err != nil {
		return fault.AsInput(err)
	}
	if o.Workload == "" {
		return report.WriteObservation(g.stdout, doc, "text")
	}
	return writeObservedWorkload(g, doc, stat, headroom, o.From, o.Workload)
}

func writeObservedWorkload(g *globalOptions, doc *results.Observation, stat fit.Statistic, headroom float64, source, path string) error {
	data, err := fit.ObservedWorkload(doc, stat, headroom, source, path)
	if err != nil {
		return err
	}
	if err := results.WriteBytesAtomic(path, data); err != nil {
		return fmt.Errorf("write workload %s: %w", path, err)
	}
	fmt.Fprintf(g.stderr, "iomatrix: wrote %s (judge it: iomatrix fit SWEEP.json --workload %s)\n", path, path)
	return nil
}
