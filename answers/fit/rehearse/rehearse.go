// Package rehearse answers "does this volume carry this workload?" by
// running it: the systems of a workload file at once, each an open-loop
// stream at its own rates, block size and concurrency, optionally each in
// a cgroup of its own under the cap the lookup proposes (sizing's
// shares). Each system is judged on what it measured (Judge, a pure
// function): its schedule kept, and its latency bounds held by its
// response time, which counts the wait of an I/O the device was too busy
// to start on time, as an application sees it.
//
// Plan decides a rehearsal before any I/O (its window, seed, engine,
// target, caps and results file) and Run lays the target out, runs it
// and returns fit's answer with the rehearsal's verdicts. The package
// never prints: notices go through a callback, and the document it keeps
// (one result per system, and the verdicts in its rehearsal block) is
// rendered by report.
package rehearse

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/answers/capverify"
	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

const (
	// DefaultQueueDepth is the most I/Os in flight of a system whose
	// workload gives no concurrency: enough that a healthy device never
	// holds a stream back, few enough that a stalled one shows as
	// response time, not as an unbounded pile of I/Os.
	DefaultQueueDepth = 32
	// RateTolerance is how far a system's achieved rate may fall from its
	// schedule's own rate and still be judged kept.
	RateTolerance = 0.01
	// MinWindow is the shortest window Window proposes.
	MinWindow = 10 * time.Second
	// MaxWindow is the longest: a system too slow to prove its bound in
	// it is judged unproven, and the user may give a longer window.
	MaxWindow = 5 * time.Minute
)

// Patterns are the systems' streams: random I/O at each system's block
// size, its reads and writes each on a schedule of its own at its rates
// with the arrival given, at most its concurrency in flight (or
// DefaultQueueDepth), one job.
func Patterns(w fit.Workload, arrival string) []results.Pattern {
	pats := make([]results.Pattern, len(w.Systems))
	for i, s := range w.Systems {
		qd := s.Concurrency
		if qd == 0 {
			qd = DefaultQueueDepth
		}
		pats[i] = results.Pattern{Access: results.Random, BlockSize: s.BlockSize, ReadPct: readPct(s), QueueDepth: qd, Jobs: 1,
			Rate: results.Rate{ReadIOPS: s.ReadIOPS, WriteIOPS: s.WriteIOPS, Arrival: arrival}}
	}
	return pats
}

// readPct is the read share of a need as the pattern's whole percent,
// never 0 or 100 for a system that does both: the pattern must say that
// it writes (the target is opened for writing) and that it reads.
func readPct(n fit.Need) int {
	switch {
	case n.WriteIOPS == 0:
		return 100
	case n.ReadIOPS == 0:
		return 0
	}
	return min(max(int(math.Round(n.ReadPct())), 1), 99)
}

// Limits are the caps the lookup proposes (sizing's shares of the
// verdict's cell), one per system; the device is the target's, filled in
// when they are planned.
func Limits(w fit.Workload, v fit.Verdict) []cgroup.Limit {
	shares := w.Shares(v)
	out := make([]cgroup.Limit, len(shares))
	for i, s := range shares {
		out[i] = cgroup.Limit{ReadIOPS: s.ReadIOPS, WriteIOPS: s.WriteIOPS}
	}
	return out
}

// Window is the measured window long enough for every system to prove
// its latency bounds (a percentile rests on enough I/Os: see
// results.Confident), at least MinWindow and at most MaxWindow.
func Window(w fit.Workload) time.Duration {
	need := MinWindow
	for _, s := range w.Systems {
		for _, b := range s.Bounds {
			q := quantile(b.Metric)
			if q == 0 {
				continue
			}
			ios := math.Round(1000 / (100 - q)) // the fewest that Confident accepts (rounded: 100 - 99.9 is not 0.1 in floating point)
			secs := math.Ceil(ios / s.Total())
			need = max(need, time.Duration(secs)*time.Second)
		}
	}
	return min(need, MaxWindow)
}

func quantile(m report.Metric) float64 {
	return map[report.Metric]float64{report.LatP50: 50, report.LatP99: 99, report.LatP999: 99.9}[m]
}

