package fit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// ErrCannotJudge is returned when a results document holds no cell that
// can answer a need without assuming more than was measured.
var ErrCannotJudge = errors.New("cannot be judged from these results")

// Verdict is the answer to a need.
type Verdict struct {
	Need Need
	Fits bool
	// Cell is the measured result the verdict rests on; Member names it in
	// a fleet (the worst member's).
	Cell   results.Result
	Member string
	// IOPS is the cell's, Headroom its excess over the need (IOPS/need − 1).
	IOPS     float64
	Headroom float64
	// Latency holds the cell's figure (µs) and flags for each bound.
	Latency []BoundCheck
	// Why says what does not hold, when it does not fit.
	Why string
	// Notes are caveats on the cell (an unsettled window).
	Notes []string
}

// BoundCheck is one latency bound against the cell.
type BoundCheck struct {
	Bound report.Bound
	Value float64 // µs
	Flags report.Flags
	Holds bool
}

// JudgeFile reads the results file at path and judges need on it
// (Judge). A file that cannot be read, or whose cells cannot judge the
// need (ErrCannotJudge), is bad input naming it.
func JudgeFile(path string, need Need) (*results.Document, Verdict, error) {
	doc, err := results.ReadResultsFile(path)
	if err != nil {
		return nil, Verdict{}, fault.AsInput(err)
	}
	v, err := Judge(doc, need)
	if errors.Is(err, ErrCannotJudge) {
		return nil, Verdict{}, fault.Input("", "%s: %w", path, err)
	}
	return doc, v, err
}

// Judge answers a need from measured random-I/O cells, conservatively:
// it never interpolates and never takes a cell more favourable than the
// need. The block size is the need's or the next larger measured one;
// the read share the nearest measured at or below the need's (writes
// cost more); the concurrency the highest measured at or below the
// need's, or, when the need gives none, the measured one with the most
// IOPS that meets the bounds. A fleet is judged on each member, and the
// verdict is the worst member's.
func Judge(doc *results.Document, need Need) (Verdict, error) {
	if len(doc.Members) == 0 {
		return judgeCells(doc.Results, need)
	}
	var worst *Verdict
	for _, m := range doc.Members {
		v, err := judgeCells(m.Results, need)
		if err != nil {
			return Verdict{}, fmt.Errorf("member %s: %w", m.Label, err)
		}
		v.Member = m.Label
		if worst == nil || worseVerdict(v, *worst) {
			worst = &v
		}
	}
	return *worst, nil
}

func worseVerdict(a, b Verdict) bool {
	if a.Fits != b.Fits {
		return !a.Fits
	}
	return a.Headroom < b.Headroom
}

func judgeCells(rs []results.Result, need Need) (Verdict, error) {
	v, err := judgeBaseline(rs, need)
	if n := burstingCells(rs); err != nil && n > 0 {
		return v, fmt.Errorf("%w (%s measured while the volume burst left out: fit judges on baseline figures)", err, units.Count(n, "cell"))
	}
	if err != nil {
		return v, err
	}
	if n := burstingCells(rs); n > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("judged on baseline figures: %s measured while the volume burst (marked bursting) left out", units.Count(n, "cell")))
	}
	if m := v.Cell.DeviceChanged; m != nil {
		v.Notes = append(v.Notes, fmt.Sprintf("the cell was measured while the sweep's sentinels found the device's rate moved from their first run's (%s IOPS, then %s and %s): "+
			"it may not be a figure of the device the other cells measured; sweep again, or with --on-drift rerun",
			units.Thousands(m.ReferenceIOPS, 0), units.Thousands(m.SentinelIOPS[0], 0), units.Thousands(m.SentinelIOPS[1], 0)))
	}
	return v, nil
}

// burstingCells counts the cells measured during a burst.
func burstingCells(rs []results.Result) int {
	n := 0
	for _, r := range rs {
		if r.Bursting != nil {
			n++
		}
	}
	return n
}

