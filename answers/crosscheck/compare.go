package crosscheck

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// Comparison is one comparison of iomatrix with fio, checked and ready to
// run.
type Comparison struct {
	o          Options
	fioVersion string
	fioTuned   []string
	doc        *Document
	relayed    map[string]bool // tool stderr lines already passed on
}

// New checks the options, finds fio (and this program, unless
// o.Iomatrix names iomatrix) and has fio parse every command it will
// run, so that bad input (an option fio refuses, say) is found before
// any I/O. It creates and changes nothing.
func New(ctx context.Context, o Options) (*Comparison, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Fio == "" {
		path, err := exec.LookPath("fio")
		if err != nil {
			return nil, fault.Input("", "fio not found on PATH: install it (e.g. apt-get install fio)")
		}
		o.Fio = path
	}
	if o.Iomatrix == "" {
		path, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the iomatrix binary to run: %w", err)
		}
		o.Iomatrix = path
	}
	if o.Run == nil {
		o.Run = RunProcess
	}
	c := &Comparison{o: o}
	switch {
	case o.FioDefaults || o.Engine != iotest.EngineUring:
	case o.Passthrough:
		c.fioTuned = append([]string(nil), FioTunedPassthrough...)
	default:
		c.fioTuned = append([]string(nil), FioTuned...)
	}
	if err := c.checkFio(ctx); err != nil {
		return nil, err
	}
	c.doc = c.newDocument()
	return c, nil
}

// Options are the comparison's settings, as checked (Fio found).
func (c *Comparison) Options() Options { return c.o }

// Text is a table of this comparison on w.
func (c *Comparison) Text(w io.Writer) *Text {
	return NewText(w, c.o.Patterns, c.o.ReadInPlace)
}

// keepError is a Keep directory that Report could not make.
type keepError struct{ err error }

func (e *keepError) Error() string { return e.mention().Error() }

// Unwrap is the message as a fault.Mention, which names the keep option
// as the reader spells it, and the cause.
func (e *keepError) Unwrap() []error { return []error{e.mention(), e.err} }

func (e *keepError) mention() *fault.Mention {
	return fault.NewMention(func(n fault.Namer) string { return n("keep") + ": " + e.err.Error() })
}

// RefusedError is a pattern's fio command that fio refuses to parse.
type RefusedError struct {
	Spec  string // the pattern, as given
	Extra bool   // FioExtra was given: the likely cause
	Why   string // fio's last word on it
}

func (e *RefusedError) Error() string { return e.Unwrap().Error() }

// Unwrap is the message as a fault.Mention, which names the pattern
// option as the reader spells it.
func (e *RefusedError) Unwrap() error {
	return fault.NewMention(func(n fault.Namer) string {
		return "fio refuses the command for " + n("pattern") + " " + e.Spec + ": " + e.Why
	})
}

// checkFio finds fio's version and has fio parse every command it will
// run (--parse-only).
func (c *Comparison) checkFio(ctx context.Context) error {
	r := c.o.Run(ctx, []string{c.o.Fio, "--version"})
	if r.Err != nil {
		return fault.Input("", "%s --version: %w", c.o.Fio, r.Err)
	}
	c.fioVersion = strings.TrimSpace(string(r.Stdout))
	for _, ps := range c.o.Patterns {
		r := c.o.Run(ctx, append(c.fioArgv(ps), "--parse-only"))
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case r.Err == nil:
			continue
		}
		why := lastLine(r.Stderr)
		if why == "" {
			why = r.Err.Error()
		}
		re := &RefusedError{Spec: ps.Spec, Extra: len(c.o.FioExtra) > 0, Why: why}
		if re.Extra {
			return &fault.InputError{Option: "fio-extra", Err: re}
		}
		return &fault.InputError{Err: re}
	}
	return nil
}

// Document is the comparison as it stands: before Run, what will be
// compared and how.
func (c *Comparison) Document() *Document { return c.doc }

// Estimate is the time the runs take, start-up included.
func (c *Comparison) Estimate() time.Duration {
	return time.Duration(2*c.o.Pairs*len(c.o.Patterns)) * (c.o.Runtime + c.o.Ramp + 500*time.Millisecond)
}

// runLimit is how long one run may take before it is taken for hung.
func (c *Comparison) runLimit() time.Duration {
	return 2*(c.o.Runtime+c.o.Ramp) + 2*time.Minute
}

