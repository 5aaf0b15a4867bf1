package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/iomatrix/iomatrix/results"
)

// A load–latency curve is one shape (a pattern but for its rate) measured
// open-loop at several offered rates: the response time an application
// issuing I/O at its own pace sees, load by load. The matrices never show
// these cells (a rate is no queue depth); the curves do.

// KneeFactor is the knee rule's bound: the knee is the highest offered
// load, going up from the lowest, at which every load so far was sustained
// and kept its p99 response time within KneeFactor × the floor, the
// lowest p99 of any load up to it (see Knee).
const KneeFactor = 2

// Curve is one shape's open-loop results, by offered load.
type Curve struct {
	// Shape is the pattern the points share, with no rate; Arrival is
	// theirs (a curve never mixes poisson and uniform arrivals: their
	// response times differ at the same rate).
	Shape   results.Pattern
	Arrival string
	Points  []CurvePoint // ascending offered load
	// Knee is the index in Points of the knee (see Knee), or -1.
	Knee int
	// Max is the closed-loop result of the same shape, when the document
	// has one: the capacity the offered loads are fractions of.
	Max *results.Result
}

// CurvePoint is one offered load and what it got.
type CurvePoint struct {
	Offered, Achieved float64
	// Scheduled: the result records how it kept to its schedule
	// (Result.Rate); without it, Sustained is unknown and false.
	Scheduled, Sustained bool
	// P50, P99 and P999 are the response time in µs (from each I/O's
	// intended start to its completion), with the flags of each figure.
	P50, P99, P999 float64
	Flags          [3]Flags
	// Service is set when the result records no response time at all
	// (written before the engine kept to its schedule): the figures are
	// then service time, and say so.
	Service bool
	Result  *results.Result
}

// Title names the curve: its shape and arrivals.
func (c Curve) Title() string {
	return fmt.Sprintf("%s, %s arrivals", shapeName(c.Shape), c.Arrival)
}

// shapeName is the name of a shape: its pattern's name, the queue depth
// read as the most I/Os in flight.
func shapeName(p results.Pattern) string {
	p.Rate = results.Rate{}
	return p.Name()
}

// Curves gathers a document's open-loop results (Result.Rate set) into
// one curve per shape and arrival, in the order of each shape's first
// result. A curve of one point is still a curve: its table shows what was
// measured, and it has no knee.
func Curves(rs []results.Result) []Curve {
	type key struct {
		shape   results.Pattern
		arrival string
	}
	var order []key
	byKey := map[key]*Curve{}
	closed := map[results.Pattern]*results.Result{}
	for i := range rs {
		r := &rs[i]
		if !OpenLoop(*r) {
			if r.Error == nil {
				closed[r.Pattern] = r
			}
			continue
		}
		shape := r.Pattern
		shape.Rate = results.Rate{}
		k := key{shape, r.Pattern.Rate.Arrival}
		if r.Rate != nil {
			k.arrival = cmp.Or(r.Rate.Arrival, k.arrival)
		}
		k.arrival = cmp.Or(k.arrival, results.ArrivalPoisson)
		c := byKey[k]
		if c == nil {
			c = &Curve{Shape: shape, Arrival: k.arrival}
			byKey[k] = c
			order = append(order, k)
		}
		c.Points = append(c.Points, pointOf(r))
	}
	curves := make([]Curve, 0, len(order))
	for _, k := range order {
		c := *byKey[k]
		slices.SortStableFunc(c.Points, func(a, b CurvePoint) int { return cmp.Compare(a.Offered, b.Offered) })
		c.Knee = Knee(c.Points)
		c.Max = closed[k.shape]
		curves = append(curves, c)
	}
	return curves
}

// openLoop tells whether a result was measured on a schedule: the rules by
// which the matrices leave it out and the curves take it in.
func OpenLoop(r results.Result) bool { return r.Rate != nil || r.Pattern.Rate.Open() }

