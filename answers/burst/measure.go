package burst

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// The burst measurement's defaults.
const (
	DefaultMaxRuntime   = time.Hour
	DefaultProbeRuntime = 5 * time.Second
	// ProbeRange is how close to the baseline's figure a probe's must lie
	// for the baseline to have "held" it: a fifth of the 4× change in the
	// other figure.
	ProbeRange = 0.15
	// probeRamp settles the probe's queue at its block size before its
	// window.
	probeRamp = time.Second
	// maxProbeBlock is the largest block the probe grows to; a pattern's
	// blocks above a quarter of it are probed at a quarter of their size.
	maxProbeBlock = 1 << 20
)

// Config is one burst measurement.
type Config struct {
	// Runner runs the pattern on the target (a session's).
	Runner  session.Runner
	Pattern results.Pattern
	// Options are the engine's (engine, ring, seed, notices); the runtime,
	// the ramp and the auto window are set here.
	Options    iotest.Options
	MaxRuntime time.Duration // 0: DefaultMaxRuntime
	Rule       StepRule
	// Refill, when set, is how long the volume idles after the step
	// before it is run again to find what it earned back.
	Refill time.Duration
	// ProbeRuntime is the IOPS-or-bandwidth probe's window (0:
	// DefaultProbeRuntime; negative: no probe).
	ProbeRuntime time.Duration
	// Doc is the document the answer fills: the tool, host, target and
	// settings set (see session.Session.NewBurst).
	Doc *results.Burst
	// Phase, when set, is told each phase as it starts: "burst", "probe",
	// "idle", "refill"; with the wait of "idle".
	Phase func(phase string, wait time.Duration)
	// Progress, when set, receives the runs' live figures.
	Progress func(iotest.Progress)
	// Save, when set, keeps the document after each phase.
	Save func(*results.Burst) error
}

// ErrNotClosedLoop refuses an open-loop pattern: a burst is found flat
// out, where the volume alone sets the rate.
var ErrNotClosedLoop = errors.New("burst: the pattern must run closed-loop (no rate): a burst is found flat out")

// Check tells whether c can run, before any I/O.
func (c Config) Check() error {
	if c.Pattern.Rate.Open() {
		return ErrNotClosedLoop
	}
	if err := c.Rule.Check(); err != nil {
		return err
	}
	if c.maxRuntime() < iotest.SteadyWindow*time.Second {
		return fmt.Errorf("burst: %w", errShortRuntime)
	}
	if c.Refill < 0 {
		return fmt.Errorf("burst: %w", errNegativeRefill)
	}
	return nil
}

var (
	errShortRuntime   = errors.New("the maximum runtime must be 5s at least")
	errNegativeRefill = errors.New("the refill's idle time must not be negative")
)

func (c Config) maxRuntime() time.Duration {
	if c.MaxRuntime == 0 {
		return DefaultMaxRuntime
	}
	return c.MaxRuntime
}