// A Sink is shown the comparison as it runs: Start before the first run,
// Pair as each pair ends (the last of r.Pairs), Pattern when a pattern's
// pairs are done, End with the finished document. Text is one.
type Sink interface {
	Start(d *Document)
	Pair(r *Result)
	Pattern(r *Result)
	End(d *Document)
}

// Report makes Keep, runs the comparison (Run) and writes it on w as
// format asks: "json" the document once the runs end, whatever ended
// them, any other format the table row by row as the pairs end (Text).
// Its error is the write's, or Run's, or when some runs failed, how many,
// and where their raw output is or the keep option that would keep it.
func (c *Comparison) Report(ctx context.Context, target results.TargetInfo, w io.Writer, format string) error {
	if c.o.Keep != "" {
		if err := os.MkdirAll(c.o.Keep, 0o755); err != nil {
			return &keepError{err}
		}
	}
	var sink Sink
	if format != "json" {
		sink = c.Text(w)
	}
	d, err := c.Run(ctx, target, sink)
	if sink == nil {
		err = cmp.Or(d.WriteJSON(w), err)
	}
	return cmp.Or(err, c.failed())
}

// failed is nil when every run gave its figures, and otherwise says how
// many failed and where their raw output is, naming the keep option
// without Keep.
func (c *Comparison) failed() error {
	if c.doc.FailedRuns == 0 {
		return nil
	}
	return fault.NewMention(func(n fault.Namer) string {
		kept := ", or re-run with " + n("keep") + " DIR for their raw output"
		if c.o.Keep != "" {
			kept = " and their raw output in " + c.o.Keep
		}
		return fmt.Sprintf("%s of %d failed, their figures left out: see the lines above%s",
			units.Count(c.doc.FailedRuns, "run"), 2*c.o.Pairs*len(c.o.Patterns), kept)
	})
}

// Run compares the tools on the target the caller laid out (target: its
// description, SizeBytes the extent both tools address; each run opens it
// on its own), showing sink (nil: none) each pair as it ends. It tells
// Notice first how many runs it makes and about how long they take. It
// stops only when ctx is done, then with ctx's error and the pairs that
// ran: a failed run is recorded in the document (its figures null) and
// the next one starts. A Comparison runs once.
func (c *Comparison) Run(ctx context.Context, target results.TargetInfo, sink Sink) (*Document, error) {
	c.notice(fmt.Sprintf("%s × %s × 2 tools, about %s", units.Count(len(c.o.Patterns), "pattern"), units.Count(c.o.Pairs, "pair"),
		c.Estimate().Round(time.Second)))
	c.noticeLinkedSyncs()
	c.doc.Target = target
	c.o.Size = target.SizeBytes
	if sink != nil {
		sink.Start(c.doc)
	}
	err := c.compare(ctx, sink)
	c.doc.finish(err == nil)
	if c.o.Keep != "" {
		if kerr := c.keepDocument(); kerr != nil {
			c.keepFailed(kerr)
		}
	}
	if sink != nil {
		sink.End(c.doc)
	}
	return c.doc, err
}

// compare runs the pairs of every pattern and records them as they end.
func (c *Comparison) compare(ctx context.Context, sink Sink) error {
	for i, ps := range c.o.Patterns {
		c.doc.Patterns = append(c.doc.Patterns, Result{
			Spec: ps.Spec, Name: ps.Pattern.Name(), Pattern: ps.Pattern,
			FioCommand: c.fioArgv(ps), IomatrixCommand: c.iomatrixArgv(ps), Pairs: []Pair{},
		})
		res := &c.doc.Patterns[i]
		for k := 1; k <= c.o.Pairs; k++ {
			// fio goes first in odd pairs, iomatrix in even ones: a
			// device whose speed drifts through the session (a disk
			// recovering from a neighbour's load) then favours neither.
			pair := Pair{First: "fio"}
			runFio := func() { pair.Fio = c.runTool(ctx, i, k, "fio", res.FioCommand, c.fioFigures(ps)) }
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
			pair.Ratio = ratio(pair.Fio, pair.Iomatrix)
			res.Pairs = append(res.Pairs, pair)
			res.Median = medians(res.Pairs)
			if sink != nil {
				sink.Pair(res)
			}
		}
		if sink != nil {
			sink.Pattern(res)
		}
	}
	return nil
}

