package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// crosscheckOptions are the flags of `iomatrix crosscheck`.
type crosscheckOptions struct {
	Patterns         []string
	Pairs            int
	Runtime          time.Duration
	Ramp             time.Duration
	Size             string
	Engine           string
	FioExtra         string
	FioDefaults      bool
	Keep             string
	Format           string
	Force            bool
	AllowDestructive bool

	sizeSet bool
}

// defaultCrossPatterns are compared when no --pattern is given: 4k random
// reads at QD1 and QD32, 4k random writes at QD32 and a 16k half mix.
var defaultCrossPatterns = []string{"randread:4k:1", "randread:4k:32", "randwrite:4k:32", "randrw:16k:8:50"}

// crossDefaultSize is the size of a new file target: large enough to
// reach past the disk's caches, small enough to lay out in a minute.
const crossDefaultSize = 4 << 30

func (o *crosscheckOptions) AddFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&o.Patterns, "pattern", nil, "pattern to compare, repeatable: `SPEC` = RW:BS:QD[:RWMIX[:JOBS]] (default "+strings.Join(defaultCrossPatterns, ", ")+")")
	f.IntVar(&o.Pairs, "pairs", 3, "fio/iomatrix run pairs per pattern")
	durationVar(f, &o.Runtime, "runtime", 10*time.Second, "measured time of each run (a bare number is seconds)")
	durationVar(f, &o.Ramp, "ramp", time.Second, "warm-up of each run, left out of the figures by both tools (a bare number is seconds)")
	f.StringVar(&o.Size, "size", "", "the extent both tools measure: a new file is laid out at `SIZE` (default 4GiB), a file iomatrix laid out keeps its size "+
		"unless this is given, a block device is measured to its first SIZE bytes (default: whole); powers of two: 4g = 4GiB")
	f.StringVar(&o.Engine, "engine", iotest.EngineUring, "uring (fio --ioengine=io_uring --iodepth=QD --numjobs=JOBS) or psync (fio --ioengine=psync --iodepth=1 --numjobs=QD×JOBS)")
	f.BoolVar(&o.FioDefaults, "fio-defaults", false, "run fio's io_uring engine with its defaults instead of its peak-IOPS options ("+strings.Join(fioTuned, " ")+")")
	f.StringVar(&o.FioExtra, "fio-extra", "", "more options for every fio run, split on whitespace, given last (so they override the peak-IOPS options; e.g. \"--hipri\")")
	f.StringVar(&o.Keep, "keep", "", "keep every run's raw JSON output and stderr, and this comparison as crosscheck.json, in `DIR`")
	f.StringVar(&o.Format, "format", "text", "output on stdout: text (a table) or json (one document)")
	f.BoolVar(&o.Force, "force", false, "lay out an existing file that iomatrix did not create, destroying its contents (needed for write patterns)")
	f.BoolVar(&o.AllowDestructive, "allow-destructive", false, "allow write patterns on a block device, destroying its data")
}