// Measure runs the pattern flat out until its rate steps down by the
// rule and stays down (or MaxRuntime passes), then, when a step was
// found, probes another block size and, with Refill, idles and runs
// again. It returns the document filled so far with the error that
// stopped it (its Verdict then "incomplete"), or ctx's when interrupted.
func Measure(ctx context.Context, c Config) (*results.Burst, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	d := c.Doc
	if d == nil {
		d = &results.Burst{}
	}
	d.Kind, d.Pattern, d.MaxRuntimeNS = results.KindBurst, c.Pattern, int64(c.maxRuntime())
	d.Rule = results.BurstRule{MinDropPct: c.Rule.MinDrop * 100, Sigmas: c.Rule.Sigmas, MinBefore: c.Rule.MinBefore, MinAfter: c.Rule.MinAfter}
	d.Verdict, d.Summary = "incomplete", "interrupted before the step was found"
	if d.StartedAt == "" {
		d.StartedAt = time.Now().UTC().Format(time.RFC3339)
	}
	save := func() error {
		if c.Save == nil {
			return nil
		}
		return c.Save(d)
	}
	phase := func(p string, wait time.Duration) {
		if c.Phase != nil {
			c.Phase(p, wait)
		}
	}

	phase("burst", 0)
	res, err := c.untilStep(ctx, c.Pattern, c.Rule)
	if res.Name != "" {
		d.Results = append(d.Results, res)
	}
	if err != nil || ctx.Err() != nil {
		return d, errors.Join(err, ctx.Err(), save())
	}
	d.BytesPerIO = bytesPerIO(res)
	d.RatesIOPS = wholeRounds(res)
	s, ok := FindStep(d.RatesIOPS, c.Rule)
	if !ok || res.Stop != results.StopUntil {
		d.Verdict = "steady"
		d.Summary = fmt.Sprintf("no lasting step down in %s: %s", time.Duration(res.DurationNS).Round(time.Second).String(), steadyWords(d.RatesIOPS, d.BytesPerIO))
		d.FinishedAt = time.Now().UTC().Format(time.RFC3339)
		return d, save()
	}
	st := Figures(d.RatesIOPS, s, d.BytesPerIO)
	d.Step = &st
	d.Verdict = "step"
	d.Summary = stepWords(st)
	if err := save(); err != nil {
		return d, err
	}

	if pp, why := ProbePattern(c.Pattern); why != "" {
		d.Probe = &results.BurstProbe{Skipped: why}
	} else if c.ProbeRuntime >= 0 {
		phase("probe", 0)
		o := c.Options
		o.Auto, o.Ramp, o.Runtime = nil, probeRamp, c.ProbeRuntime
		if o.Runtime == 0 {
			o.Runtime = DefaultProbeRuntime
		}
		o.Progress = c.Progress
		pres, err := c.Runner.Run(ctx, pp, o)
		if pres.Name != "" {
			d.Results = append(d.Results, pres)
		}
		if err != nil || ctx.Err() != nil {
			return d, errors.Join(err, ctx.Err(), save())
		}
		pr := Probe(st, pp, pres.Total.IOPS, pres.Total.IOPS*bytesPerIO(pres))
		d.Probe = &pr
		d.Summary += "; " + pr.Reason
		if err := save(); err != nil {
			return d, err
		}
	}

	if c.Refill > 0 {
		idleFrom := time.Now()
		phase("idle", c.Refill)
		t := time.NewTimer(c.Refill)
		select {
		case <-ctx.Done():
			t.Stop()
			return d, errors.Join(ctx.Err(), save())
		case <-t.C:
		}
		phase("refill", 0)
		rule := c.Rule
		rule.MinBefore = 1 // what was earned back may last less than the first run's fewest
		idle := time.Since(idleFrom)
		rres, err := c.untilStep(ctx, c.Pattern, rule)
		if rres.Name != "" {
			d.Results = append(d.Results, rres)
		}
		if err != nil || ctx.Err() != nil {
			return d, errors.Join(err, ctx.Err(), save())
		}
		rf := Refill(wholeRounds(rres), rule, st, idle, d.BytesPerIO)
		d.Refill = &rf
		d.Summary += "; " + refillWords(rf)
	}
	d.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	return d, save()
}

// untilStep runs p flat out, from its first I/O on (no ramp: a burst's
// credits are spent from the start), until the rates step down by rule.
func (c Config) untilStep(ctx context.Context, p results.Pattern, rule StepRule) (results.Result, error) {
	o := c.Options
	o.Ramp, o.Runtime = 0, c.maxRuntime()
	o.Auto = &iotest.Auto{MaxRuntime: c.maxRuntime(), Precision: iotest.DefaultPrecision, Until: func(rounds []float64) bool {
		_, ok := FindStep(rounds, rule)
		return ok
	}}
	o.Progress = c.Progress
	return c.Runner.Run(ctx, p, o)
}

// wholeRounds is a run's rate second by second: the whole seconds of its
// window.
func wholeRounds(r results.Result) []float64 {
	n := r.Rounds
	if n <= 0 || n > len(r.TimelineIOPS) {
		n = min(int(time.Duration(r.DurationNS)/time.Second), len(r.TimelineIOPS))
	}
	return append([]float64(nil), r.TimelineIOPS[:n]...)
}

// bytesPerIO is a run's bytes over its I/Os (its block size when it did
// none in its window).
func bytesPerIO(r results.Result) float64 {
	if r.Total.IOs > 0 {
		return float64(r.Total.Bytes) / float64(r.Total.IOs)
	}
	return float64(r.Pattern.BlockSize)
}

// Figures are what a step tells of the volume (see results.BurstStep).
// The second the step fell in is a mix of both rates; it and the second
// after are left out of the two means and counted into the burst's
// duration by where their rate lies between them.
func Figures(rates []float64, s Step, bytesPerIO float64) results.BurstStep {
	at := s.At
	burst := mean(rates[:max(at-1, 1)])
	base := mean(rates[min(at+1, len(rates)-1):])
	share := func(i int) float64 {
		if i < 0 || i >= len(rates) || !(burst > base) {
			return 0
		}
		return math.Min(math.Max((rates[i]-base)/(burst-base), 0), 1)
	}
	seconds := float64(at-1) + share(at-1) + share(at)
	var bucket float64
	for _, r := range rates[:min(at+1, len(rates))] {
		bucket += r - base
	}
	st := results.BurstStep{StepAt: at, Sigmas: round2(s.Sigmas), BurstIOPS: burst, BaselineIOPS: base,
		BurstBPS: burst * bytesPerIO, BaselineBPS: base * bytesPerIO,
		DurationNS: int64(seconds * float64(time.Second)), BucketIOs: bucket, BucketBytes: bucket * bytesPerIO}
	st.BurstIOs = bucket + base*seconds
	st.BurstBytes = st.BurstIOs * bytesPerIO
	if math.IsInf(s.Sigmas, 1) {
		st.Sigmas = math.MaxFloat64 // JSON has no infinity: a step on a noiseless series
	}
	return st
}

