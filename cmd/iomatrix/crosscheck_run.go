package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iomatrix/iomatrix/fio"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/progress"
	"github.com/iomatrix/iomatrix/results"
)

// crosscheck is one comparison of iomatrix with fio, everything decided
// before the first I/O.
type crosscheck struct {
	fio, exe         string // the two tools' binaries
	fioVersion       string
	target           string // absolute path
	size             int64  // bytes both tools address
	sizeArg          bool   // iomatrix gets --size: all but a file read in place
	engine           string // iomatrix's name of the engine
	runtime, ramp    time.Duration
	fioTuned         []string // fio's peak-IOPS options, or none (--fio-defaults)
	fioExtra         []string
	allowDestructive bool
	keep             string
	patterns         []crossPattern
	// run runs one tool to its end: runProcess, or a stand-in in tests.
	run     func(ctx context.Context, argv []string) processRun
	stderr  io.Writer
	live    *progress.Line
	doc     *crossDocument
	relayed map[string]bool // tool stderr lines already passed on
}

// compare runs the pairs of every pattern, fio first in each pair, and
// records them in c.doc as they end; text, when not nil, prints them too.
// It stops only when ctx is done: a failed run is recorded and the next
// one starts.
func (c *crosscheck) compare(ctx context.Context, pairs int, text *crossText) error {
	for i, cp := range c.patterns {
		c.doc.Patterns = append(c.doc.Patterns, crossResult{
			Spec: cp.Spec, Name: cp.Pattern.Name(), Pattern: cp.Pattern,
			FioCommand: c.fioArgv(cp), IomatrixCommand: c.iomatrixArgv(cp), Pairs: []crossPair{},
		})
		res := &c.doc.Patterns[i]
		for k := 1; k <= pairs; k++ {
			// fio goes first in odd pairs, iomatrix in even ones: a
			// device whose speed drifts through the session (a disk
			// recovering from a neighbour's load) then favours neither.
			pair := crossPair{First: "fio"}
			runFio := func() { pair.Fio = c.runTool(ctx, i, k, "fio", res.FioCommand, c.fioFigures(cp)) }
			runIomatrix := func() {
				pair.Iomatrix = c.runTool(ctx, i, k, "iomatrix", res.IomatrixCommand, iomatrixFigures)
			}
			first, second := runFio, runIomatrix
			if k%2 == 0 {
				pair.First, first, second = "iomatrix", runIomatrix, runFio
			}
			first()
			if ctx.Err() == nil {
				second()
			}
			if ctx.Err() != nil {
				return ctx.Err() // half a pair compares nothing
			}
			if pair.Fio.IOPS != nil && pair.Iomatrix.IOPS != nil && *pair.Fio.IOPS > 0 {
				pair.Ratio = ptr(*pair.Iomatrix.IOPS / *pair.Fio.IOPS)
			}
			res.Pairs = append(res.Pairs, pair)
			res.Median = medians(res.Pairs)
			if text != nil {
				text.pair(res.Name, k, pair)
			}
		}
		if text != nil {
			text.median(res.Name, res.Median)
		}
	}
	return nil
}

// runLimit is how long one run may take before it is taken for hung.
func (c *crosscheck) runLimit() time.Duration {
	return 2*(c.runtime+c.ramp) + 2*time.Minute
}

// estimate is the time the runs take, start-up included.
func (c *crosscheck) estimate(pairs int) time.Duration {
	return time.Duration(2*pairs*len(c.patterns)) * (c.runtime + c.ramp + 500*time.Millisecond)
}

// runTool runs one tool once and reads its figures with figures. A run
// that fails is recorded as such, with one line on stderr, never fatal.
func (c *crosscheck) runTool(ctx context.Context, i, pair int, tool string, argv []string, figures func([]byte) (results.Total, error)) crossRun {
	name := c.patterns[i].Pattern.Name()
	c.live.Printf("%s pair %d: %s, %s after a %s ramp", name, pair, tool, c.runtime, c.ramp)
	limit := c.runLimit()
	rctx, cancel := context.WithTimeout(ctx, limit)
	r := c.run(rctx, argv)
	hung := errors.Is(rctx.Err(), context.DeadlineExceeded)
	cancel()
	c.live.Done()
	run := crossRun{CPUSeconds: r.cpu.Seconds(), WallSeconds: r.wall.Seconds(), Raw: c.keepRun(i, pair, tool, r)}
	switch {
	case ctx.Err() != nil:
		run.Error = "interrupted"
		return run
	case hung:
		run.Error = fmt.Sprintf("still running after %s: stopped", limit)
	case r.err != nil:
		run.Error = r.err.Error()
		if line := lastLine(r.stderr); line != "" {
			run.Error += ": " + line
		}
	default:
		total, err := figures(r.stdout)
		if err != nil {
			run.Error = err.Error()
			break
		}
		run.IOPS, run.IOs = ptr(total.IOPS), total.IOs
		if total.IOs > 0 {
			run.CPUSecondsPerMio = ptr(r.cpu.Seconds() / (float64(total.IOs) / 1e6))
		}
	}
	if run.Error != "" {
		fmt.Fprintf(c.stderr, "iomatrix: crosscheck: %s pair %d: %s failed: %s\n", name, pair, tool, run.Error)
	} else {
		c.relay(name, pair, tool, r.stderr)
	}
	return run
}

