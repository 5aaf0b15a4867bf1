// Package crosscheck compares iomatrix with fio on the same target and the
// same extent, run for run: it plans the target and checks every pattern
// against it and the tools before any I/O (Prepare), builds both tools'
// command lines, runs them in alternating pairs, reads the figures from
// their outputs, keeps the runs, and returns the comparison as a
// Document. It never prints: a caller sees the runs through the
// callbacks of Options and a Sink (Text writes the table).
package crosscheck

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
)

// Options are a comparison's settings, all decided before its first I/O
// (Plan completes them from the target's plan). Bad input is a
// *fault.InputError naming the option (pairs, runtime, ramp, engine,
// pattern, fio-extra, keep), a pattern.SpecError, or pattern's
// FieldError.
type Options struct {
	// Fio is fio's binary; "" looks for fio on PATH.
	Fio string
	// Iomatrix is the iomatrix binary, run as "Iomatrix run Target ...
	// --format json"; "" is this program's.
	Iomatrix string
	// Target is the absolute path both tools measure, Size the bytes both
	// address from its start. Before Plan, Target is the path as given
	// and Size the size asked (0: NewFileSize for a new file; a file
	// iomatrix laid out keeps its size, a device is measured whole).
	Target string
	Size   int64
	// ReadInPlace is a file that iomatrix did not lay out and reads as it
	// is: its runs are not given Size, which is the file's own.
	ReadInPlace bool
	// Force lets Plan lay out an existing file that iomatrix did not
	// create, destroying its contents.
	Force bool
	// Sys is where Plan reads the target's disk.
	Sys sysfs.FS
	// Engine is uring or psync: iomatrix's engine, and what fio gets
	// (io_uring at QD, or psync with QD×JOBS jobs).
	Engine string
	// Runtime and Ramp are each run's, in whole milliseconds (fio's
	// finest).
	Runtime, Ramp time.Duration
	// FioDefaults runs fio's io_uring engine with its defaults instead of
	// FioTuned.
	FioDefaults bool
	// FioExtra are more fio options (--name or --name=value), given last
	// to every fio run; none may set what crosscheck sets.
	FioExtra []string
	// Ring is iomatrix's ring mode, given to fio as its own options:
	// --poll as --hipri, --sqpoll as --sqthread_poll=1 (and
	// --sqpoll-cpu as --sqthread_poll_cpu). fio has no idle time for its
	// submission thread, so Ring.SQIdle is refused.
	Ring iotest.RingMode
	// AllowDestructive lets iomatrix's runs write to a block device.
	AllowDestructive bool
	// Passthrough says Target is an NVMe generic device (/dev/ngXnY),
	// which iomatrix reaches with NVMe commands through io_uring: fio
	// then runs its io_uring_cmd engine with --cmd_type=nvme.
	Passthrough bool
	// Keep is a directory for every run's raw output and the document
	// (crosscheck.json), or "". New checks that it exists or can be made
	// in its parent; Report makes it (a caller of Run makes it before).
	Keep     string
	Patterns []pattern.Spec
	Pairs    int // of runs per pattern, at least 1

	// Run runs one tool to its end; nil is RunProcess.
	Run func(ctx context.Context, argv []string) Process
	// Status, when set, is told what runs now, and "" when it has ended.
	Status func(string)
	// Notice, when set, receives a line for each failed run and for each
	// line a tool says on stderr (once per comparison).
	Notice func(string)
	// KeepFailed, when set, receives what could not be saved under Keep;
	// the comparison goes on.
	KeepFailed func(error)
}

// FioTuned are the options fio's documentation recommends for peak IOPS
// from its io_uring engine (iomatrix registers its file and buffers too);
// every fio run also gets --randrepeat=0 --norandommap.
var FioTuned = []string{"--fixedbufs=1", "--registerfiles=1"}

// FioTunedPassthrough are FioTuned for an NVMe generic device: the file
// registered, the buffers not, as iomatrix's passthrough commands name
// their buffers by address.
var FioTunedPassthrough = []string{"--registerfiles=1"}

