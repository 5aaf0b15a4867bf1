// Package session is what a measuring command holds while it measures: a
// target laid out and opened, the cgroup of a cap (made fresh, or an
// existing one joined), and what runs the patterns — this process, or a
// child of this program placed in the cgroup before its first I/O.
//
// A command decides what will happen with Prepare (the target's plan,
// the cap's, the aligned window, the engine, every pattern checked
// against the target), touching nothing; Open makes the cgroup and opens
// the target; Session.Start starts the runner; Close releases them in the
// order they must go. Between them the measuring protocols run: Loop
// (cells one by one, each saved), Sweep (a profile's cells and loads, or a
// load–latency sweep), MeasureOne (run, and its open loop at a share of a
// maximum), RunStreams (systems at once), Precondition; Resume and
// CheckBaseline say what a results file allows a run to keep. The package
// never prints: what the user should know goes to Options.Notice.
package session

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// Options say what a session measures and how it reports.
type Options struct {
	// Plan is the target's plan (target.NewPlan).
	Plan *target.Plan
	// Cap is the cap's plan (Prepare); nil measures uncapped.
	Cap *CapPlan
	// Writes says whether a pattern will write: the capped child opens
	// the target for writing only then.
	Writes           bool
	AllowDestructive bool
	// Notice receives a line the user should read (no prefix, no
	// newline); nil drops them.
	Notice func(string)
	// Layout reports the progress of laying out a file target.
	Layout func(done, total int64)
	// ChildStderr receives the capped child's standard error.
	ChildStderr io.Writer
	// Merges sets the disk's request merging around the cells whose
	// profile asks for it (PlanMerges); nil changes nothing.
	Merges *Merges
}

// Session is an open target, with the cgroup of a cap and the runner.
type Session struct {
	o      Options
	t      *target.Target
	runner Runner
	child  *childRunner
	cap    *results.Cap // nil when uncapped
	// members are the children AddMember started, each in its own cgroup.
	members []*Member
}

// Open makes the cap's cgroup first (a tree that refuses it costs no
// I/O), then lays out and opens the target. Close must follow.
func Open(ctx context.Context, o Options) (*Session, error) {
	if o.Notice == nil {
		o.Notice = func(string) {}
	}
	if err := o.Cap.create(); err != nil {
		return nil, err
	}
	switch p := o.Plan; p.Action {
	case target.ActionCreate, target.ActionRelayout:
		o.Notice(fmt.Sprintf("laying out %s (%s of random data; reused by later runs)", p.Path, units.FormatSize(p.Size)))
	case target.ActionReadOnly:
		o.Notice(fmt.Sprintf("%s was not created by iomatrix: reading it in place (%s)", p.Path, units.FormatSize(p.Size)))
	}
	t, err := o.Plan.Open(ctx, o.Layout)
	if err != nil {
		o.Cap.release(o.Notice)
		return nil, err
	}
	return &Session{o: o, t: t}, nil
}

// Start chooses what runs the patterns: this process, or, under a cap, a
// child moved into the cgroup before its first I/O.
func (s *Session) Start() error {
	cp := s.o.Cap
	if cp == nil {
		s.runner = s.o.Merges.Wrap(local{s.t})
		return nil
	}
	child, err := startChild(s.childStderr(), s.childTarget(), cp.group.AddProc, s.o.Notice)
	if err != nil {
		return err
	}
	s.child = child
	// The parent sets the disk's merging around each of the child's
	// cells: the child in the cgroup may have no right to.
	s.runner = s.o.Merges.Wrap(&capRunner{group: cp.group, child: child, lastActive: time.Now()})
	s.cap = cp.group.Limit.Record(cp.group.Version(), cp.group.Path)
	return nil
}

// childTarget is what a child opens: the target as laid out.
func (s *Session) childTarget() childTarget {
	ct := childTarget{Path: s.o.Plan.Path, Size: s.t.Size, Writes: s.o.Writes, AllowDestructive: s.o.AllowDestructive}
	if s.o.Plan.Action == target.ActionReadOnly {
		ct.Size = 0 // somebody else's file is read at its own size
	}
	return ct
}

func (s *Session) childStderr() io.Writer {
	if s.o.ChildStderr == nil {
		return io.Discard
	}
	return s.o.ChildStderr
}

// Target is the open target.
func (s *Session) Target() *target.Target { return s.t }

// Runner runs patterns as the session measures them: under the cap when
// there is one. Start must have been called.
func (s *Session) Runner() Runner { return s.runner }

