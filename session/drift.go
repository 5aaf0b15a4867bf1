package session

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// DriftRule is the sentinels' change test (docs/sweeps.md,
// "The change test"): run b differs from run a when the difference of
// their rates is at least Floor of a's rate and at least Sigmas standard
// errors of the difference, the standard error taken from the scatter of
// each run's one-second rounds about its own mean.
type DriftRule struct {
	// Floor is the least change that counts, as a share of a's rate: a
	// device held to a cap gives every second the same count, no scatter
	// at all, and any difference would otherwise be a change.
	Floor float64
	// Sigmas is how many standard errors the difference must reach where
	// the rounds scatter: a noisy device needs a larger change.
	Sigmas float64
}

// DefaultDriftRule: a fifth of the rate (the range SNIA's steady state
// allows within a window, and the burst step's least drop) and six
// standard errors (a run of 3 to 5 rounds estimates its scatter from
// few of them: at 4 degrees of freedom 6 is the 99.6th percentile of
// Student's t, at 8 the 99.97th).
var DefaultDriftRule = DriftRule{Floor: 0.2, Sigmas: 6}

// Verdict of one comparison of two runs.
type comparison struct {
	changed bool
	// pct is b's rate against a's, threshold the least change the test
	// calls one, both in % of a's rate.
	pct, threshold float64
}

// rounds are the whole one-second rounds of a run's window.
func rounds(r results.Result) []float64 {
	return r.TimelineIOPS[:min(r.Rounds, len(r.TimelineIOPS))]
}

// judgeable tells whether a run can be judged: it did I/O without an
// error, alone on its disk, for enough whole rounds; why says why not.
func judgeable(r results.Result) (ok bool, why string) {
	switch {
	case r.Error != nil:
		return false, "it failed: " + r.Error.Error()
	case r.Total.IOPS <= 0:
		return false, "it did no I/O"
	case r.Device.OtherLoad(0, 0):
		return false, "another process loaded the disk while it ran"
	case len(rounds(r)) < results.MinSentinelRounds:
		return false, fmt.Sprintf("%s, too few to show its scatter", units.Count(len(rounds(r)), "whole round"))
	}
	return true, ""
}

// QuietCPUWait is the share of a run's window its I/O may wait for a CPU
// without the wait explaining anything, as cap verify's.
const QuietCPUWait = 0.05

// cpuExplains tells whether the slower of two runs that differ waited
// for a CPU longer than the faster one, by enough to explain it: at the
// rate its I/Os had over the window less the extra wait, it would not
// differ from the faster one. A machine busier in one run than in the
// other, not the device, may have made the difference; the comparison is
// not judged. The waits are results.CPUWait.Wait, an upper bound of the
// time lost, which on a machine busy with other work reaches the whole
// window in both runs alike (on a loop device every kernel thread counts,
// the FUSE server's too), and the wait of iomatrix's own I/O threads
// alone, which does not: only a difference tells a run starved more, and
// the larger of the two is taken.
func (rule DriftRule) cpuExplains(a, b results.Result) bool {
	slow, fast, aSlow := b, a, false
	if a.Total.IOPS < b.Total.IOPS {
		slow, fast, aSlow = a, b, true
	}
	all, own := waitShares(slow)
	fastAll, fastOwn := waitShares(fast)
	extra := max(all-fastAll, own-fastOwn)
	switch {
	case extra < QuietCPUWait:
		return false
	case extra >= 1:
		return true
	}
	f := 1 / (1 - extra)
	slow.Total.IOPS *= f
	slow.TimelineIOPS = slices.Clone(slow.TimelineIOPS)
	for i := range slow.TimelineIOPS {
		slow.TimelineIOPS[i] *= f
	}
	if aSlow {
		return !rule.compare(slow, b).changed
	}
	return !rule.compare(a, slow).changed
}

// waitShares are the shares of a run's window its I/O may have waited
// for a CPU (results.CPUWait.Wait), and its own I/O threads waited; 0
// where they are not known.
func waitShares(r results.Result) (all, own float64) {
	window := time.Duration(r.DurationNS)
	if window <= 0 || r.CPUWait == nil {
		return 0, 0
	}
	return float64(r.CPUWait.Wait(window)) / float64(window), min(float64(r.CPUWait.IOThreadsNS)/float64(window), 1)
}

