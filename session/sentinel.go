package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// The sentinels' defaults (docs/sweeps.md, "Sentinels").
const (
	// DefaultSentinelEvery is the least time between two runs of the
	// sentinel, cells in between.
	DefaultSentinelEvery = 5 * time.Minute
	// MinSentinelRuntime and MaxSentinelRuntime bound a run's window: the
	// sweep's runtime within them (an auto sweep's maximum). Three rounds
	// are the fewest a run is judged on (MinSentinelRounds).
	MinSentinelRuntime = 3 * time.Second
	MaxSentinelRuntime = 5 * time.Second
	// MaxSentinelRamp is a run's ramp at most: the sweep's when shorter.
	MaxSentinelRamp = time.Second
	// MaxSentinelShare is the most of a sweep's planned time that
	// sentinels take where they are not asked for: a sweep too short
	// for them runs without.
	MaxSentinelShare = 0.05
)

// SentinelRequest is what a sweep asks of its sentinels.
type SentinelRequest struct {
	// Pattern is the reference pattern (profiles.Profile.Reference).
	Pattern results.Pattern
	// Options are the sweep's: its window sets a run's.
	Options iotest.Options
	// Every is the interval asked, 0 for DefaultSentinelEvery; Asked
	// says the interval or the pattern was given, and the sentinels run
	// whatever they cost.
	Every   time.Duration
	Asked   bool
	OnDrift string
	// Planned is the time the sweep's cells still to measure take.
	Planned time.Duration
	// Window, when set, is a run's window and ramp: a resumed sweep's
	// runs are as long as its file's.
	Window *SentinelWindow
}

// SentinelWindow is a sentinel run's window and ramp.
type SentinelWindow struct {
	Runtime, Ramp time.Duration
}

// SentinelPlan is what the sentinels will be.
type SentinelPlan struct {
	// Settings are the document's sentinels, without runs; nil when
	// they are off.
	Settings *results.Sentinels
	// Runs is how many runs the sweep takes, about (at the start, every
	// interval, at the end), and Share the part of the planned time they
	// add.
	Runs  int
	Share float64
	// Window and Ramp are each run's.
	Window, Ramp time.Duration
}

// PlanSentinels plans a sweep's sentinels: a run's window is the sweep's
// runtime between MinSentinelRuntime and MaxSentinelRuntime, its ramp
// the sweep's up to MaxSentinelRamp. Unless asked for, they are off
// where they would add more than MaxSentinelShare to the planned time
// (Settings nil, Runs and Share saying what they would have cost).
func PlanSentinels(r SentinelRequest) (SentinelPlan, error) {
	every := r.Every
	if every == 0 {
		every = DefaultSentinelEvery
	}
	if every < 0 {
		return SentinelPlan{}, fault.Input("sentinel-every", "%s must be positive", every)
	}
	if !slices.Contains(results.DriftActions, r.OnDrift) {
		return SentinelPlan{}, fault.Input("on-drift", "%q is none of %s", r.OnDrift, strings.Join(results.DriftActions, ", "))
	}
	window := r.Options.Runtime
	if a := r.Options.Auto; a != nil {
		window = a.MaxRuntime
	}
	window = min(max(window, MinSentinelRuntime), MaxSentinelRuntime)
	ramp := min(r.Options.Ramp, MaxSentinelRamp)
	if w := r.Window; w != nil {
		window, ramp = w.Runtime, w.Ramp
	}
	s := &results.Sentinels{Pattern: r.Pattern, RuntimeNS: int64(window), RampNS: int64(ramp), EveryNS: int64(every),
		OnDrift: r.OnDrift, FloorPct: 100 * DefaultDriftRule.Floor, Sigmas: DefaultDriftRule.Sigmas, Runs: []results.SentinelRun{}}
	p := SentinelPlan{Settings: s, Runs: 2 + int(r.Planned/every), Window: window, Ramp: ramp}
	if r.Planned > 0 {
		p.Share = float64(time.Duration(p.Runs)*(window+ramp)) / float64(r.Planned)
	}
	if !r.Asked && (r.Planned <= 0 || p.Share > MaxSentinelShare) {
		p.Settings = nil
	}
	return p, nil
}

// ErrDeviceChanged is a sweep stopped by its sentinels (on-drift stop):
// the device is not the one its reference run measured. The document is
// saved and resumable.
var ErrDeviceChanged = errors.New("the device changed")

// DriftStopped is ErrDeviceChanged, with the run that found it.
type DriftStopped struct {
	Run           results.SentinelRun
	ReferenceIOPS float64
}

func (e *DriftStopped) Error() string {
	return fmt.Sprintf("%v: the sentinel %s measured %s IOPS, %+.1f %% from the reference's %s (a change is %.1f %% or more)",
		ErrDeviceChanged, e.Run.Name, units.Thousands(e.Run.Total.IOPS, 0), e.Run.ChangePct, units.Thousands(e.ReferenceIOPS, 0), e.Run.ThresholdPct)
}

func (e *DriftStopped) Unwrap() error { return ErrDeviceChanged }

// SentinelDisplay shows a sweep's sentinel runs: one starting, its live
// figures, and its judgement (run is its index in doc.Sentinels.Runs);
// Reruns says how many cells are measured again.
type SentinelDisplay interface {
	SentinelStart(p results.Pattern)
	Live(p iotest.Progress)
	SentinelDone(doc *results.Document, run int)
	Reruns(n int)
}

