package crosscheck

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/fio"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// fioFilename escapes what fio would otherwise read as a list of files.
func fioFilename(path string) string {
	return strings.ReplaceAll(path, ":", `\:`)
}

// fioDuration is d in fio's syntax: seconds, or milliseconds when d is not
// whole seconds (New refuses anything finer).
func fioDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// fioShape is the engine, queue depth and job count fio is given: a
// synchronous engine has one I/O in flight per job, so psync's QD comes
// from jobs, as iomatrix's psync engine gets it from threads. An NVMe
// generic device takes NVMe commands, through fio's io_uring_cmd engine.
func (c *Comparison) fioShape(p results.Pattern) (engine string, depth, jobs int) {
	switch {
	case c.o.Engine == iotest.EnginePsync:
		return "psync", 1, p.QueueDepth * p.Jobs
	case c.o.Passthrough:
		return "io_uring_cmd", p.QueueDepth, p.Jobs
	}
	return "io_uring", p.QueueDepth, p.Jobs
}

// fioAccess is fio's options that say how the target is reached: direct
// I/O, or NVMe commands on a generic device, which no page cache sits
// in front of (and which, being a character device, refuses O_DIRECT).
func (c *Comparison) fioAccess(engine string) []string {
	if c.o.Passthrough {
		return []string{"--ioengine=" + engine, "--cmd_type=nvme"}
	}
	return []string{"--direct=1", "--ioengine=" + engine}
}

// fioArgv is the fio command of one run: the pattern on exactly the
// extent iomatrix measures, in bytes, so that no unit can differ.
func (c *Comparison) fioArgv(ps pattern.Spec) []string {
	p := ps.Pattern
	engine, depth, jobs := c.fioShape(p)
	argv := []string{c.o.Fio, "--name=" + p.Name(), "--filename=" + fioFilename(c.o.Target),
		"--size=" + strconv.FormatInt(c.o.Size, 10)}
	argv = append(argv, c.fioAccess(engine)...)
	argv = append(argv, "--rw="+ps.RW)
	// A pattern's mix and distribution are in fio's own syntax.
	if p.BSSplit != "" {
		argv = append(argv, "--bssplit="+p.BSSplit)
	} else {
		argv = append(argv, "--bs="+strconv.FormatInt(p.BlockSize, 10))
	}
	if p.Distribution != "" {
		argv = append(argv, "--random_distribution="+p.Distribution)
	}
	if ps.RW == "randrw" {
		argv = append(argv, "--rwmixread="+strconv.Itoa(p.ReadPct))
	}
	// Data content: fio's percentages are the pattern's. Random, unique
	// data needs nothing: fio's buffers are random and scrambled per
	// write by default, as iomatrix's are.
	if p.Compress > 0 {
		argv = append(argv, "--buffer_compress_percentage="+strconv.Itoa(p.Compress))
	}
	if p.Dedupe > 0 {
		argv = append(argv, "--dedupe_percentage="+strconv.Itoa(p.Dedupe))
	}
	argv = append(argv, fioSync(p.Sync)...)
	argv = append(argv, "--iodepth="+strconv.Itoa(depth), "--numjobs="+strconv.Itoa(jobs),
		"--group_reporting", "--time_based", "--runtime="+fioDuration(c.o.Runtime), "--ramp_time="+fioDuration(c.o.Ramp),
		"--randrepeat=0", "--norandommap", "--output-format=json")
	argv = append(argv, c.fioTuned...)
	argv = append(argv, FioRing(c.o.Ring)...)
	return append(argv, c.o.FioExtra...)
}

// iomatrixArgv is the iomatrix command of one run, the same pattern as
// fioArgv's.
func (c *Comparison) iomatrixArgv(ps pattern.Spec) []string {
	p := ps.Pattern
	argv := []string{c.o.Iomatrix, "run", c.o.Target, "--rw", ps.RW}
	if p.BSSplit != "" {
		argv = append(argv, "--bssplit", p.BSSplit)
	} else {
		argv = append(argv, "--bs", strconv.FormatInt(p.BlockSize, 10))
	}
	if p.Distribution != "" {
		argv = append(argv, "--random-distribution", p.Distribution)
	}
	if ps.RW == "randrw" {
		argv = append(argv, "--rwmix", strconv.Itoa(p.ReadPct))
	}
	if p.Compress > 0 {
		argv = append(argv, "--compress", strconv.Itoa(p.Compress))
	}
	if p.Dedupe > 0 {
		argv = append(argv, "--dedupe", strconv.Itoa(p.Dedupe))
	}
	if p.Sync != "" {
		argv = append(argv, "--sync", p.Sync)
	}
	argv = append(argv, "--qd", strconv.Itoa(p.QueueDepth), "--jobs", strconv.Itoa(p.Jobs),
		"--runtime", c.o.Runtime.String(), "--ramp", c.o.Ramp.String(), "--engine", c.o.Engine, "--format", "json")
	if !c.o.ReadInPlace {
		argv = append(argv, "--size", strconv.FormatInt(c.o.Size, 10))
	}
	if c.o.AllowDestructive {
		argv = append(argv, "--allow-destructive")
	}
	return append(argv, iomatrixRing(c.o.Ring)...)
}

// fioFigures reads a fio report of ps with the import code, and checks
// that fio measured the pattern it was asked to.
func (c *Comparison) fioFigures(ps pattern.Spec) func([]byte) (results.Total, error) {
	want := ps.Pattern
	_, want.QueueDepth, want.Jobs = c.fioShape(want)
	if s := pattern.SyncOf(want); s.OwnSyncs() {
		// fio's sync is always issued once its write completed (the
		// :after form); the linked form is asked of fio as the nearest
		// it has (see noticeLinkedSyncs).
		s.After = true
		want.Sync = s.Canonical()
	}
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

// fioSync is fio's options for a durable-write mode: O_DSYNC
// (sync=dsync) for dsync, fdatasync=N or fsync=N for a sync after every
// N-th write. fio issues its sync once the write has completed, which is
// the :after form's way; the linked form has no fio counterpart.
func fioSync(sync string) []string {
	kind, n, own := strings.Cut(sync, ":")
	switch {
	case sync == "":
		return nil
	case !own:
		return []string{"--sync=" + kind}
	}
	n, _, _ = strings.Cut(n, ":")
	return []string{"--" + kind + "=" + n}
}