// NewFileSize is the size crosscheck suggests for a new file target: large
// enough to reach past the disk's caches, small enough to lay out in a
// minute.
const NewFileSize = 4 << 30

// DefaultPatterns are compared when no pattern is given: 4k random reads
// at QD1 and QD32, 4k random writes at QD32 and a 16k half mix.
var DefaultPatterns = []string{"randread:4k:1", "randread:4k:32", "randwrite:4k:32", "randrw:16k:8:50"}

// ParsePatterns reads pattern specs (pattern.ParseSpec), none for
// DefaultPatterns, and refuses the same pattern twice; errors are
// *iotest.SpecErrors.
func ParsePatterns(specs []string) ([]pattern.Spec, error) {
	if len(specs) == 0 {
		specs = DefaultPatterns
	}
	var pats []pattern.Spec
	seen := map[string]string{}
	for _, spec := range specs {
		ps, err := pattern.ParseSpec(spec)
		if err != nil {
			return nil, err
		}
		name := ps.Pattern.Name()
		if first, dup := seen[name]; dup {
			return nil, &pattern.SpecError{Spec: spec, Msg: fmt.Sprintf("the same pattern as %q (%s)", first, name)}
		}
		seen[name] = spec
		pats = append(pats, ps)
	}
	return pats, nil
}

// Validate checks the options on their own, touching nothing.
func (o Options) Validate() error {
	if o.Pairs < 1 {
		return fault.Input("pairs", "%d must be at least 1", o.Pairs)
	}
	if err := (iotest.Options{Runtime: o.Runtime, Ramp: o.Ramp}).Validate(); err != nil {
		return err
	}
	for _, d := range []struct {
		option string
		d      time.Duration
	}{{"runtime", o.Runtime}, {"ramp", o.Ramp}} {
		if d.d%time.Millisecond != 0 {
			return fault.Input(d.option, "%s is not a whole number of milliseconds, the finest time fio takes", d.d)
		}
	}
	if o.Engine != iotest.EngineUring && o.Engine != iotest.EnginePsync {
		return fault.Input("engine", "%q is not one of uring, psync", o.Engine)
	}
	if o.Passthrough && o.Engine != iotest.EngineUring {
		return fault.Input("engine", "an NVMe passthrough device takes commands through io_uring only: not with the %s engine", o.Engine)
	}
	if err := o.Ring.Check(o.Engine); err != nil {
		return err
	}
	if o.Ring.SQIdle != 0 {
		return fault.Input("sqpoll-idle", "fio has no such option (its submission thread keeps the kernel's idle time): the two tools would differ")
	}
	if len(o.Patterns) == 0 {
		return fault.Input("pattern", "no pattern to compare")
	}
	for _, ps := range o.Patterns {
		if s := pattern.SyncOf(ps.Pattern); s.OwnSyncs() && !s.Whole() {
			return fault.Input("pattern", "%s: sync=%s syncs after a number of writes that is not whole, and fio's fdatasync=N and fsync=N take a whole N: the two tools would differ", ps.Spec, ps.Pattern.Sync)
		}
	}
	if err := checkFioExtra(o.FioExtra); err != nil {
		return err
	}
	return checkKeepDir(o.Keep)
}

// ControlledError is an option of FioExtra that crosscheck sets itself:
// changed, the two tools would no longer measure the same thing.
type ControlledError struct {
	Arg string // as given
	// Option is what sets it: "target", "size", "pattern", "engine",
	// "runtime" or "ramp"; "" when crosscheck always sets it, then to
	// Value when that says something ("always 1").
	Option, Value string
}

func (e *ControlledError) Error() string { return e.Unwrap().Error() }

// Unwrap is the message as a fault.Mention, which names the option that
// sets Arg as the reader spells it: "the size option" in crosscheck's
// own terms, "--size" on a command line.
func (e *ControlledError) Unwrap() error {
	return fault.NewMention(func(n fault.Namer) string {
		by := "crosscheck"
		switch {
		case e.Option != "" && n(e.Option) == e.Option:
			by = "the " + e.Option + " option"
		case e.Option != "":
			by = n(e.Option)
		case e.Value != "":
			by += " (" + e.Value + ")"
		}
		return e.Arg + " is set by " + by
	})
}