// runTool runs one tool once and reads its figures with figures. A run
// that fails is recorded as such, with a notice, never fatal.
func (c *Comparison) runTool(ctx context.Context, i, pair int, tool string, argv []string, figures func([]byte) (results.Total, error)) ToolRun {
	name := c.o.Patterns[i].Pattern.Name()
	c.status(fmt.Sprintf("%s pair %d: %s, %s after a %s ramp", name, pair, tool, c.o.Runtime, c.o.Ramp))
	limit := c.runLimit()
	rctx, cancel := context.WithTimeout(ctx, limit)
	r := c.o.Run(rctx, argv)
	hung := errors.Is(rctx.Err(), context.DeadlineExceeded)
	cancel()
	c.status("")
	run := ToolRun{CPUSeconds: r.CPU.Seconds(), WallSeconds: r.Wall.Seconds(), Raw: c.keepRun(i, pair, tool, r)}
	switch {
	case ctx.Err() != nil:
		run.Error = "interrupted"
		return run
	case hung:
		run.Error = fmt.Sprintf("still running after %s: stopped", limit)
	case r.Err != nil:
		run.Error = r.Err.Error()
		if line := lastLine(r.Stderr); line != "" {
			run.Error += ": " + line
		}
	default:
		total, err := figures(r.Stdout)
		if err != nil {
			run.Error = err.Error()
			break
		}
		run.measured(total, r.CPU)
	}
	if run.Error != "" {
		c.notice(fmt.Sprintf("%s pair %d: %s failed: %s", name, pair, tool, run.Error))
	} else {
		c.relay(name, pair, tool, r.Stderr)
	}
	return run
}

// relay passes on what a tool said on stderr, each line once per
// comparison: a notice (another process loading the disk) matters, the
// same one from every run does not.
func (c *Comparison) relay(name string, pair int, tool string, stderr []byte) {
	for _, line := range strings.Split(string(stderr), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "iomatrix: ")
		if line == "" || c.relayed[tool+"\x00"+line] {
			continue
		}
		if c.relayed == nil {
			c.relayed = map[string]bool{}
		}
		c.relayed[tool+"\x00"+line] = true
		c.notice(fmt.Sprintf("%s pair %d, %s: %s", name, pair, tool, line))
	}
}

func (c *Comparison) status(s string) {
	if c.o.Status != nil {
		c.o.Status(s)
	}
}

// noticeLinkedSyncs says, for each pattern whose syncs the ring links
// to their writes, that fio has no such sync: it issues its own once the
// write completed, which is the :after form's way.
func (c *Comparison) noticeLinkedSyncs() {
	if c.o.Engine == iotest.EnginePsync {
		return // psync calls the sync after the write, as fio does
	}
	for _, ps := range c.o.Patterns {
		if s := pattern.SyncOf(ps.Pattern); s.OwnSyncs() && !s.After {
			c.notice(fmt.Sprintf("%s: iomatrix links each sync to its write and submits both at once; fio issues its sync once the write has completed, "+
				"as sync=%s:after does: the tools differ by that round trip per commit", ps.Pattern.Name(), s.Canonical()))
		}
	}
}

func (c *Comparison) notice(s string) {
	if c.o.Notice != nil {
		c.o.Notice(s)
	}
}

func (c *Comparison) keepFailed(err error) {
	if c.o.KeepFailed != nil {
		c.o.KeepFailed(err)
	}
}

// keepRun saves a run's raw output under Keep and returns the JSON file's
// name there ("" without Keep). A failed save is told, and the comparison
// goes on.
func (c *Comparison) keepRun(i, pair int, tool string, r Process) string {
	if c.o.Keep == "" {
		return ""
	}
	base := fmt.Sprintf("p%02d-%s.pair%d.%s", i+1, c.o.Patterns[i].Pattern.Name(), pair, tool)
	if err := results.WriteBytesAtomic(filepath.Join(c.o.Keep, base+".json"), r.Stdout); err != nil {
		c.keepFailed(err)
		return ""
	}
	if len(r.Stderr) > 0 {
		if err := results.WriteBytesAtomic(filepath.Join(c.o.Keep, base+".stderr"), r.Stderr); err != nil {
			c.keepFailed(err)
		}
	}
	return base + ".json"
}

// KeptDocument is the file in Keep that holds the comparison.
const KeptDocument = "crosscheck.json"

func (c *Comparison) keepDocument() error {
	var b bytes.Buffer
	if err := c.doc.WriteJSON(&b); err != nil {
		return err
	}
	return results.WriteBytesAtomic(filepath.Join(c.o.Keep, KeptDocument), b.Bytes())
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
