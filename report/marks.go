package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Flags mark a cell whose figure must not be read as a plain number. Every
// rendering shows each flag with its sign (text), class (HTML) or number
// format (XLSX), and explains the signs it showed once, under its tables.
type Flags uint8

const (
	// FlagApprox: a stand-in for the metric (see Metric.Measure).
	FlagApprox Flags = 1 << iota
	// FlagFewIOs: a tail percentile resting on too few I/Os to be placed
	// (see results.Confident).
	FlagFewIOs
	// FlagUnsettled: an auto window that stopped at its maximum runtime
	// without being steady and precise.
	FlagUnsettled
	// FlagDeviceChanged: a cell measured after the sweep's sentinels
	// found the device changed, or in the interval in which it did
	// (results.DeviceChange).
	FlagDeviceChanged
	// FlagBursting: a cell measured while the sweep's sentinels found the
	// volume above the baseline of the burst the sweep was told of
	// (results.BurstingMark).
	FlagBursting
)

// AllFlags is every flag together.
const AllFlags = FlagApprox | FlagFewIOs | FlagUnsettled | FlagDeviceChanged | FlagBursting

// The signs of the flags in text. The approximate sign goes before the
// number, the others after it, as footnote signs do.
const (
	ApproxMark    = "~"
	FewIOsMark    = "?"
	UnsettledMark = "*"
	ChangedMark   = "!"
	BurstingMark  = "^"
)

// The notes that explain the signs, one line each.
const (
	ApproxNote = ApproxMark + " mixed cell without total.lat_ns (an older results file or a fio import): " +
		"the I/O-weighted mean of the read and write figures, not a percentile of the combined distribution"
	FewIOsNote = FewIOsMark + " low confidence: a percentile resting on fewer I/Os than it needs to be placed " +
		"(p99: 1,000, p99.9: 10,000, p99.99: 100,000, so that ten lie beyond it); a second run may put it far from there"
	UnsettledNote = UnsettledMark + " not converged: --runtime auto stopped this cell at --max-runtime before its IOPS were " +
		"steady and within --precision; its figures are only as precise as its ci_pct says"
	ChangedNote = ChangedMark + " device changed: measured after the sweep's sentinels found the device's rate moved from " +
		"their first run's, or in the interval in which it moved; not a figure of the device the unmarked cells measured " +
		"(the sentinels' runs and the moves are under the tables)"
	BurstingNote = BurstingMark + " bursting: measured while the sweep's sentinels found the volume above the baseline of its " +
		"burst (sweep --burst): a figure of the burst, not of what the volume sustains; fit leaves it out"
)

// flagInfo describes one flag for the renderings.
type flagInfo struct {
	flag  Flags
	sign  string
	class string // HTML
	note  string
	title string // a short tooltip
}

var flagInfos = []flagInfo{
	{FlagApprox, ApproxMark, "approx", ApproxNote, "approximate: see the notes under the tables"},
	{FlagFewIOs, FewIOsMark, "fewios", FewIOsNote, "low confidence: too few I/Os for this percentile"},
	{FlagUnsettled, UnsettledMark, "unsettled", UnsettledNote, "not converged: stopped at the maximum runtime"},
	{FlagDeviceChanged, ChangedMark, "changed", ChangedNote, "device changed: measured after the device's rate moved, or while it did"},
	{FlagBursting, BurstingMark, "bursting", BurstingNote, "bursting: measured above the volume's baseline, during its burst"},
}

// Has tells whether f holds flag.
func (f Flags) Has(flag Flags) bool { return f&flag != 0 }

// Decorate puts the signs of f around a rendered number.
func (f Flags) Decorate(s string) string {
	for _, fi := range f.held() {
		if fi.flag == FlagApprox {
			s = fi.sign + s
		} else {
			s += fi.sign
		}
	}
	return s
}

// Signs is the signs of f alone, in their order around a number.
func (f Flags) Signs() string { return f.Decorate("") }

// held is the descriptions of the flags f holds, in display order.
func (f Flags) held() []flagInfo {
	var held []flagInfo
	for _, fi := range flagInfos {
		if f.Has(fi.flag) {
			held = append(held, fi)
		}
	}
	return held
}

// Notes are the explanations of the signs f holds, one per line.
func (f Flags) Notes() []string {
	var notes []string
	for _, fi := range f.held() {
		notes = append(notes, fi.note)
	}
	return notes
}

// classes are the HTML classes of f.
func (f Flags) classes() []string {
	var c []string
	for _, fi := range f.held() {
		c = append(c, fi.class)
	}
	return c
}

// titles is a tooltip for a cell flagged f.
func (f Flags) titles() string {
	var t []string
	for _, fi := range f.held() {
		t = append(t, fi.title)
	}
	return strings.Join(t, "; ")
}

// DescribeStop says how a result's window ended and how precise its mean
// IOPS are, in one line; auto holds the run's auto settings, if any.
func DescribeStop(r results.Result, auto *results.AutoSettings) string {
	rounds := units.Count(r.Rounds, "one-second round")
	ci := "precision unknown (too few rounds, or rounds too correlated, to tell)"
	if r.CIPct != nil {
		ci = fmt.Sprintf("mean IOPS ±%s %% (95 %% confidence)", plain(*r.CIPct))
	}
	var s string
	switch r.Stop {
	case results.StopConverged:
		s = fmt.Sprintf("auto, converged after %s: steady, %s", rounds, ci)
	case results.StopMaxRuntime:
		s = fmt.Sprintf("auto, NOT converged (%s): stopped at the maximum runtime after %s, %s", UnsettledMark, rounds, ci)
		if auto != nil {
			s += fmt.Sprintf(", ±%s %% asked", plain(auto.PrecisionPct))
		}
	case results.StopFixed:
		s = fmt.Sprintf("fixed, %s, %s", rounds, ci)
	default:
		return fmt.Sprintf("%s (how it ended was not recorded)", time.Duration(r.DurationNS).Round(time.Millisecond))
	}
	if r.Restarts > 0 {
		s += fmt.Sprintf("; restarted %s after a step in its rounds (what came before is ramp)", units.Count(r.Restarts, "time"))
	}
	return s
}

// plain renders a percentage with the decimals it has, and no more.
func plain(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