// relay passes on what a tool said on stderr, each line once per
// comparison: a notice (another process loading the disk) matters, the
// same one from every run does not.
func (c *crosscheck) relay(name string, pair int, tool string, stderr []byte) {
	for _, line := range strings.Split(string(stderr), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "iomatrix: ")
		if line == "" || c.relayed[tool+"\x00"+line] {
			continue
		}
		if c.relayed == nil {
			c.relayed = map[string]bool{}
		}
		c.relayed[tool+"\x00"+line] = true
		fmt.Fprintf(c.stderr, "iomatrix: crosscheck: %s pair %d, %s: %s\n", name, pair, tool, line)
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func ptr(v float64) *float64 { return &v }

// fioFilename escapes what fio would otherwise read as a list of files.
func fioFilename(path string) string {
	return strings.ReplaceAll(path, ":", `\:`)
}

// fioDuration is d in fio's syntax: seconds, or milliseconds when d is not
// whole seconds (prepare refuses anything finer).
func fioDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// fioShape is the queue depth and job count fio is given: a synchronous
// engine has one I/O in flight per job, so psync's QD comes from jobs, as
// iomatrix's psync engine gets it from threads.
func (c *crosscheck) fioShape(p results.Pattern) (engine string, depth, jobs int) {
	if c.engine == iotest.EnginePsync {
		return "psync", 1, p.QueueDepth * p.Jobs
	}
	return "io_uring", p.QueueDepth, p.Jobs
}

// fioArgv is the fio command of one run: the pattern on exactly the
// extent iomatrix measures, in bytes, so that no unit can differ.
func (c *crosscheck) fioArgv(cp crossPattern) []string {
	p := cp.Pattern
	engine, depth, jobs := c.fioShape(p)
	argv := []string{c.fio, "--name=" + p.Name(), "--filename=" + fioFilename(c.target),
		"--size=" + strconv.FormatInt(c.size, 10), "--direct=1", "--ioengine=" + engine,
		"--rw=" + cp.RW, "--bs=" + strconv.FormatInt(p.BlockSize, 10)}
	if cp.RW == "randrw" {
		argv = append(argv, "--rwmixread="+strconv.Itoa(p.ReadPct))
	}
	argv = append(argv, "--iodepth="+strconv.Itoa(depth), "--numjobs="+strconv.Itoa(jobs),
		"--group_reporting", "--time_based", "--runtime="+fioDuration(c.runtime), "--ramp_time="+fioDuration(c.ramp),
		"--randrepeat=0", "--norandommap", "--output-format=json")
	argv = append(argv, c.fioTuned...)
	return append(argv, c.fioExtra...)
}

// iomatrixArgv is the iomatrix command of one run, the same pattern as
// fioArgv's.
func (c *crosscheck) iomatrixArgv(cp crossPattern) []string {
	p := cp.Pattern
	argv := []string{c.exe, "run", c.target, "--rw", cp.RW, "--bs", strconv.FormatInt(p.BlockSize, 10)}
	if cp.RW == "randrw" {
		argv = append(argv, "--rwmix", strconv.Itoa(p.ReadPct))
	}
	argv = append(argv, "--qd", strconv.Itoa(p.QueueDepth), "--jobs", strconv.Itoa(p.Jobs),
		"--runtime", c.runtime.String(), "--ramp", c.ramp.String(), "--engine", c.engine, "--format", "json")
	if c.sizeArg {
		argv = append(argv, "--size", strconv.FormatInt(c.size, 10))
	}
	if c.allowDestructive {
		argv = append(argv, "--allow-destructive")
	}
	return argv
}

// checkFio finds fio's version and has fio parse every command it will
// run, so that an option it refuses (in --fio-extra, say) is bad input,
// found before any I/O.
func (c *crosscheck) checkFio(ctx context.Context) error {
	r := c.run(ctx, []string{c.fio, "--version"})
	if r.err != nil {
		return usagef("%s --version: %v", c.fio, r.err)
	}
	c.fioVersion = strings.TrimSpace(string(r.stdout))
	for _, cp := range c.patterns {
		r := c.run(ctx, append(c.fioArgv(cp), "--parse-only"))
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case r.err == nil:
			continue
		}
		why := lastLine(r.stderr)
		if why == "" {
			why = r.err.Error()
		}
		if len(c.fioExtra) > 0 {
			return usagef("--fio-extra: fio refuses the command for --pattern %s: %s", cp.Spec, why)
		}
		return usagef("fio refuses the command for --pattern %s: %s", cp.Spec, why)
	}
	return nil
}