// fioControlled are the fio options crosscheck sets, as ControlledErrors
// without their Arg.
var fioControlled = map[string]ControlledError{
	"name": {}, "filename": {Option: "target"}, "directory": {Option: "target"}, "filename_format": {Option: "target"},
	"size": {Option: "size"}, "filesize": {Option: "size"}, "io_size": {Option: "size"}, "offset": {Option: "size"}, "offset_increment": {Option: "size"},
	"rw": {Option: "pattern"}, "readwrite": {Option: "pattern"}, "bs": {Option: "pattern"}, "blocksize": {Option: "pattern"},
	"rwmixread": {Option: "pattern"}, "rwmixwrite": {Option: "pattern"}, "iodepth": {Option: "pattern"}, "numjobs": {Option: "pattern"},
	"buffer_compress_percentage": {Option: "pattern"}, "dedupe_percentage": {Option: "pattern"},
	"buffer_compress_chunk": {Option: "pattern"}, "dedupe_mode": {Option: "pattern"},
	"ioengine": {Option: "engine"}, "cmd_type": {Option: "engine"}, "runtime": {Option: "runtime"}, "time_based": {Option: "runtime"}, "ramp_time": {Option: "ramp"},
	"direct": {Value: "always 1"}, "buffered": {Value: "never"}, "group_reporting": {},
	"output-format": {Value: "json"}, "output": {}, "randrepeat": {}, "norandommap": {},
	"hipri": {Option: "poll"}, "sqthread_poll": {Option: "sqpoll"}, "sqthread_poll_cpu": {Option: "sqpoll-cpu"},
}

// FioRing is fio's options for a ring mode: --hipri for polled
// completions, --sqthread_poll=1 (and --sqthread_poll_cpu) for a
// submission thread.
func FioRing(m iotest.RingMode) []string {
	return ringFlags(m, "--hipri", "--sqthread_poll=1", func(cpu string) []string { return []string{"--sqthread_poll_cpu=" + cpu} })
}

// iomatrixRing is iomatrix's flags for the same mode.
func iomatrixRing(m iotest.RingMode) []string {
	return ringFlags(m, "--poll", "--sqpoll", func(cpu string) []string { return []string{"--sqpoll-cpu", cpu} })
}

// ringFlags spells a ring mode in one tool's words.
func ringFlags(m iotest.RingMode, poll, sqpoll string, sqCPU func(string) []string) []string {
	var out []string
	if m.Poll {
		out = append(out, poll)
	}
	if m.SQPoll {
		out = append(out, sqpoll)
		if m.SQAffine {
			out = append(out, sqCPU(strconv.Itoa(m.SQCPU))...)
		}
	}
	return out
}

// checkFioExtra refuses what is not a fio option and the options
// crosscheck sets (a *ControlledError).
func checkFioExtra(extra []string) error {
	for _, arg := range extra {
		name, ok := strings.CutPrefix(arg, "--")
		if !ok || name == "" {
			return fault.Input("fio-extra", "%q is not a fio option (--name or --name=value)", arg)
		}
		name, _, _ = strings.Cut(name, "=")
		if ce, ok := fioControlled[name]; ok {
			ce.Arg = arg
			return &fault.InputError{Option: "fio-extra", Err: &ce}
		}
	}
	return nil
}

// checkKeepDir refuses, before any I/O, a Keep directory that could not
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
			return fault.Input("keep", "neither %s nor its parent %s exists", dir, parent)
		}
		dir = parent // where it will be made
	case err != nil:
		return fault.Input("keep", "%w", err)
	case !fi.IsDir():
		return fault.Input("keep", "%s is not a directory", dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fault.Input("keep", "cannot create files in %s: %w", dir, err)
	}
	return nil
}