// Compare applies the rule to runs a and b, both judgeable.
func (rule DriftRule) compare(a, b results.Result) comparison {
	ya, yb := rounds(a), rounds(b)
	ss := sumSquares(ya) + sumSquares(yb)
	na, nb := float64(len(ya)), float64(len(yb))
	se := math.Sqrt(ss / (na + nb - 2) * (1/na + 1/nb))
	ma := a.Total.IOPS
	threshold := max(rule.Floor*ma, rule.Sigmas*se)
	diff := b.Total.IOPS - ma
	return comparison{changed: math.Abs(diff) >= threshold, pct: 100 * diff / ma, threshold: 100 * threshold / ma}
}

// sumSquares is the squared deviations of y about its mean.
func sumSquares(y []float64) float64 {
	var m float64
	for _, v := range y {
		m += v
	}
	m /= float64(len(y))
	var ss float64
	for _, v := range y {
		ss += (v - m) * (v - m)
	}
	return ss
}

// JudgeDrift judges the sentinel runs of doc and marks its cells, from
// the recorded runs and cells alone (a pure function: a resumed sweep
// judges its file again):
//   - the reference is the first run that can be judged (judgeable);
//     every later one is the same as it, changed from it, or unknown;
//   - a run moved when it differs from the judgeable run before it;
//   - the device shifted between two judgeable runs in a row where one
//     is at the reference's rate and the other is not, or where both are
//     changed and the later moved;
//   - a cell measured between two runs (by their start times) is marked
//     device_changed when either run is changed; InShift when the
//     device shifted between them, or one of them is unknown. A cell with
//     no run after it (a session interrupted), or none before it, is not
//     judged; nor is one between two runs at the reference's rate.
//
// A sweep told its volume's burst (Sentinels.Burst) takes a run above
// the burst's baseline by the rule as bursting (LevelBursting): it is
// neither the reference nor a change, and a cell beside it is marked
// Bursting, not device_changed: the volume was spending credits, which
// it does until they are spent, and the cells measured then are figures
// of the burst. The reference is the first run at the baseline.
func JudgeDrift(doc *results.Document, rule DriftRule) {
	s := doc.Sentinels
	if s == nil {
		return
	}
	s.FloorPct, s.Sigmas = 100*rule.Floor, rule.Sigmas
	s.Changes = nil
	ref, prev := -1, -1
	for i := range s.Runs {
		run := &s.Runs[i]
		run.Level, run.ChangePct, run.ThresholdPct, run.Moved, run.Unjudged = results.LevelUnknown, 0, 0, false, ""
		ok, why := judgeable(run.Result)
		switch {
		case !ok:
			run.Unjudged = why
			continue
		case bursting(s.Burst, run.Result, rule):
			run.Level = results.LevelBursting
			run.ChangePct = round2(100 * (run.Total.IOPS/s.Burst.BaselineIOPS - 1))
			continue
		case ref < 0:
			ref, prev = i, i
			run.Level, run.ThresholdPct = results.LevelReference, 100*rule.Floor
			continue
		}
		c := rule.compare(s.Runs[ref].Result, run.Result)
		run.ChangePct, run.ThresholdPct = round2(c.pct), round2(c.threshold)
		if c.changed && rule.cpuExplains(s.Runs[ref].Result, run.Result) {
			run.Unjudged = "the slower of it and the reference waited for a CPU long enough to explain their difference"
			continue
		}
		run.Level = results.LevelSame
		if c.changed {
			run.Level = results.LevelChanged
		}
		p := s.Runs[prev]
		move := rule.compare(p.Result, run.Result)
		run.Moved = move.changed && !rule.cpuExplains(p.Result, run.Result)
		if changedLevel(p.Level) != changedLevel(run.Level) || changedLevel(run.Level) && run.Moved {
			s.Changes = append(s.Changes, results.DeviceShift{FromRun: prev, ToRun: i,
				After: p.StartedAt, Before: windowEnd(run.Result).UTC().Format(time.RFC3339Nano),
				FromIOPS: p.Total.IOPS, ToIOPS: run.Total.IOPS, ChangePct: round2(move.pct), Back: !changedLevel(run.Level)})
		}
		prev = i
	}
	starts := make([]time.Time, len(s.Runs))
	for i, run := range s.Runs {
		starts[i] = startOf(run.Result)
	}
	for i := range doc.Results {
		r := &doc.Results[i]
		r.DeviceChanged, r.Bursting = markOf(s, starts, startOf(*r)), burstingOf(s, starts, startOf(*r))
		if r.Bursting != nil {
			r.DeviceChanged = nil
		}
	}
}