// fioFigures reads a fio report of cp with the import code, and checks
// that fio measured the pattern it was asked to.
func (c *crosscheck) fioFigures(cp crossPattern) func([]byte) (results.Total, error) {
	want := cp.Pattern
	_, want.QueueDepth, want.Jobs = c.fioShape(want)
	return func(out []byte) (results.Total, error) {
		doc, problems, err := fio.Import("fio's report", bytes.NewReader(out))
		if err != nil {
			return results.Total{}, err
		}
		if len(problems) > 0 {
			return results.Total{}, errors.New(problems[0].String())
		}
		if len(doc.Results) != 1 {
			return results.Total{}, fmt.Errorf("fio's report holds %d patterns, not 1", len(doc.Results))
		}
		if got := doc.Results[0].Pattern; got != want {
			return results.Total{}, fmt.Errorf("fio measured %s, not %s", got.Name(), want.Name())
		}
		return doc.Results[0].Total, nil
	}
}

// iomatrixFigures reads the results document of an iomatrix run.
func iomatrixFigures(out []byte) (results.Total, error) {
	doc, err := results.ReadDocument(bytes.NewReader(out))
	if err != nil {
		return results.Total{}, fmt.Errorf("iomatrix's output: %w", err)
	}
	if len(doc.Results) != 1 {
		return results.Total{}, fmt.Errorf("iomatrix's output holds %d results, not 1", len(doc.Results))
	}
	return doc.Results[0].Total, nil
}

// keepRun saves a run's raw output under --keep and returns the JSON
// file's name there ("" without --keep). A failed save is said, and the
// comparison goes on.
func (c *crosscheck) keepRun(i, pair int, tool string, r processRun) string {
	if c.keep == "" {
		return ""
	}
	base := fmt.Sprintf("p%02d-%s.pair%d.%s", i+1, c.patterns[i].Pattern.Name(), pair, tool)
	if err := results.WriteBytesAtomic(filepath.Join(c.keep, base+".json"), r.stdout); err != nil {
		fmt.Fprintf(c.stderr, "iomatrix: --keep: %v\n", err)
		return ""
	}
	if len(r.stderr) > 0 {
		if err := results.WriteBytesAtomic(filepath.Join(c.keep, base+".stderr"), r.stderr); err != nil {
			fmt.Fprintf(c.stderr, "iomatrix: --keep: %v\n", err)
		}
	}
	return base + ".json"
}

// processRun is what one run of a tool left behind.
type processRun struct {
	stdout, stderr []byte
	// cpu is the user+sys time the kernel charged to the process, its
	// threads and the children it waited for (wait4's rusage).
	cpu  time.Duration
	wall time.Duration
	err  error // why it did not exit with status 0
}

// childGrace is how long a stopped run has between SIGTERM and SIGKILL:
// fio and iomatrix both stop their I/O and exit well within it.
const childGrace = 10 * time.Second

// runProcess runs argv to its end in a process group of its own, so that
// stopping it when ctx is done reaches fio's job processes too: SIGTERM to
// the group, SIGKILL after childGrace.
func runProcess(ctx context.Context, argv []string) processRun {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = childGrace
	start := time.Now()
	err := cmd.Run()
	r := processRun{stdout: out.Bytes(), stderr: errb.Bytes(), wall: time.Since(start), err: err}
	if cmd.ProcessState == nil {
		return r // never started
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if ctx.Err() != nil {
		// A job process that outlived its stopped fio must not go on
		// loading the disk. ESRCH, none left, is the usual answer.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return r
}