func newCrosscheckCommand(g *globalOptions) *cobra.Command {
	o := &crosscheckOptions{}
	cmd := &cobra.Command{
		Use:   "crosscheck [TARGET]",
		Short: "Compare iomatrix with fio on the same target, run for run",
		Long: `Run fio and iomatrix alternately on the same target and the same extent,
pattern by pattern (fio, iomatrix, then iomatrix, fio, ... for --pairs
pairs: the tool that goes first alternates, so that a device whose speed
drifts during the session favours neither),
and print each run's IOPS, the median iomatrix/fio IOPS ratio and the
median CPU seconds per million I/Os of each tool. Alternating runs in one
session makes the ratio meaningful on a machine shared with others.

TARGET (default iomatrix.dat) is laid out once by iomatrix, as run does: a
new file gets --size (default 4GiB), a file iomatrix laid out keeps its
size unless --size is given, a file iomatrix did not create is only read
in place (write patterns need --force, which lays it out), and a block
device is measured whole or to --size (write patterns need
--allow-destructive). fio is then given that exact extent, in bytes:
--filename=TARGET --size=BYTES.

Every run is a child process. fio, found on PATH, runs with
  --direct=1 --rw --bs --rwmixread --group_reporting --time_based
  --runtime --ramp_time --randrepeat=0 --norandommap --output-format=json
  --ioengine=io_uring --iodepth=QD --numjobs=JOBS        (--engine uring)
      --fixedbufs=1 --registerfiles=1        (unless --fio-defaults)
  --ioengine=psync --iodepth=1 --numjobs=QD×JOBS        (--engine psync)
and then --fio-extra; its report is read by the same code as import. The
io_uring job is fio at its best, as its documentation recommends for peak
IOPS: registered buffers and file, no random map, no repeatable seed; the
header names every option fio was given. --fio-defaults compares with
fio's plain io_uring job instead (fio then pins no memory: use it when
RLIMIT_MEMLOCK is too small for --fixedbufs).
iomatrix runs as this binary's "run TARGET --format json" with the same
pattern, engine, runtime and ramp.

CPU accounting: the user+sys time the kernel charged to each run's process
(its threads and the children it waited for), as reported when it exits
(wait4's rusage): the same measure for both tools. It includes start-up
and the ramp, and is divided by the I/Os of the measured window, so
compare the two tools' figures with each other rather than read them as
the cost of one I/O.

A pattern SPEC is RW:BS:QD[:RWMIX[:JOBS]]: RW is randread, randwrite,
randrw, read or write; BS a block size (4k = 4096); QD the queue depth per
job; RWMIX the read percentage of randrw (default 50); JOBS the number of
jobs (default 1). RWMIX may be left empty: randread:4k:32::4.

` + exitStatusHelp + `

A run that fails is shown as n/a and the others go on; the exit status is
then 1.`,
		Example: `  iomatrix crosscheck /mnt/vol/iomatrix.dat
  iomatrix crosscheck /mnt/vol/iomatrix.dat --pattern randread:4k:32 --pattern randrw:16k:8:70:2 --pairs 5
  iomatrix crosscheck /dev/nvme1n1 --pattern randread:4k:128::4 --fio-extra "--hipri"
  iomatrix crosscheck /dev/zram0 --pattern randread:4k:32 --fio-defaults
  iomatrix crosscheck /mnt/vol/iomatrix.dat --format json --keep /tmp/crosscheck > crosscheck.json`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.sizeSet = cmd.Flags().Changed("size")
			return runCrosscheck(cmd.Context(), o, g, targetArg(args))
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runCrosscheck(ctx context.Context, o *crosscheckOptions, g *globalOptions, target string) error {
	c, plan, err := o.prepare(ctx, g, target)
	if err != nil {
		return err
	}
	if o.Keep != "" {
		if err := os.MkdirAll(o.Keep, 0o755); err != nil {
			return fmt.Errorf("--keep: %w", err)
		}
	}
	t, err := openTarget(ctx, plan, g)
	if err != nil {
		return err
	}
	_ = t.Close() // each run opens it on its own; nothing was written through it
	c.doc.Target = t.Info
	c.doc.Target.SizeBytes = t.Size
	c.size = t.Size
	fmt.Fprintf(g.stderr, "iomatrix: crosscheck: %s × %s × 2 tools, about %s\n",
		units.Count(len(c.patterns), "pattern"), units.Count(o.Pairs, "pair"), c.estimate(o.Pairs).Round(time.Second))

	var text *crossText
	if o.Format != "json" {
		text = newCrossText(g.stdout, c.patterns)
		text.header(c.doc, plan.Action)
	}
	runErr := c.compare(ctx, o.Pairs, text)
	c.finish(runErr == nil)
	if o.Keep != "" {
		if err := c.keepDocument(); err != nil {
			fmt.Fprintf(g.stderr, "iomatrix: --keep: %v\n", err)
		}
	}
	if text != nil {
		text.summary(c.doc)
	} else if err := writeJSON(g.stdout, c.doc); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if n := c.doc.FailedRuns; n > 0 {
		return fmt.Errorf("%s of %d failed, their figures left out: see the lines above%s", units.Count(n, "run"), 2*o.Pairs*len(c.patterns), keptIn(o.Keep))
	}
	return nil
}

func keptIn(dir string) string {
	if dir == "" {
		return ", or re-run with --keep DIR for their raw output"
	}
	return " and their raw output in " + dir
}

// prepare checks every flag, the tools and the target, touching nothing:
// bad input is refused before any I/O.
func (o *crosscheckOptions) prepare(ctx context.Context, g *globalOptions, target string) (*crosscheck, *iotest.Plan, error) {
	if o.Pairs < 1 {
		return nil, nil, usagef("--pairs: %d must be at least 1", o.Pairs)
	}
	if err := (iotest.Options{Runtime: o.Runtime, Ramp: o.Ramp}).Validate(); err != nil {
		return nil, nil, flagError(err)
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{{"--runtime", o.Runtime}, {"--ramp", o.Ramp}} {
		if d.d%time.Millisecond != 0 {
			return nil, nil, usagef("%s: %s is not a whole number of milliseconds, the finest time fio takes", d.flag, d.d)
		}
	}
	engine, err := o.engine(g)
	if err != nil {
		return nil, nil, err
	}
	if err := checkFormat(o.Format); err != nil {
		return nil, nil, err
	}
	pats, err := parseCrossPatterns(o.Patterns)
	if err != nil {
		return nil, nil, err
	}
	size, err := o.sizeBytes(target)
	if err != nil {
		return nil, nil, err
	}
	extra, err := parseFioExtra(o.FioExtra)
	if err != nil {
		return nil, nil, err
	}
	if err := checkKeepDir(o.Keep); err != nil {
		return nil, nil, err
	}
	fioPath, err := exec.LookPath("fio")
	if err != nil {
		return nil, nil, usagef("fio not found on PATH: install it (e.g. apt-get install fio)")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find the iomatrix binary to run: %w", err)
	}
	plan, err := o.plan(target, size, pats)
	if err != nil {
		return nil, nil, err
	}
	c := &crosscheck{
		fio: fioPath, exe: exe, target: plan.Path, size: plan.Size,
		sizeArg: plan.Action != iotest.ActionReadOnly, engine: engine,
		runtime: o.Runtime, ramp: o.Ramp, fioTuned: o.fioTuning(engine), fioExtra: extra, allowDestructive: o.AllowDestructive,
		keep: o.Keep, patterns: pats, run: runProcess, stderr: g.stderr, live: newLiveLine(g),
	}
	if err := c.checkFio(ctx); err != nil {
		return nil, nil, err
	}
	c.doc = c.newDocument(o.Pairs)
	return c, plan, nil
}

// engine is --engine, checked to be one that fio and iomatrix both have
// and that works here.
func (o *crosscheckOptions) engine(g *globalOptions) (string, error) {
	engine, err := engineName(o.Engine)
	if err != nil {
		return "", err
	}
	if engine != iotest.EngineUring && engine != iotest.EnginePsync {
		return "", usagef("--engine: %q is not one of uring, psync", o.Engine)
	}
	return resolveEngine(iotest.Options{Engine: engine, Notice: func(s string) { fmt.Fprintf(g.stderr, "iomatrix: %s\n", s) }})
}

// plan decides what happens to the target, touching nothing, and checks
// every pattern against it.
func (o *crosscheckOptions) plan(target string, size int64, pats []crossPattern) (*iotest.Plan, error) {
	writes := false
	for _, cp := range pats {
		writes = writes || cp.Pattern.Writes()
	}
	mo := measureOptions{Force: o.Force, AllowDestructive: o.AllowDestructive}
	plan, err := mo.plan(target, size, nil, writes)
	if err != nil {
		return nil, err
	}
	for _, cp := range pats {
		if err := iotest.ValidatePatternFor(cp.Pattern, plan.Align, plan.Size); err != nil {
			return nil, usagef("--pattern %q: %s: %w", cp.Spec, target, err)
		}
	}
	return plan, nil
}

// sizeBytes is --size in bytes; without it, a new file's size, or 0 for
// a target whose size iomatrix's layout rules decide.
func (o *crosscheckOptions) sizeBytes(target string) (int64, error) {
	if o.sizeSet {
		return (&measureOptions{Size: o.Size, sizeSet: true}).size()
	}
	if _, err := os.Stat(target); errors.Is(err, fs.ErrNotExist) {
		return crossDefaultSize, nil
	}
	return 0, nil
}

// crossPattern is one pattern of the comparison: as the user wrote it,
// and as both tools run it.
type crossPattern struct {
	Spec    string
	RW      string // fio's --rw, which is iomatrix's too
	Pattern results.Pattern
}

func parseCrossPatterns(specs []string) ([]crossPattern, error) {
	if len(specs) == 0 {
		specs = defaultCrossPatterns
	}
	var pats []crossPattern
	seen := map[string]string{}
	for _, spec := range specs {
		cp, err := parseCrossPattern(spec)
		if err != nil {
			return nil, err
		}
		name := cp.Pattern.Name()
		if first, dup := seen[name]; dup {
			return nil, usagef("--pattern %q: the same pattern as %q (%s)", spec, first, name)
		}
		seen[name] = spec
		pats = append(pats, cp)
	}
	return pats, nil
}

// parseCrossPattern reads a pattern SPEC (iotest.ParsePatternSpec) given
// to --pattern; isolate's --victim and --aggressor take the same.
func parseCrossPattern(spec string) (crossPattern, error) {
	ps, err := iotest.ParsePatternSpec(spec)
	if err != nil {
		return crossPattern{}, usagef("--pattern %w", err)
	}
	return crossPattern(ps), nil
}

// fioControlled are the fio options crosscheck sets itself, with what
// sets them: --fio-extra may not change them, or the two tools would no
// longer measure the same thing.
var fioControlled = map[string]string{
	"name": "crosscheck", "filename": "TARGET", "directory": "TARGET", "filename_format": "TARGET",
	"size": "--size", "filesize": "--size", "io_size": "--size", "offset": "--size", "offset_increment": "--size",
	"rw": "--pattern", "readwrite": "--pattern", "bs": "--pattern", "blocksize": "--pattern",
	"rwmixread": "--pattern", "rwmixwrite": "--pattern", "iodepth": "--pattern", "numjobs": "--pattern",
	"ioengine": "--engine", "runtime": "--runtime", "time_based": "--runtime", "ramp_time": "--ramp",
	"direct": "crosscheck (always 1)", "buffered": "crosscheck (never)", "group_reporting": "crosscheck",
	"output-format": "crosscheck (json)", "output": "crosscheck", "randrepeat": "crosscheck", "norandommap": "crosscheck",
}

// fioTuned are the options fio's documentation recommends for peak IOPS
// from its io_uring engine (iomatrix registers its file and buffers too);
// crosscheck always adds --randrepeat=0 --norandommap.
var fioTuned = []string{"--fixedbufs=1", "--registerfiles=1"}

// fioTuning is what fio is given beyond the pattern: fioTuned for the
// io_uring engine unless --fio-defaults.
func (o *crosscheckOptions) fioTuning(engine string) []string {
	if o.FioDefaults || engine != iotest.EngineUring {
		return nil
	}
	return append([]string(nil), fioTuned...)
}

// parseFioExtra splits --fio-extra into fio options, refusing anything
// else and the options crosscheck sets.
func parseFioExtra(s string) ([]string, error) {
	extra := strings.Fields(s)
	for _, arg := range extra {
		name, ok := strings.CutPrefix(arg, "--")
		if !ok || name == "" {
			return nil, usagef("--fio-extra: %q is not a fio option (--name or --name=value)", arg)
		}
		name, _, _ = strings.Cut(name, "=")
		if by, ok := fioControlled[name]; ok {
			return nil, usagef("--fio-extra: %s is set by %s", arg, by)
		}
	}
	return extra, nil
}

// checkKeepDir refuses, before any I/O, a --keep directory that could not
// take the files.
func checkKeepDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		parent := filepath.Dir(filepath.Clean(dir))
		if pfi, err := os.Stat(parent); err != nil || !pfi.IsDir() {
			return usagef("--keep: neither %s nor its parent %s exists", dir, parent)
		}
		dir = parent // where it will be made
	case err != nil:
		return usagef("--keep: %w", err)
	case !fi.IsDir():
		return usagef("--keep: %s is not a directory", dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return usagef("--keep: cannot create files in %s: %w", dir, err)
	}
	return nil
}