// judgeBaseline judges need on the cells of rs but those measured during
// a burst (results.Result.Bursting): a volume's burst is not what it
// sustains.
func judgeBaseline(rs []results.Result, need Need) (Verdict, error) {
	random := slices.DeleteFunc(slices.Clone(rs), func(r results.Result) bool {
		return r.Pattern.Access != results.Random || r.Error != nil || r.Total.IOs == 0 || r.Bursting != nil
	})
	bs := int64(0)
	for _, r := range random {
		if b := r.Pattern.BlockSize; b >= need.BlockSize && (bs == 0 || b < bs) {
			bs = b
		}
	}
	if bs == 0 {
		return Verdict{}, fmt.Errorf("%w: no random cell at a block size of %s or larger", ErrCannotJudge, results.ShortSize(need.BlockSize))
	}
	readPct := -1
	for _, r := range random {
		if p := r.Pattern.ReadPct; r.Pattern.BlockSize == bs && float64(p) <= need.ReadPct()+1e-9 && p > readPct {
			readPct = p
		}
	}
	if readPct < 0 {
		return Verdict{}, fmt.Errorf("%w: no %s cell with %.0f %% reads or fewer", ErrCannotJudge, results.ShortSize(bs), need.ReadPct())
	}
	var cells []results.Result
	for _, r := range random {
		if r.Pattern.BlockSize == bs && r.Pattern.ReadPct == readPct {
			cells = append(cells, r)
		}
	}
	inFlight := func(r results.Result) int { return r.Pattern.QueueDepth * max(r.Pattern.Jobs, 1) }
	if need.Concurrency > 0 {
		best := -1
		for i, r := range cells {
			if c := inFlight(r); c <= need.Concurrency && (best < 0 || c > inFlight(cells[best])) {
				best = i
			}
		}
		if best < 0 {
			return Verdict{}, fmt.Errorf("%w: no %s cell with %d %% reads at %d I/Os in flight or fewer", ErrCannotJudge, results.ShortSize(bs), readPct, need.Concurrency)
		}
		return judgeCell(cells[best], need), nil
	}
	var pick *Verdict
	for _, r := range cells {
		v := judgeCell(r, need)
		if pick == nil || betterCell(v, *pick) {
			pick = &v
		}
	}
	return *pick, nil
}

// betterCell prefers a cell that meets the bounds, then more IOPS.
func betterCell(a, b Verdict) bool {
	ab, bb := boundsHold(a.Latency), boundsHold(b.Latency)
	if ab != bb {
		return ab
	}
	return a.IOPS > b.IOPS
}

func boundsHold(cs []BoundCheck) bool {
	for _, c := range cs {
		if !c.Holds {
			return false
		}
	}
	return true
}

func judgeCell(r results.Result, need Need) Verdict {
	iops, flags := report.IOPS.Measure(r)
	v := Verdict{Need: need, Cell: r, IOPS: iops, Headroom: iops/need.Total() - 1}
	if flags&report.FlagUnsettled != 0 {
		v.Notes = append(v.Notes, "the cell's window did not converge (--runtime auto): its IOPS are not known within the precision asked")
	}
	var why []string
	if iops < need.Total() {
		why = append(why, fmt.Sprintf("%s IOPS measured, %s needed", units.Thousands(iops, 0), units.Thousands(need.Total(), 0)))
	}
	for _, b := range need.Bounds {
		c, fails := CheckBound(b, r, "")
		if fails != "" {
			why = append(why, fails)
		}
		v.Latency = append(v.Latency, c)
	}
	v.Fits = len(why) == 0
	v.Why = strings.Join(why, "; ")
	return v
}

// CheckBound holds r to the bound b, through report's metric of it; what
// names the figure in the reason ("response": its p99 response): why
// says what does not hold, "" when it holds. A figure resting on too few
// I/Os, or approximate, proves nothing, however small it is.
func CheckBound(b report.Bound, r results.Result, what string) (c BoundCheck, why string) {
	val, f := b.Metric.Measure(r)
	c = BoundCheck{Bound: b, Value: val, Flags: f}
	name := strings.TrimPrefix(string(b.Metric), "lat-")
	if what != "" {
		name += " " + what
	}
	limit := float64(b.Max) / float64(time.Microsecond)
	switch {
	case f&report.FlagFewIOs != 0:
		return c, fmt.Sprintf("its %s rests on too few I/Os (%s) to prove %s", name, units.Thousands(float64(r.Total.IOs), 0), b)
	case f&report.FlagApprox != 0:
		return c, fmt.Sprintf("its %s is not a percentile (a file without the total's latency): %s cannot be proved", name, b)
	case val >= limit:
		return c, fmt.Sprintf("%s %s µs, not below %s", name, units.Thousands(val, 0), b.Max)
	}
	c.Holds = true
	return c, ""
}