// bursting tells whether run r is above the told burst's baseline by
// the rule's floor: the volume held credits.
func bursting(b *results.SentinelBurst, r results.Result, rule DriftRule) bool {
	return b != nil && b.BaselineIOPS > 0 && r.Total.IOPS >= b.BaselineIOPS*(1+rule.Floor)
}

// burstingOf is the burst's mark of a cell that started at t: set when
// a run on either side of it was bursting.
func burstingOf(s *results.Sentinels, starts []time.Time, t time.Time) *results.BurstingMark {
	before, after := around(starts, t)
	if s.Burst == nil || before < 0 || after < 0 {
		return nil
	}
	b, a := s.Runs[before], s.Runs[after]
	if b.Level != results.LevelBursting && a.Level != results.LevelBursting {
		return nil
	}
	return &results.BurstingMark{SentinelBefore: before, SentinelAfter: after,
		SentinelIOPS: [2]float64{b.Total.IOPS, a.Total.IOPS}, BaselineIOPS: s.Burst.BaselineIOPS}
}

// around are the runs that started last before t and first after it
// (-1: none).
func around(starts []time.Time, t time.Time) (before, after int) {
	before, after = -1, -1
	if t.IsZero() {
		return before, after
	}
	for i, st := range starts {
		switch {
		case st.IsZero():
		case st.Before(t):
			before = i
		case after < 0:
			after = i
		}
	}
	return before, after
}

// markOf is the mark of a cell that started at t, between the runs of s
// (which started at starts), or nil.
func markOf(s *results.Sentinels, starts []time.Time, t time.Time) *results.DeviceChange {
	before, after := around(starts, t)
	if before < 0 || after < 0 {
		return nil
	}
	b, a := s.Runs[before], s.Runs[after]
	unknown := b.Level == results.LevelUnknown || a.Level == results.LevelUnknown
	if !changedLevel(b.Level) && !changedLevel(a.Level) {
		return nil // both at the reference's rate, or unknown beside it
	}
	return &results.DeviceChange{SentinelBefore: before, SentinelAfter: after,
		SentinelIOPS: [2]float64{b.Total.IOPS, a.Total.IOPS}, ReferenceIOPS: referenceIOPS(s),
		InShift: unknown || changedLevel(b.Level) != changedLevel(a.Level) || a.Moved}
}

// changedLevel tells whether a run's level is a change from the
// reference.
func changedLevel(level string) bool { return level == results.LevelChanged }

// referenceIOPS is the reference run's rate, 0 before there is one.
func referenceIOPS(s *results.Sentinels) float64 {
	for _, r := range s.Runs {
		if r.Level == results.LevelReference {
			return r.Total.IOPS
		}
	}
	return 0
}

// startOf is when a result's window started; zero when not recorded.
func startOf(r results.Result) time.Time {
	t, err := time.Parse(time.RFC3339Nano, r.StartedAt)
	if err != nil {
		return time.Time{}
	}
	return t
}

// windowEnd is when a result's window ended.
func windowEnd(r results.Result) time.Time {
	return startOf(r).Add(time.Duration(r.DurationNS))
}

// RerunsDue are the cells to measure again under --on-drift rerun: once
// the device is steady (the last run judged did not move from the one
// before it), the cells marked InShift, which may precede the shift, and
// when the device is back at the reference's rate every marked cell; a
// cell is measured again once at most (its first measurement kept in
// Replaced).
func RerunsDue(doc *results.Document) []results.Pattern {
	s := doc.Sentinels
	if s == nil {
		return nil
	}
	last, judged := -1, 0
	for i, r := range s.Runs {
		if r.Level != results.LevelUnknown {
			last, judged = i, judged+1
		}
	}
	if judged < 2 || s.Runs[last].Moved {
		return nil
	}
	back := !changedLevel(s.Runs[last].Level)
	done := map[string]bool{}
	for _, r := range s.Replaced {
		done[r.Name] = true
	}
	var due []results.Pattern
	for _, r := range doc.Results {
		if m := r.DeviceChanged; m != nil && !done[r.Name] && m.SentinelAfter <= last && (m.InShift || back) {
			due = append(due, r.Pattern)
		}
	}
	return due
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