// Watch runs a sweep's sentinels from its loop, with the settings of the
// loop's document (Document.Sentinels): before the session's first cell,
// before a cell once the interval has passed since the last run, and
// after the last cell (EndWatch). Each run is judged with the others
// (JudgeDrift) and the document saved.
type Watch struct {
	Rule DriftRule
	// Display shows the runs; nil shows nothing.
	Display SentinelDisplay
	ran     bool      // a run in this session
	last    time.Time // when the last one ended
	cells   int       // cells measured since
	// now is the clock the interval is held to (tests give their own).
	now func() time.Time
}

// clock is the time now.
func (w *Watch) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

// due tells whether the sentinel runs before the next cell.
func (w *Watch) due(s *results.Sentinels) bool {
	return !w.ran || w.cells > 0 && w.clock().Sub(w.last) >= time.Duration(s.EveryNS)
}

// MaxConfirmRuns is how many runs in a row a watch that reruns makes
// after one that moved, until one agrees with the run before it: two
// runs in a row that agree are a device steady at its rate.
const MaxConfirmRuns = 2

// watch runs the sentinel when it is due (or when forced), and under
// rerun again at once while it moved, MaxConfirmRuns times at most. It
// returns the cells to measure again (rerun), or the DriftStopped of a
// device changed (stop).
func (c *Loop) watch(ctx context.Context, force bool) ([]results.Pattern, error) {
	w, s := c.Watch, c.Doc.Sentinels
	if w == nil || s == nil || !force && !w.due(s) {
		return nil, nil
	}
	last, err := c.sentinel(ctx)
	if err != nil || ctx.Err() != nil {
		return nil, err
	}
	for n := 0; s.OnDrift == results.DriftRerun && s.Runs[last].Moved && n < MaxConfirmRuns; n++ {
		if last, err = c.sentinel(ctx); err != nil || ctx.Err() != nil {
			return nil, err
		}
	}
	run := s.Runs[last]
	switch s.OnDrift {
	case results.DriftStop:
		if run.Level == results.LevelChanged {
			return nil, &DriftStopped{Run: run, ReferenceIOPS: referenceIOPS(s)}
		}
	case results.DriftRerun:
		again := RerunsDue(c.Doc)
		if len(again) > 0 && w.Display != nil {
			w.Display.Reruns(len(again))
		}
		return again, nil
	}
	return nil, nil
}

// sentinel measures one run of the sentinel, judges every run and saves
// the document; it returns the run's index.
func (c *Loop) sentinel(ctx context.Context) (int, error) {
	w, s := c.Watch, c.Doc.Sentinels
	o := c.Options
	o.Runtime, o.Ramp, o.Auto = time.Duration(s.RuntimeNS), time.Duration(s.RampNS), nil
	o.MaxIOs, o.LatLog, o.Profile, o.Progress = 0, iotest.LatLog{}, nil, nil
	// Offsets of their own: a cache that kept the last run's blocks
	// would serve the next one faster.
	o.Seed += uint64(len(s.Runs)) + 1
	if w.Display != nil {
		w.Display.SentinelStart(s.Pattern)
		o.Progress = w.Display.Live
	}
	res, err := c.Runner.Run(ctx, s.Pattern, o)
	if ctx.Err() != nil {
		return 0, nil
	}
	if err != nil && res.Name == "" {
		return 0, err
	}
	w.ran, w.last, w.cells = true, w.clock(), 0
	s.Runs = append(s.Runs, results.SentinelRun{Result: res})
	i := len(s.Runs) - 1
	JudgeDrift(c.Doc, w.rule())
	if c.Out != "" {
		if werr := results.WriteFileAtomic(c.Out, c.Doc); werr != nil {
			return i, fmt.Errorf("save results (the previous version of %s is intact): %w", c.Out, werr)
		}
	}
	if w.Display != nil {
		w.Display.SentinelDone(c.Doc, i)
	}
	if c.Notice != nil {
		for _, sh := range s.Changes {
			if sh.ToRun == i {
				c.Notice(report.DescribeShift(c.Doc, sh))
			}
		}
	}
	if err != nil {
		if !c.KeepGoing {
			return i, err
		}
		c.notice(fmt.Sprintf("sentinel: %v (continuing; the run is not judged)", err))
	}
	return i, nil
}

// EndWatch runs the sentinel after the last cell of a session that
// measured any since its last run, and measures again the cells that
// makes due (rerun), until none is: the end of a watched sweep. failed
// and err as Run's.
func (c *Loop) EndWatch(ctx context.Context) (failed int, err error) {
	for c.Watch != nil && c.Watch.cells > 0 && ctx.Err() == nil {
		again, err := c.watch(ctx, true)
		if err != nil || len(again) == 0 {
			return failed, err
		}
		f, err := c.measure(ctx, again)
		failed += f
		if err != nil {
			return failed, err
		}
	}
	return failed, nil
}

// record adds a measured cell to the document; a cell measured again
// (rerun) takes its name's place, the first measurement kept in the
// sentinels' Replaced.
func (c *Loop) record(res results.Result) {
	if s := c.Doc.Sentinels; s != nil && c.Watch != nil {
		if i := slices.IndexFunc(c.Doc.Results, func(r results.Result) bool { return r.Name == res.Name }); i >= 0 {
			s.Replaced = append(s.Replaced, c.Doc.Results[i])
			c.Doc.Results[i] = res
			JudgeDrift(c.Doc, c.Watch.rule())
			c.Watch.cells++
			return
		}
		if c.Watch != nil {
			c.Watch.cells++
		}
	}
	c.Doc.Results = append(c.Doc.Results, res)
}

// rule is the watch's change test (the default for a nil watch).
func (w *Watch) rule() DriftRule {
	if w == nil || w.Rule == (DriftRule{}) {
		return DefaultDriftRule
	}
	return w.Rule
}