// Local runs patterns in this process, outside any cap: an uncapped
// baseline, or a neighbour that the cap does not hold.
func (s *Session) Local() Runner { return s.o.Merges.Wrap(local{s.t}) }

// Cap is the cap of the results file, nil when uncapped (or before
// Start).
func (s *Session) Cap() *results.Cap { return s.cap }

// Close releases the session: the child (out of the cgroup), the target,
// then the cgroup.
func (s *Session) Close() {
	// How the child ended or the descriptor closed changes nothing now:
	// every result is saved, and the cgroup goes next.
	for _, m := range s.members {
		m.close(s.o.Notice)
	}
	if s.child != nil {
		_ = s.child.Close()
	}
	_ = s.t.Close()
	s.o.Cap.release(s.o.Notice)
}

// alignToThrottle sets the ramp and runtime of a capped measurement (see
// cgroup.AlignWindow), and returns what to tell the user when they
// differ from what was asked ("" when they do not). An auto window's
// maximum is aligned, and its end falls on a slice.
func alignToThrottle(o *iotest.Options) (notice string) {
	ramp, runtime := cgroup.AlignWindow(o.Ramp, o.Runtime)
	if ramp != o.Ramp || runtime != o.Runtime {
		what := "runtime"
		if o.Auto != nil {
			what = "maximum runtime"
		}
		notice = fmt.Sprintf("under a cap: ramp %s, %s %s (asked %s, %s): the kernel's throttle hands out a cap's budget "+
			"in %s slices, the first at once, so each cell is measured from mid-slice over whole slices after a ramp of at least %s",
			ramp, what, runtime, o.Ramp, o.Runtime, cgroup.ThrottleSlice, cgroup.MinCappedRamp)
	}
	o.Ramp, o.Runtime = ramp, runtime
	if o.Auto != nil {
		a := *o.Auto
		a.MaxRuntime, a.Granule = runtime, cgroup.ThrottleSlice
		o.Auto = &a
	}
	return notice
}

// OtherLoadNotice is the warning for a cell during whose window the disk
// carried markedly more than iomatrix's own I/O (results.DevStats.OtherLoad:
// a fifth of its requests or of its bytes were somebody else's), or "":
// another process was loading the device, and the cell measured the disk
// shared.
func OtherLoadNotice(r results.Result, disk string) string {
	d := r.Device
	if !d.OtherLoad(0, 0) {
		return ""
	}
	return fmt.Sprintf("%s: disk %s completed %s requests (%s) in the measured window, %s of them (%s) not iomatrix's: "+
		"another process was loading the device, this cell's figures are suspect",
		r.Name, disk, units.Thousands(float64(d.IOs), 0), units.FormatSize(int64(d.Bytes)),
		units.Thousands(float64(d.OtherIOs), 0), units.FormatSize(int64(d.OtherBytes)))
}

// NewDocument starts the results of a measurement of profile on the
// session's target with o, under the session's cap (none before Start).
func (s *Session) NewDocument(profile string, o iotest.Options) *results.Document {
	set := o.Settings()
	set.Profile, set.SizeBytes = profile, s.t.Size
	doc := results.NewDocument(s.t.Info, set, time.Now().UTC().Format(time.RFC3339))
	doc.Cap = s.cap
	return doc
}

// StartSaving makes doc, a document resumed or new, the one the session saves
// to out: unfinished, under the session's cap, and saved at once (after
// clearing the temporary files a killed save left).
func (s *Session) StartSaving(doc *results.Document, out string) error {
	doc.FinishedAt = ""
	if s.cap != nil {
		doc.Cap = s.cap
	}
	results.RemoveStaleTemps(out)
	return results.WriteFileAtomic(out, doc)
}

// PreconditionDisplay shows preconditioning: each step, and its end.
type PreconditionDisplay interface {
	Precondition(iotest.PreconditionStep)
	Preconditioned(took time.Duration)
	Close()
}

// Precondition brings the target to steady state for d with o's engine
// and seed before the first pattern (iotest.Precondition), shown on show,
// which is closed when it fails.
func (s *Session) Precondition(ctx context.Context, o iotest.Options, d time.Duration, show PreconditionDisplay) error {
	start := time.Now()
	err := iotest.Precondition(ctx, s.t, o.Engine, o.Seed, d, show.Precondition)
	show.Preconditioned(time.Since(start))
	if err != nil {
		show.Close()
	}
	return err
}
