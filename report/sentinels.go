package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// The sentinels of a sweep in words: each run as the sweep's progress
// shows it, each move of the device's rate, and the summary every report
// gives under its tables. Nothing here judges: session.JudgeDrift has
// recorded the runs' levels, the moves and the cells' marks.

// DescribeSentinelRun is run i of doc's sentinels and its judgement, in
// one line.
func DescribeSentinelRun(doc *results.Document, i int) string {
	s := doc.Sentinels
	r := s.Runs[i]
	head := fmt.Sprintf("sentinel %d (%s): ", i+1, r.Name)
	if r.Error != nil {
		return head + "failed, not judged: " + r.Error.Error()
	}
	figure := units.Thousands(r.Total.IOPS, 0) + " IOPS"
	switch r.Level {
	case results.LevelReference:
		return head + figure + ", the reference the later runs are held to"
	case results.LevelSame:
		return head + fmt.Sprintf("%s, %+.1f %% from the reference (a change is %.1f %% or more): unchanged", figure, r.ChangePct, r.ThresholdPct)
	case results.LevelChanged:
		return head + fmt.Sprintf("%s, %+.1f %% from the reference (a change is %.1f %% or more): DEVICE CHANGED", figure, r.ChangePct, r.ThresholdPct)
	case results.LevelBursting:
		return head + fmt.Sprintf("%s, %+.1f %% from the burst's baseline of %s IOPS: bursting, the cells beside it are marked", figure, r.ChangePct, units.Thousands(s.Burst.BaselineIOPS, 0))
	}
	why := r.Unjudged
	if why == "" {
		why = "no reason recorded"
	}
	return head + figure + ", not judged: " + why
}

// DescribeShift is one move of the device's rate, in one line, with the
// cells measured between its two runs.
func DescribeShift(doc *results.Document, sh results.DeviceShift) string {
	s := doc.Sentinels
	in := 0
	for _, r := range doc.Results {
		if m := r.DeviceChanged; m != nil && m.SentinelAfter == sh.ToRun {
			in++
		}
	}
	what := "device changed"
	if sh.Back {
		what = "device back at the reference's rate"
	}
	return fmt.Sprintf("%s between %s and %s: the sentinel %s went from %s to %s IOPS (%+.1f %%) between its runs %d and %d; %s measured in between marked device_changed (%s)",
		what, clock(sh.After), clock(sh.Before), s.Pattern.Name(), units.Thousands(sh.FromIOPS, 0), units.Thousands(sh.ToIOPS, 0), sh.ChangePct,
		sh.FromRun+1, sh.ToRun+1, units.Count(in, "cell"), ChangedMark)
}

// clock is an RFC 3339 time to the second, in UTC.
func clock(t string) string {
	at, err := time.Parse(time.RFC3339Nano, t)
	if err != nil {
		return t
	}
	return at.UTC().Format("2006-01-02 15:04:05Z")
}

// DriftLines are the sentinels of doc in a few lines: their settings and
// reference, each move of the device, and the cells marked; none for a
// document without sentinels.
func DriftLines(doc *results.Document) []string {
	s := doc.Sentinels
	if s == nil {
		return nil
	}
	lines := []string{fmt.Sprintf("Sentinels: %s, %s of %s + %s ramp, every %s; a change is %s %% of the reference's rate or more, and %s standard errors",
		s.Pattern.Name(), units.Count(len(s.Runs), "run"), time.Duration(s.RuntimeNS), time.Duration(s.RampNS), time.Duration(s.EveryNS),
		plain(s.FloorPct), plain(s.Sigmas))}
	ref, lo, hi, judged := 0.0, 0.0, 0.0, 0
	for _, r := range s.Runs {
		switch r.Level {
		case results.LevelReference:
			ref = r.Total.IOPS
		case results.LevelSame, results.LevelChanged:
			if judged == 0 {
				lo, hi = r.ChangePct, r.ChangePct
			}
			lo, hi, judged = min(lo, r.ChangePct), max(hi, r.ChangePct), judged+1
		}
	}
	switch {
	case ref == 0:
		lines = append(lines, "no run measured a reference rate: no cell judged")
		return lines
	case judged == 0:
		lines = append(lines, fmt.Sprintf("reference %s IOPS; no later run judged", units.Thousands(ref, 0)))
	case len(s.Changes) == 0:
		lines = append(lines, fmt.Sprintf("reference %s IOPS; %s within %+.1f %% to %+.1f %% of it: no change",
			units.Thousands(ref, 0), units.Count(judged, "later run"), lo, hi))
	default:
		lines = append(lines, fmt.Sprintf("reference %s IOPS; the later runs from %+.1f %% to %+.1f %% of it", units.Thousands(ref, 0), lo, hi))
	}
	for _, sh := range s.Changes {
		lines = append(lines, DescribeShift(doc, sh))
	}
	marked, inShift, unwatched := 0, 0, 0
	var last time.Time
	if n := len(s.Runs); n > 0 {
		last, _ = time.Parse(time.RFC3339Nano, s.Runs[n-1].StartedAt)
	}
	for _, r := range doc.Results {
		if m := r.DeviceChanged; m != nil {
			marked++
			if m.InShift {
				inShift++
			}
		}
		if at, err := time.Parse(time.RFC3339Nano, r.StartedAt); err == nil && at.After(last) {
			unwatched++
		}
	}
	if marked > 0 {
		l := fmt.Sprintf("%s marked device_changed (%s)", units.Count(marked, "cell"), ChangedMark)
		if inShift > 0 {
			l += fmt.Sprintf(", %d of them measured in the interval of a move, which they may precede", inShift)
		}
		lines = append(lines, l)
	}
	if n := len(s.Replaced); n > 0 {
		lines = append(lines, fmt.Sprintf("%s measured again after a change (on-drift rerun): the first measurements are the document's sentinels.replaced",
			units.Count(n, "cell")))
	}
	if unwatched > 0 {
		lines = append(lines, fmt.Sprintf("%s measured after the last run, not judged (the sweep stopped before its last run; a resumed sweep judges them)",
			units.Count(unwatched, "cell")))
	}
	return lines
}

// writeDrift writes doc's DriftLines after a blank line.
func writeDrift(w io.Writer, doc *results.Document) error {
	lines := DriftLines(doc)
	if len(lines) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	return err
}