func pointOf(r *results.Result) CurvePoint {
	pt := CurvePoint{Offered: r.Pattern.Rate.Total(), Achieved: r.Total.IOPS, Result: r}
	if s := r.Rate; s != nil {
		pt.Offered = cmp.Or(s.TargetIOPS, pt.Offered)
		pt.Achieved = cmp.Or(s.AchievedIOPS, pt.Achieved)
		pt.Scheduled, pt.Sustained = true, s.Sustained
	}
	for i, m := range []Metric{LatP50, LatP99, LatP999} {
		v, f, service := ResponseMeasure(*r, m)
		pt.Flags[i] = f
		pt.Service = pt.Service || service
		switch i {
		case 0:
			pt.P50 = v
		case 1:
			pt.P99 = v
		case 2:
			pt.P999 = v
		}
	}
	return pt
}

// ResponseMeasure is a latency metric of a result's response time (v is
// NaN where the result has none, as Metric.Absent says): the
// merged histogram's, or its directions' (exact for one direction, the
// I/O-weighted stand-in for a mix, flagged approximate); with no response
// time recorded, the service time, and service is set.
func ResponseMeasure(r results.Result, m Metric) (v float64, f Flags, service bool) {
	resp := r
	resp.Total.LatNS = r.Total.ResponseLatNS
	resp.Read.LatNS, resp.Write.LatNS = zeroIfNil(r.Read.ResponseLatNS), zeroIfNil(r.Write.ResponseLatNS)
	// A direction with I/O but no response summary: the result has none.
	hasDir := (r.Read.IOs == 0 || r.Read.ResponseLatNS != nil) && (r.Write.IOs == 0 || r.Write.ResponseLatNS != nil)
	if r.Total.ResponseLatNS == nil && !(hasDir && r.Total.IOs > 0) {
		resp, service = r, true
	}
	if m.Absent(resp) {
		return math.NaN(), 0, service
	}
	v, f = m.Measure(resp)
	return v, f, service
}

func zeroIfNil(l *results.Latency) results.Latency {
	if l == nil {
		return results.Latency{}
	}
	return *l
}

// Knee is the index of the knee of points (ascending offered load), or -1
// when there is none to mark.
//
// The rule: going up from the lowest load, the knee is the last load
// before the first that either was not sustained or whose p99 response
// time exceeds KneeFactor × the floor, the lowest p99 of the loads below
// it. It needs at least two points, a lowest load that was sustained and
// has a p99, and some load past the knee: when every load measured stays
// within the bound, the knee lies beyond them and none is marked (the
// table says so).
//
// Why this rule rather than the point of greatest curvature: curvature
// depends on how the axes are scaled (linear or logarithmic) and on how
// the loads are spaced, and with ten noisy points it jumps about; a ratio
// to the floor is scale-free, reproducible, and says what a sizing
// document needs: "up to here, the tail at most doubles". The floor is
// the lowest p99 so far rather than the lightest load's alone because
// noise only ever raises a p99: one slow first load (a stall of the
// neighbours) would otherwise widen the bound for the whole curve. A load
// that builds a backlog is past the knee whatever its latency says, since
// the latency of a backlog grows with the run's length; and the first
// load to leave the bound ends the search, since a curve that comes back
// down after it is noise, not headroom.
func Knee(points []CurvePoint) int {
	if len(points) < 2 || !points[0].Sustained || !(points[0].P99 > 0) {
		return -1
	}
	floor := points[0].P99
	for i, pt := range points {
		if !pt.Sustained || math.IsNaN(pt.P99) || pt.P99 > KneeFactor*floor {
			return i - 1
		}
		floor = math.Min(floor, pt.P99)
	}
	return -1 // within the bound at every load measured
}

// kneeFloor is the floor the knee at index knee was judged against.
func kneeFloor(points []CurvePoint, knee int) float64 {
	floor := math.Inf(1)
	for _, pt := range points[:knee+1] {
		floor = math.Min(floor, pt.P99)
	}
	return floor
}

// KneeText says where a curve's knee is, or why none is marked, in a
// sentence.
func (c Curve) KneeText() string {
	switch {
	case c.Knee >= 0:
		pt := c.Points[c.Knee]
		return fmt.Sprintf("knee: %s offered IOPS%s, p99 response %s µs (the highest load, going up, that was sustained with its p99 within %d× the floor, the lowest p99 up to it: %s µs)",
			FormatValue(IOPS, pt.Offered), c.shareText(pt.Offered), FormatValue(LatP99, pt.P99), KneeFactor, FormatValue(LatP99, kneeFloor(c.Points, c.Knee)))
	case len(c.Points) < 2:
		return "knee: needs at least two loads"
	case !c.Points[0].Scheduled:
		return "knee: none, the lowest load records no schedule (it ran closed-loop, on an engine without open-loop runs)"
	case !c.Points[0].Sustained || !(c.Points[0].P99 > 0):
		return "knee: none, the lowest load was not sustained"
	}
	return fmt.Sprintf("knee: beyond the highest load measured (%s IOPS): every load was sustained with its p99 within %d× the lowest p99 below it",
		FormatValue(IOPS, c.Points[len(c.Points)-1].Offered), KneeFactor)
}

