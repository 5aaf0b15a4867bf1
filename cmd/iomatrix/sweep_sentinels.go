package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// sentinelOptions are sweep's flags of its sentinels, the short runs of
// one reference pattern that watch the device (docs/sweeps.md,
// "Sentinels").
type sentinelOptions struct {
	Sentinel string
	Every    time.Duration
	Off      bool
	OnDrift  string
	Burst    string
	// pattern is --sentinel's, once parsed; burst --burst's document.
	pattern *results.Pattern
	burst   *results.Burst
}

func (o *sentinelOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Sentinel, "sentinel", "", "watch the device with this pattern, RW:BS:QD[:RWMIX[:JOBS]] (default: the profile's reference, shown by iomatrix profiles NAME)")
	durationVar(f, &o.Every, "sentinel-every", session.DefaultSentinelEvery,
		"run the sentinel again before the next pattern once this long has passed since its last run (given: sentinels run however short the sweep)")
	f.BoolVar(&o.Off, "no-sentinels", false, "measure without sentinels: nothing watches the device")
	choiceVar(f, &o.OnDrift, "on-drift", results.DriftMark, results.DriftActions,
		"when the sentinel finds the device changed: mark the cells and go on, rerun the cells it cannot place once the device is steady, or stop (exit status 3, resumable)")
	f.StringVar(&o.Burst, "burst", "", "the volume's burst, as iomatrix burst measured it (its --out file): the sentinel runs its pattern, and cells measured while a sentinel finds the volume above the burst's baseline are marked bursting, not changed")
}

// check refuses sentinel flags that cannot work, before any I/O.
func (o *sentinelOptions) check(given func(string) bool) error {
	if o.Off {
		for _, name := range []string{"sentinel", "sentinel-every", "on-drift", "burst"} {
			if given(name) {
				return usagef("--%s: not with --no-sentinels", name)
			}
		}
		return nil
	}
	if given("sentinel-every") && o.Every <= 0 {
		return usagef("--sentinel-every: %s must be positive", o.Every)
	}
	if given("sentinel") {
		spec, err := pattern.ParseSpec(o.Sentinel)
		if err != nil {
			return usagef("--sentinel: %w", err)
		}
		o.pattern = &spec.Pattern
	}
	if given("burst") {
		b, err := results.ReadBurstFile(o.Burst)
		if err != nil {
			return usagef("--burst: %w", err)
		}
		switch {
		case b.Step == nil:
			return usagef("--burst: %s found no step (%s): there is no burst to tell the cells of", o.Burst, b.Verdict)
		case o.pattern != nil && *o.pattern != b.Pattern:
			return usagef("--burst: the burst was measured with %s, --sentinel is %s: the sentinel must run the burst's pattern", b.Pattern.Name(), o.pattern.Name())
		}
		o.burst, o.pattern = b, &b.Pattern
	}
	return nil
}

// patternOf is the pattern setup's sweep would watch its device with:
// --sentinel's, a resumed file's, or the profile's (Sentinel).
func (o *sentinelOptions) patternOf(setup *sweepSetup) results.Pattern {
	switch {
	case o.pattern != nil:
		return *o.pattern
	case setup.doc != nil && setup.doc.Sentinels != nil:
		return setup.doc.Sentinels.Pattern
	}
	return setup.profile.Sentinel()
}

// plan is the sentinels of setup's sweep (nil: none), and the line that
// says what they are or why there are none. A resumed sweep goes on with
// its file's sentinel, whose first run is the reference of its cells: a
// --sentinel of another pattern is refused; without one the file's
// interval and action hold unless given. A file measured without
// sentinels goes on without, unless they are asked for.
func (o *sentinelOptions) plan(given func(string) bool, setup *sweepSetup, planned time.Duration) (*results.Sentinels, string, error) {
	if o.Off {
		return nil, "sentinels: off (--no-sentinels): nothing watches the device", nil
	}
	asked := given("sentinel") || given("sentinel-every") || given("burst")
	req := session.SentinelRequest{Pattern: o.patternOf(setup), Options: setup.opts, Every: o.Every, Asked: asked,
		OnDrift: o.OnDrift, Planned: planned}
	if d := setup.doc; d != nil {
		f := d.Sentinels
		switch {
		case f == nil && !asked:
			return nil, "sentinels: off, as in the file (--sentinel-every turns them on)", nil
		case f != nil && o.pattern != nil && *o.pattern != f.Pattern:
			return nil, "", usagef("--sentinel: the file's sentinel is %s, whose first run is the reference its cells are held to; resume without --sentinel",
				f.Pattern.Name())
		case f != nil:
			req.Asked, req.Window = true, &session.SentinelWindow{Runtime: time.Duration(f.RuntimeNS), Ramp: time.Duration(f.RampNS)}
			if !given("sentinel-every") {
				req.Every = time.Duration(f.EveryNS)
			}
			if !given("on-drift") {
				req.OnDrift = f.OnDrift
			}
		}
	}
	p, err := session.PlanSentinels(req)
	if err != nil {
		return nil, "", flagError(err)
	}
	window := fmt.Sprintf("%s + %s ramp", p.Window, p.Ramp)
	if p.Settings == nil {
		return nil, fmt.Sprintf("sentinels: off: %s of %s would add %.0f %% to this sweep's %s (--sentinel-every turns them on)",
			units.Count(p.Runs, "run"), window, 100*p.Share, planned), nil
	}
	s := p.Settings
	if b := o.burst; b != nil {
		s.Burst = &results.SentinelBurst{File: o.Burst, BurstIOPS: b.Step.BurstIOPS, BaselineIOPS: b.Step.BaselineIOPS}
	}
	return s, fmt.Sprintf("sentinels: %s every %s, %s each; about %s more (+%.1f %%); on a change: %s",
		s.Pattern.Name(), time.Duration(s.EveryNS), window, units.Count(p.Runs, "run"), 100*p.Share, s.OnDrift), nil
}

// adopt makes s the sentinels of doc: a file's sentinels, with their
// runs, window and reference, take the interval and action of s.
func adoptSentinels(doc *results.Document, s *results.Sentinels) {
	switch {
	case s == nil:
	case doc.Sentinels != nil:
		doc.Sentinels.EveryNS, doc.Sentinels.OnDrift = s.EveryNS, s.OnDrift
		if s.Burst != nil {
			doc.Sentinels.Burst = s.Burst
		}
	default:
		doc.Sentinels = s
	}
}