// Run lays out and opens the target as planned, rehearses the workload
// on it, and returns fit's answer on the lookup (fit.NewAnswer) with the
// rehearsal's verdicts, and the rehearsal's document, saved to Out, with
// each system's result and verdict. It tells Notice what it runs, and
// when the lookup measured another device.
func Run(ctx context.Context, c *Config) (fit.Answer, *results.Document, error) {
	s, err := session.Open(ctx, session.Options{Plan: c.TargetPlan, Writes: results.AnyWrites(c.Patterns), AllowDestructive: c.AllowDestructive,
		Notice: c.Notice, Layout: c.Layout, ChildStderr: c.ChildStderr})
	if err != nil {
		return fit.Answer{}, nil, err
	}
	defer s.Close()
	doc, err := rehearse(ctx, c, s)
	if err != nil {
		return fit.Answer{}, nil, err
	}
	a := fit.NewAnswer(c.LookupDoc, c.Lookup, &c.Workload)
	a.Rehearsal = doc.Rehearsal
	return a, doc, nil
}

// rehearse runs the systems' streams at once on sess and judges each.
func rehearse(ctx context.Context, c *Config, sess *session.Session) (*results.Document, error) {
	if measured, dev := c.LookupDoc.Target.Device, sess.Target().Info.Device; measured != "" && measured != dev {
		// The caps and the lookup's verdict are another device's figures:
		// worth a rehearsal, and worth saying.
		c.Notice(fmt.Sprintf("%s measured device %s, the rehearsal runs on %s (%s): the lookup's verdict and caps are another device's",
			c.LookupFile, measured, dev, c.Target))
	}
	c.Notice(fmt.Sprintf("rehearsing %d systems at once on %s for %s after %s ramp (%s arrivals); results: %s",
		len(c.Workload.Systems), c.Target, c.Options.Runtime, c.Options.Ramp, c.Arrival, c.Out))
	for i, sh := range c.Shaped {
		if sh.Replayed != nil {
			c.Notice("replaying " + describe(c.Workload.Systems[i].Name, sh.Replayed))
		}
	}
	doc := sess.NewDocument("rehearsal", c.Options)
	reh := &results.Rehearsal{Workload: c.WorkloadFile, Lookup: c.LookupFile, LookupFits: c.Lookup.Fits, LookupWhy: c.Lookup.Why, WithCaps: c.Caps != nil}
	doc.Rehearsal = reh
	if err := sess.StartSaving(doc, c.Out); err != nil {
		return nil, err
	}
	streams := make([]session.Stream, len(c.Patterns))
	for i, p := range c.Patterns {
		o := c.Options
		o.Seed += uint64(i) // each system its own offsets
		o.Progress = nil
		if i < len(c.Shaped) {
			o.Profile = c.Shaped[i].Profile
		}
		streams[i] = session.Stream{Pattern: p, Options: o}
		if c.Caps != nil {
			streams[i].Cap = c.Caps[i]
		}
	}
	out, err := sess.RunStreams(ctx, streams)
	if err != nil {
		return nil, err
	}
	reh.Fits, reh.Inconclusive = true, true
	for i, s := range c.Workload.Systems {
		r := out[i].Result
		r.Name = s.Name
		doc.Results = append(doc.Results, r)
		sys := Judge(s, r)
		if sys.Inconclusive && !c.Lookup.Fits && !cellStarved(c.Lookup.Cell) {
			// The measured cells do not carry the sum either: the two
			// measurements agree, whatever the CPUs did to this one
			// (the wait is summed over every thread that may serve the
			// target, and on a busy machine it can explain any rate),
			// unless the lookup's cell waited for a CPU too: then
			// neither measured the volume alone.
			sys.Inconclusive = false
			sys.Why = strings.TrimPrefix(sys.Why, starvedWhy(sys.CPUWaitPct)+"; ")
		}
		sys.Cap = out[i].Cap
		if i < len(c.Shaped) {
			sys.Replayed = c.Shaped[i].Replayed
		}
		reh.Systems = append(reh.Systems, sys)
		reh.Fits = reh.Fits && sys.Fits
		reh.Inconclusive = reh.Inconclusive && (sys.Fits || sys.Inconclusive)
	}
	reh.Inconclusive = reh.Inconclusive && !reh.Fits
	doc.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	if err := results.WriteFileAtomic(c.Out, doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// cellStarved tells whether a measured cell's I/O waited for a CPU, others
// holding them, for capverify.QuietCPUWait of its window or more: a busy
// machine may have set its figures as well as the volume.
func cellStarved(r results.Result) bool {
	window := time.Duration(r.DurationNS)
	return window > 0 && float64(r.CPUWait.Wait(window)) >= capverify.QuietCPUWait*float64(window)
}

// Judge is the verdict on one system from its result: it fits when its
// stream kept to its schedule (sustained, and its achieved rate within
// RateTolerance of the schedule's own) and its response time holds
// every bound on enough I/Os to prove it. One that does not fit is
// inconclusive when its I/O waited for a CPU, others holding them, for
// capverify.QuietCPUWait of the window or more, and long enough to
// explain each failure (Run then keeps that only where the lookup fits).
func Judge(s fit.Need, r results.Result) results.RehearsedSystem {
	sys := results.RehearsedSystem{Name: s.Name, Result: r.Name, ReadIOPS: s.ReadIOPS, WriteIOPS: s.WriteIOPS,
		BlockSize: s.BlockSize, Concurrency: s.Concurrency, AchievedIOPS: r.Total.IOPS}
	var why []string
	// What the CPUs cannot explain: a failure of another kind, a rate
	// further below its schedule than its wait for a CPU accounts for,
	// a response time longer than the bound by more than the whole wait.
	var unexplained bool
	var wait time.Duration // the window's I/O may have lost to others' use of the CPUs
	if w := r.CPUWait; w != nil {
		wait = time.Duration(w.Pct / 100 * float64(r.DurationNS))
	}
	if r.Error != nil {
		why = append(why, "its stream failed: "+r.Error.Error())
		unexplained = true
	}
	if rs := r.Rate; rs == nil {
		why = append(why, "its result has no schedule (not an open-loop run)")
		unexplained = true
	} else {
		sys.AchievedIOPS, sys.ScheduledIOPS, sys.Sustained = rs.AchievedIOPS, rs.ScheduledIOPS, rs.Sustained
		if rs.ScheduledIOPS > 0 {
			sys.DeviationPct = 100 * (rs.AchievedIOPS/rs.ScheduledIOPS - 1)
		}
		short := capverify.UnstarvedIOPS(rs.AchievedIOPS, time.Duration(r.DurationNS), wait) < rs.ScheduledIOPS*(1-RateTolerance)
		switch {
		case !rs.Sustained:
			why = append(why, fmt.Sprintf("rate not sustained: %s IOPS achieved of %s scheduled, a backlog of up to %s I/Os",
				units.Thousands(rs.AchievedIOPS, 0), units.Thousands(rs.ScheduledIOPS, 0), units.Thousands(float64(rs.MaxBacklog), 0)))
			unexplained = unexplained || short
		case math.Abs(sys.DeviationPct) > 100*RateTolerance:
			why = append(why, fmt.Sprintf("rate %s IOPS, %+.2f %% from its schedule's %s", units.Thousands(rs.AchievedIOPS, 0),
				sys.DeviationPct, units.Thousands(rs.ScheduledIOPS, 0)))
			unexplained = unexplained || short || sys.DeviationPct > 0
		}
	}
	resp, ok := response(r)
	if !ok {
		why = append(why, "its result has no response time")
		unexplained = true
	} else {
		sys.ResponseP99US, _ = report.LatP99.Measure(resp)
	}
	for _, b := range s.Bounds {
		c := results.RehearsedBound{Bound: b.String()}
		if ok {
			check, fails := fit.CheckBound(b, resp, "response")
			c.US, c.Holds = check.Value, check.Holds
			if fails != "" {
				why = append(why, fails)
				over := time.Duration(check.Value*float64(time.Microsecond)) - b.Max
				unexplained = unexplained || check.Flags != 0 || over > wait
			}
		}
		sys.Latency = append(sys.Latency, c)
	}
	sys.Fits = len(why) == 0
	if w := r.CPUWait; w != nil && w.Pct > 0 {
		sys.CPUWaitPct = w.Pct
		// The cap verdict's rule (capverify.QuietCPUWait): below it, an
		// idle machine's own wakeups; above it, a response time or a
		// rate the CPUs may have set as well as the volume, where the
		// wait is long enough to explain every failure.
		if !sys.Fits && !unexplained && w.Pct >= 100*capverify.QuietCPUWait {
			sys.Inconclusive = true
			why = append([]string{starvedWhy(w.Pct)}, why...)
		}
	}
	sys.Why = strings.Join(why, "; ")
	return sys
}

// starvedWhy is the reason an inconclusive system gives first.
func starvedWhy(pct float64) string {
	return fmt.Sprintf("its I/O waited for a CPU %s of the window, others holding them: a busy machine, not the volume, may have held it back (run again on idle CPUs)",
		units.FormatPercent(pct))
}

// response is r with its response times in the place of its latency, so
// that report's metrics read them: what a bound holds an application to.
func response(r results.Result) (results.Result, bool) {
	if r.Total.ResponseLatNS == nil {
		return r, false
	}
	r.Total.LatNS = r.Total.ResponseLatNS
	if l := r.Read.ResponseLatNS; l != nil {
		r.Read.LatNS = *l
	}
	if l := r.Write.ResponseLatNS; l != nil {
		r.Write.LatNS = *l
	}
	return r, true
}