// share is an offered load as a whole share of the closed-loop
// maximum, "40 %", and false without a maximum.
func (c Curve) share(offered float64) (string, bool) {
	if c.Max == nil || c.Max.Total.IOPS <= 0 {
		return "", false
	}
	return fmt.Sprintf("%.0f %%", 100*offered/c.Max.Total.IOPS), true
}

// shareText is share in parentheses after a figure, or "".
func (c Curve) shareText(offered float64) string {
	if s, ok := c.share(offered); ok {
		return " (" + s + " of max)"
	}
	return ""
}

// curveRows is a curve as a table: offered, share of the maximum (with
// one), achieved, sustained, p50/p99/p99.9 response and the knee's mark;
// the closed-loop maximum, when there is one, is the last row, its
// latencies service time.
func (c Curve) curveRows() (header []string, rows [][]string) {
	header = []string{"offered IOPS"}
	if c.Max != nil {
		header = append(header, "of max")
	}
	header = append(header, "achieved IOPS", "sustained", "p50 (µs)", "p99 (µs)", "p99.9 (µs)", "knee")
	lat := func(v float64, f Flags) string {
		if math.IsNaN(v) {
			return ""
		}
		return FormatMeasure(LatP99, v, f)
	}
	for i, pt := range c.Points {
		row := []string{FormatValue(IOPS, pt.Offered)}
		if c.Max != nil {
			s, _ := c.share(pt.Offered)
			row = append(row, s)
		}
		sustained := "no"
		switch {
		case !pt.Scheduled:
			sustained = "unknown"
		case pt.Sustained:
			sustained = "yes"
		}
		knee := ""
		if i == c.Knee {
			knee = "knee"
		}
		row = append(row, FormatValue(IOPS, pt.Achieved), sustained,
			lat(pt.P50, pt.Flags[0])+serviceMark(pt.Service), lat(pt.P99, pt.Flags[1])+serviceMark(pt.Service), lat(pt.P999, pt.Flags[2])+serviceMark(pt.Service), knee)
		rows = append(rows, row)
	}
	if m := c.Max; m != nil {
		row := []string{fmt.Sprintf("closed loop QD%d", m.Pattern.QueueDepth)}
		row = append(row, "100 %", FormatValue(IOPS, m.Total.IOPS), "")
		for _, metric := range []Metric{LatP50, LatP99, LatP999} {
			if metric.Absent(*m) {
				row = append(row, "")
				continue
			}
			v, f := metric.Measure(*m)
			row = append(row, lat(v, f)+ServiceMark)
		}
		rows = append(rows, append(row, ""))
	}
	return header, rows
}

// ServiceMark follows a latency that is service time where the table
// shows response time: the closed-loop maximum's, and an open-loop
// result's that recorded no response time.
const ServiceMark = "†"

// ServiceNote explains ServiceMark.
const ServiceNote = ServiceMark + " service time (submission to completion), not response time: the closed-loop maximum's, or a result that recorded no response time"

func serviceMark(service bool) string {
	if service {
		return ServiceMark
	}
	return ""
}

// curveNotes are the lines under a curve's table: its knee, and the
// signs its cells show.
func (c Curve) curveNotes() []string {
	notes := []string{c.KneeText()}
	var f Flags
	service := c.Max != nil
	for _, pt := range c.Points {
		for _, pf := range pt.Flags {
			f |= pf
		}
		service = service || pt.Service
	}
	if service {
		notes = append(notes, ServiceNote)
	}
	return append(notes, f.Notes()...)
}

// curveTitle is the heading of a curve's table.
func (c Curve) curveTitle() string {
	return "load–latency " + c.Title() + ": response time against offered load"
}