// Refill is the idle probe's finding from the second run's rates: what it
// delivered above the first run's baseline before it stepped down again,
// over the idle time.
func Refill(rates []float64, rule StepRule, first results.BurstStep, idle time.Duration, bytesPerIO float64) results.BurstRefill {
	rf := results.BurstRefill{IdleNS: int64(idle), RatesIOPS: rates}
	s, ok := FindStep(rates, rule)
	if !ok {
		return rf
	}
	rf.Found, rf.StepAt = true, s.At
	for _, r := range rates[:min(s.At+1, len(rates))] {
		rf.BucketIOs += r - first.BaselineIOPS
	}
	rf.BucketIOs = math.Max(rf.BucketIOs, 0)
	rf.BucketBytes = rf.BucketIOs * bytesPerIO
	rf.IOPS = rf.BucketIOs / idle.Seconds()
	rf.BPS = rf.IOPS * bytesPerIO
	rf.Full = rf.BucketIOs >= 0.95*first.BucketIOs
	return rf
}

// ProbePattern is the probe's pattern: p at four times its block size,
// or a quarter of it above maxProbeBlock/4; why says why there is none.
func ProbePattern(p results.Pattern) (results.Pattern, string) {
	if len(p.BSSplit) > 0 {
		return p, "a block-size mix has no one block size to change"
	}
	q := p
	if p.BlockSize*4 <= maxProbeBlock {
		q.BlockSize = p.BlockSize * 4
	} else {
		q.BlockSize = p.BlockSize / 4
	}
	return q, ""
}

// Probe judges the probe's figures against the step's baseline: the
// baseline held its IOPS (an IOPS bucket), its bytes a second (a
// bandwidth bucket), or neither.
func Probe(st results.BurstStep, p results.Pattern, iops, bps float64) results.BurstProbe {
	pr := results.BurstProbe{Pattern: p, IOPS: iops, BPS: bps, RangePct: ProbeRange * 100}
	if st.BaselineIOPS > 0 {
		pr.IOPSPct = round2(iops / st.BaselineIOPS * 100)
	}
	if st.BaselineBPS > 0 {
		pr.BPSPct = round2(bps / st.BaselineBPS * 100)
	}
	size := units.FormatSize(p.BlockSize)
	switch held := func(pct float64) bool { return math.Abs(pct-100) <= ProbeRange*100 }; {
	case held(pr.IOPSPct) && !held(pr.BPSPct):
		pr.Bucket = results.BucketIOPS
		pr.Reason = fmt.Sprintf("an IOPS bucket: at %s blocks the baseline kept its IOPS (%.0f %%)", size, pr.IOPSPct)
	case held(pr.BPSPct) && !held(pr.IOPSPct):
		pr.Bucket = results.BucketBandwidth
		pr.Reason = fmt.Sprintf("a bandwidth bucket: at %s blocks the baseline kept its bytes a second (%.0f %%)", size, pr.BPSPct)
	default:
		pr.Bucket = results.BucketUndetermined
		pr.Reason = fmt.Sprintf("neither an IOPS nor a bandwidth bucket alone: at %s blocks the baseline kept %.0f %% of its IOPS and %.0f %% of its bytes a second", size, pr.IOPSPct, pr.BPSPct)
	}
	return pr
}

func stepWords(st results.BurstStep) string {
	return fmt.Sprintf("a burst of %s for %s, then a baseline of %s; its bucket: %s (%s) above the baseline",
		rateWords(st.BurstIOPS, st.BurstBPS), time.Duration(st.DurationNS).Round(100*time.Millisecond).String(),
		rateWords(st.BaselineIOPS, st.BaselineBPS), units.Count(int(math.Round(st.BucketIOs)), "I/O"), units.FormatSize(int64(st.BucketBytes)))
}

func refillWords(rf results.BurstRefill) string {
	idle := time.Duration(rf.IdleNS).Round(time.Second).String()
	switch {
	case !rf.Found:
		return fmt.Sprintf("after %s idle the rate never stepped down again within the maximum runtime: the refill is not known", idle)
	case rf.Full:
		return fmt.Sprintf("after %s idle the bucket was whole again: it refills at %s at least", idle, rateWords(rf.IOPS, rf.BPS))
	}
	return fmt.Sprintf("it refills at %s (%s earned back in %s idle)", rateWords(rf.IOPS, rf.BPS), units.Count(int(math.Round(rf.BucketIOs)), "I/O"), idle)
}

func steadyWords(rates []float64, bytesPerIO float64) string {
	m := mean(rates)
	return fmt.Sprintf("the volume held %s on average", rateWords(m, m*bytesPerIO))
}

func rateWords(iops, bps float64) string {
	return fmt.Sprintf("%s IOPS (%s/s)", units.Thousands(iops, 0), units.FormatSize(int64(bps)))
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
