package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// runOptions are the flags of `iomatrix run`.
type runOptions struct {
	measureOptions
	RW         string
	BlockSize  string
	ReadMix    int
	QueueDepth int
	Jobs       int
	Format     string
	Out        string
	rwmixSet   bool
}

func (o *runOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.RW, "rw", "randread", "workload: randread, randwrite, randrw, read (sequential) or write (sequential)")
	f.StringVar(&o.BlockSize, "bs", "4k", "block size: a multiple of the target's logical block size from 512 to 64MiB (4k = 4096)")
	f.IntVar(&o.ReadMix, "rwmix", 50, "percentage of reads for --rw randrw (0-100)")
	f.IntVar(&o.QueueDepth, "qd", 32, "I/Os kept in flight per job (1-256)")
	f.IntVar(&o.Jobs, "jobs", 1, "independent workers, each with its own queue (1-64)")
	o.measureOptions.AddFlags(f)
	f.StringVar(&o.Format, "format", "text", "output on stdout: text or json (the results document)")
	f.StringVarP(&o.Out, "out", "o", "", "also write the results document to this file")
}

func newRunCommand(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [TARGET]",
		Short: "Measure one pattern",
		Long: `Run one I/O pattern against TARGET and print IOPS, bandwidth, completion
latency percentiles and CPU use.

TARGET is a file (created and laid out with random data to --size before
the first I/O, then reused by later runs) or a block device. The default is
iomatrix.dat in the current directory. Every I/O uses O_DIRECT: a target
that cannot do direct I/O (tmpfs) is refused, never run buffered.

A file that iomatrix did not create is only read in place, and only by
read patterns; --force lets iomatrix lay it out (destroying it). A block
device is read freely; write patterns need --allow-destructive and are
refused while the device or one of its partitions is mounted or held.

` + exitStatusHelp,
		Example: `  iomatrix run /mnt/vol/iomatrix.dat --rw randread --bs 4k --qd 32
  iomatrix run /mnt/vol/iomatrix.dat --rw randrw --rwmix 70 --bs 16k --qd 8 --runtime 30s
  iomatrix run /mnt/vol/iomatrix.dat --rw randread --qd 1 --runtime auto --precision 1%
  iomatrix run /dev/nvme1n1 --rw randread --qd 128 --jobs 4 --format json > nvme.json`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			o.changed(f)
			o.rwmixSet = f.Changed("rwmix")
			return runRun(cmd.Context(), o, g, targetArg(args))
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// flagNames maps pattern fields to the flags that set them, so errors name
// what the user typed.
var flagNames = map[string]string{
	"access": "--rw", "block_size": "--bs", "read_pct": "--rwmix", "queue_depth": "--qd",
	"jobs": "--jobs", "runtime": "--runtime", "ramp": "--ramp", "engine": "--engine", "size": "--size",
	"min-runtime": "--min-runtime", "max-runtime": "--max-runtime", "precision": "--precision",
}

func flagError(err error) error {
	var fe *iotest.FieldError
	if errors.As(err, &fe) {
		if name, ok := flagNames[fe.Field]; ok {
			return usagef("%s: %s", name, fe.Msg)
		}
	}
	return optionError(err)
}

// optionError puts a library's bad input in the terms of the command
// line: the option it names becomes the flag that set it.
func optionError(err error) error {
	ie, ok := err.(*fault.InputError)
	if !ok || ie.Option == "" {
		return err
	}
	name, ok := flagNames[ie.Option]
	if !ok {
		name = "--" + ie.Option
	}
	return usageError{fmt.Errorf("%s: %w", name, ie.Err)}
}

// pattern turns the flags into a pattern, checked on its own.
func (o *runOptions) pattern() (results.Pattern, error) {
	p := results.Pattern{QueueDepth: o.QueueDepth, Jobs: o.Jobs}
	switch o.RW {
	case "randread":
		p.Access, p.ReadPct = results.Random, 100
	case "randwrite":
		p.Access, p.ReadPct = results.Random, 0
	case "randrw":
		p.Access, p.ReadPct = results.Random, o.ReadMix
	case "read":
		p.Access, p.ReadPct = results.Sequential, 100
	case "write":
		p.Access, p.ReadPct = results.Sequential, 0
	default:
		return p, usagef("--rw: %q is not one of randread, randwrite, randrw, read, write", o.RW)
	}
	if o.rwmixSet && o.RW != "randrw" {
		return p, usagef("--rwmix: only applies to --rw randrw (got --rw %s)", o.RW)
	}
	if o.ReadMix < 0 || o.ReadMix > 100 {
		return p, usagef("--rwmix: %d is outside 0..100", o.ReadMix)
	}
	bs, err := units.ParseSize(o.BlockSize)
	if err != nil {
		return p, usagef("--bs: %w", err)
	}
	p.BlockSize = bs
	if err := iotest.ValidatePattern(p); err != nil {
		return p, flagError(err)
	}
	return p, nil
}

func runRun(ctx context.Context, o *runOptions, g *globalOptions, target string) error {
	rs, err := o.prepare(g, target)
	if err != nil {
		return err
	}
	sess, err := startSession(ctx, g, &o.measureOptions, rs.cp, rs.plan, rs.p.Writes())
	if err != nil {
		return err
	}
	defer sess.close(g)
	doc := results.NewDocument(sess.t.Info, results.Settings{
		Profile: "run", Engine: rs.opts.Engine, RuntimeNS: int64(rs.opts.Runtime), RampNS: int64(rs.opts.Ramp),
		SizeBytes: sess.t.Size, Seed: rs.opts.Seed, Auto: autoSettings(rs.opts),
	}, time.Now().UTC().Format(time.RFC3339))
	doc.Cap = sess.capInfo

	prog := newLiveLine(g)
	opts := rs.opts
	opts.Progress = func(pr iotest.Progress) { prog.pattern(pr, opts) }
	res, runErr := sess.r.Run(ctx, rs.p, opts)
	prog.done()
	if runErr != nil && res.Name == "" {
		return runErr
	}
	noticeOtherLoad(g, res, doc.Target.Disk)
	doc.Results = append(doc.Results, res)
	doc.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	if o.Out != "" {
		if err := results.WriteFileAtomic(o.Out, doc); err != nil {
			return err
		}
	}
	if err := printRun(g, o.Format, doc, &res); err != nil {
		return err
	}
	return runErr
}

// runSetup is what `run` decides before any I/O.
type runSetup struct {
	p    results.Pattern
	opts iotest.Options
	plan *iotest.Plan
	cp   *capPlan // nil when uncapped
}

// prepare checks every flag and the target, touching nothing.
func (o *runOptions) prepare(g *globalOptions, target string) (*runSetup, error) {
	if err := o.capOptions.precheck(); err != nil {
		return nil, err
	}
	p, err := o.pattern()
	if err != nil {
		return nil, err
	}
	opts, err := o.options(g)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(o.Format); err != nil {
		return nil, err
	}
	size, err := o.size()
	if err != nil {
		return nil, err
	}
	if err := checkOutPath("--out", o.Out); err != nil {
		return nil, err
	}
	plan, err := o.plan(target, size, []results.Pattern{p}, false)
	if err != nil {
		return nil, err
	}
	cp, err := o.capOptions.plan(g, target)
	if err != nil {
		return nil, err
	}
	if cp != nil {
		alignToThrottle(g, &opts)
	}
	if opts.Engine, err = resolveEngine(opts); err != nil {
		return nil, err
	}
	return &runSetup{p: p, opts: opts, plan: plan, cp: cp}, nil
}

// printRun writes the result on stdout in the chosen format.
func printRun(g *globalOptions, format string, doc *results.Document, res *results.Result) error {
	if format == "json" {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	writeRunText(g.stdout, doc, res)
	return nil
}

func writeRunText(w io.Writer, doc *results.Document, r *results.Result) {
	p := r.Pattern
	t := doc.Target
	var where []string
	where = append(where, t.Kind)
	if t.Disk != "" {
		where = append(where, "on "+t.Disk+" ("+t.Device+")")
	}
	if t.Filesystem != "" {
		where = append(where, t.Filesystem)
	}
	where = append(where, units.FormatSize(t.SizeBytes))
	if t.Scheduler != "" {
		where = append(where, "scheduler "+t.Scheduler)
	}
	jobs := "1 job"
	if p.Jobs > 1 {
		jobs = fmt.Sprintf("%d jobs", p.Jobs)
	}
	fmt.Fprintf(w, "%s: %s, %s, %d%% reads, QD %d × %s, %s measured after %s ramp, engine %s, seed %d\n",
		r.Name, p.Access, units.FormatSize(p.BlockSize), p.ReadPct, p.QueueDepth, jobs,
		time.Duration(r.DurationNS).Round(time.Millisecond), time.Duration(r.RampNS), r.Engine, doc.Settings.Seed)
	fmt.Fprintf(w, "target: %s (%s)\n\n", t.Path, strings.Join(where, ", "))
	fmt.Fprintf(w, "%-6s %12s %10s %9s %9s %9s %9s %9s %9s %9s %9s\n", "", "IOPS", "MiB/s", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max")
	few := false // a percentile shown rests on too few I/Os
	row := func(name string, iops, mibps float64, l *results.Latency, ios uint64) {
		fmt.Fprintf(w, "%-6s %12s %10s", name, units.Thousands(iops, 0), units.Thousands(mibps, 1))
		if l != nil {
			tail := func(v uint64, q float64) string {
				if results.Confident(q, l.Samples(ios)) {
					return us(float64(v))
				}
				few = true
				return us(float64(v)) + report.FewIOsMark
			}
			fmt.Fprintf(w, " %9s %9s %9s %9s %9s %9s %9s %9s", us(float64(l.Min)), us(l.Mean), us(float64(l.P50)),
				us(float64(l.P90)), tail(l.P99, 99), tail(l.P999, 99.9), tail(l.P9999, 99.99), us(float64(l.Max)))
		}
		fmt.Fprintln(w)
	}
	if r.Read.IOs > 0 {
		row("read", r.Read.IOPS, r.Read.MiBPerS, &r.Read.LatNS, r.Read.IOs)
	}
	if r.Write.IOs > 0 {
		row("write", r.Write.IOPS, r.Write.MiBPerS, &r.Write.LatNS, r.Write.IOs)
	}
	// A single direction's row is already the total. The total's latency
	// is that of every I/O of the mix, which neither row above can give.
	if r.Read.IOs > 0 && r.Write.IOs > 0 {
		row("total", r.Total.IOPS, r.Total.MiBPerS, r.Total.LatNS, r.Total.IOs)
	}
	fmt.Fprintf(w, "%-6s %12s %10s %9s\n", "", "", "", "(latency in µs)")
	if few {
		fmt.Fprintf(w, "\n%s\n", report.FewIOsNote)
	}
	fmt.Fprintf(w, "\nwindow: %s\n", report.DescribeStop(*r, doc.Settings.Auto))
	fmt.Fprintf(w, "cpu: user %.1f%%, sys %.1f%% of one core\n", r.CPU.UserPct, r.CPU.SysPct)
	if t.Disk != "" {
		fmt.Fprintf(w, "disk %s, all processes: %s requests completed, %.1f%% utilized", t.Disk, units.Thousands(float64(r.Device.IOs), 0), r.Device.UtilPct)
		if r.Device.OtherIOs > 0 {
			fmt.Fprintf(w, " (%s of them not iomatrix's)", units.Thousands(float64(r.Device.OtherIOs), 0))
		}
		fmt.Fprintln(w)
	}
	if c := doc.Cap; c != nil {
		fmt.Fprintf(w, "capped: %s, cgroup %s\n", report.DescribeCap(c), c.Cgroup)
		if k := r.CgroupIOs; k != nil {
			fmt.Fprintf(w, "cgroup counted %s reads, %s writes; iomatrix completed %s reads, %s writes (ramp and drain included)\n",
				units.Thousands(float64(k.Reads), 0), units.Thousands(float64(k.Writes), 0),
				units.Thousands(float64(r.Completed.Reads), 0), units.Thousands(float64(r.Completed.Writes), 0))
		}
	}
	if r.Error != nil {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
}

func us(ns float64) string {
	v := ns / 1000
	switch {
	case v >= 1000:
		return units.Thousands(v, 0)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
