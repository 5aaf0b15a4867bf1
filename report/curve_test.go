package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// curveShape is the shape the constructed curves measure.
var curveShape = results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 32, Jobs: 1}

// latencyNS is a latency summary whose percentiles are these µs.
func latencyNS(count uint64, p50, p99, p999 float64) *results.Latency {
	return &results.Latency{Min: uint64(p50 * 500), Mean: p50 * 1100, P50: uint64(p50 * 1000), P90: uint64(p50 * 1500),
		P99: uint64(p99 * 1000), P999: uint64(p999 * 1000), P9999: uint64(p999 * 1200), Max: uint64(p999 * 2000), Count: count}
}

// rateResult is an open-loop result of curveShape at offered IOPS over
// 10 s, achieving achieved, with this p99 response time (p50 a third of
// it, p99.9 twice it) over a service time of 80 µs.
func rateResult(offered, achieved, p99 float64, arrival string) results.Result {
	p := curveShape
	p.Rate = results.Rate{IOPS: offered, Arrival: arrival}
	ios := uint64(achieved * 10)
	r := results.Result{Name: p.Name(), Pattern: p, DurationNS: 10e9}
	r.Read = results.DirStats{IOs: ios, Bytes: ios * 4096, IOPS: achieved, LatNS: *latencyNS(ios, 70, 80, 120),
		ServiceLatNS: latencyNS(ios, 70, 80, 120), ResponseLatNS: latencyNS(ios, p99/3, p99, 2*p99)}
	r.Total = results.Total{IOs: ios, Bytes: ios * 4096, IOPS: achieved, LatNS: latencyNS(ios, 70, 80, 120),
		ServiceLatNS: latencyNS(ios, 70, 80, 120), ResponseLatNS: latencyNS(ios, p99/3, p99, 2*p99)}
	r.Rate = &results.RateStats{Arrival: arrival, TargetIOPS: offered, ScheduledIOs: uint64(offered * 10), ScheduledIOPS: offered,
		AchievedIOPS: achieved, Sustained: achieved >= 0.995*offered}
	return r
}

// curveDoc is a sweep --rates of curveShape: its closed-loop maximum of
// 50,000 IOPS, then 10 % to 100 % of it with poisson arrivals. The p99
// response time grows as 100 µs / (1 - load): the knee rule's 2× of the
// floor (the first load's 111 µs) is crossed at 60 % (250 µs), and 100 %
// is not sustained.
func curveDoc() *results.Document {
	closed := results.Result{Name: curveShape.Name(), Pattern: curveShape, DurationNS: 10e9}
	closed.Read = results.DirStats{IOs: 500000, Bytes: 500000 * 4096, IOPS: 50000, LatNS: *latencyNS(500000, 600, 900, 1400)}
	closed.Total = results.Total{IOs: 500000, Bytes: 500000 * 4096, IOPS: 50000, LatNS: latencyNS(500000, 600, 900, 1400)}
	doc := &results.Document{SchemaVersion: 1, Target: results.TargetInfo{Path: "/dev/loop0", Kind: "block"},
		Settings: results.Settings{Profile: "rates", RuntimeNS: 10e9}, Results: []results.Result{closed}}
	for pct := 10; pct <= 100; pct += 10 {
		offered := 50000 * float64(pct) / 100
		achieved, p99 := offered, 100/(1-float64(pct)/100)
		if pct == 100 {
			achieved, p99 = 47000, 250000
		}
		doc.Results = append(doc.Results, rateResult(offered, achieved, math.Round(p99), results.ArrivalPoisson))
	}
	return doc
}

func TestKnee(t *testing.T) {
	pt := func(p99 float64, sustained bool) CurvePoint { return CurvePoint{P99: p99, Sustained: sustained} }
	for _, c := range []struct {
		name   string
		points []CurvePoint
		want   int
	}{
		{"doubles at the fourth load", []CurvePoint{pt(100, true), pt(120, true), pt(190, true), pt(201, true), pt(150, true)}, 2},
		{"exactly twice is within", []CurvePoint{pt(100, true), pt(200, true), pt(900, true)}, 1},
		{"within at every load", []CurvePoint{pt(100, true), pt(110, true), pt(150, true)}, -1},
		{"a backlog ends it whatever the latency", []CurvePoint{pt(100, true), pt(110, true), pt(120, false), pt(130, true)}, 1},
		{"the lowest load not sustained", []CurvePoint{pt(100, false), pt(110, true)}, -1},
		{"past it at the second load", []CurvePoint{pt(100, true), pt(300, true)}, 0},
		{"one load", []CurvePoint{pt(100, true)}, -1},
		{"no p99 at the lowest load", []CurvePoint{pt(math.NaN(), true), pt(100, true)}, -1},
		// A slow lightest load does not widen the bound: the floor is
		// the lowest p99 so far (here 50 µs from the second load on).
		{"a noisy first load", []CurvePoint{pt(400, true), pt(50, true), pt(90, true), pt(120, true), pt(700, true)}, 2},
		{"the floor is judged before it moves", []CurvePoint{pt(100, true), pt(80, true), pt(170, true)}, 1},
	} {
		if got := Knee(c.points); got != c.want {
			t.Errorf("%s: Knee = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestCurves(t *testing.T) {
	doc := curveDoc()
	// A second arrival process is a curve of its own, and a closed-loop
	// result of another shape none.
	doc.Results = append(doc.Results, rateResult(10000, 10000, 90, results.ArrivalUniform), rateResult(20000, 20000, 95, results.ArrivalUniform))
	other := curveShape
	other.QueueDepth = 1
	doc.Results = append(doc.Results, results.Result{Name: other.Name(), Pattern: other})
	curves := Curves(doc.Results)
	if len(curves) != 2 {
		t.Fatalf("%d curves, want 2 (poisson and uniform)", len(curves))
	}
	c := curves[0]
	if c.Arrival != results.ArrivalPoisson || len(c.Points) != 10 || c.Max == nil || c.Max.Name != "rand-4k-r100-qd32" {
		t.Fatalf("first curve: %s, %d points, max %v", c.Arrival, len(c.Points), c.Max)
	}
	if c.Knee != 4 || c.Points[c.Knee].Offered != 25000 {
		t.Errorf("knee at %d, want 4 (25,000 IOPS, 50 %%: the last load within 2× of 111 µs)", c.Knee)
	}
	if last := c.Points[9]; last.Sustained || last.Achieved != 47000 || last.P99 != 250000 || last.Service {
		t.Errorf("100 %% load: %+v", last)
	}
	if u := curves[1]; u.Arrival != results.ArrivalUniform || len(u.Points) != 2 || u.Knee != -1 {
		t.Errorf("uniform curve: %s, %d points, knee %d", u.Arrival, len(u.Points), u.Knee)
	}
	// The matrices hold the closed-loop cells only: the rate cells would
	// all take the QD32 column.
	for _, tb := range Build(doc.Results).Tables {
		for _, row := range tb.Cells {
			for _, cell := range row {
				if cell != nil && OpenLoop(*cell.Result) {
					t.Errorf("matrix %s shows the open-loop %s", tb.Title, cell.Result.Name)
				}
			}
		}
		if strings.Join(tb.Cols, " ") != "QD1 QD32" {
			t.Errorf("matrix columns %v, want QD1 QD32", tb.Cols)
		}
	}
}

// The response time falls back on the directions' and, without any, on
// the service time, which the point then says it is.
func TestCurveResponseFallback(t *testing.T) {
	r := rateResult(1000, 1000, 300, results.ArrivalPoisson)
	r.Total.ResponseLatNS = nil
	if pt := pointOf(&r); pt.P99 != 300 || pt.Service || pt.Flags[1] != 0 {
		t.Errorf("read-only result without the total's response time: p99 %v service %v flags %v, want the read's 300 µs", pt.P99, pt.Service, pt.Flags[1])
	}
	r.Read.ResponseLatNS = nil
	if pt := pointOf(&r); pt.P99 != 80 || !pt.Service {
		t.Errorf("result without any response time: p99 %v service %v, want the service time's 80 µs, marked", pt.P99, pt.Service)
	}
	// Mixed, directions only: the weighted stand-in, flagged.
	m := rateResult(1000, 1000, 300, results.ArrivalPoisson)
	m.Pattern.ReadPct = 50
	m.Total.ResponseLatNS = nil
	m.Write = m.Read
	m.Write.ResponseLatNS = latencyNS(m.Write.IOs, 200, 600, 1200)
	if pt := pointOf(&m); pt.P99 != 450 || !pt.Flags[1].Has(FlagApprox) || pt.Service {
		t.Errorf("mixed result from its directions: p99 %v flags %v service %v, want 450 approximate", pt.P99, pt.Flags[1], pt.Service)
	}
}

func TestCurveWritersGolden(t *testing.T) {
	doc := curveDoc()
	for _, c := range []struct {
		format, ext string
		opts        Options
	}{{"text", "txt", Options{}}, {"markdown", "md", Options{}}, {"csv", "wide.csv", Options{Wide: true}}, {"html", "html", Options{}}} {
		f, err := Lookup(c.format)
		if err != nil {
			t.Fatal(err)
		}
		out := render(t, f, doc, c.opts)
		golden(t, "curve."+c.ext, out)
		if !bytes.Contains(out, []byte("knee: 25,000 offered IOPS (50 % of max)")) {
			t.Errorf("%s: no knee sentence", c.format)
		}
	}
	page := htmlOf(t, doc)
	// The matrix's three charts of its one random table, and the curve's.
	if n := bytes.Count(page, []byte("<svg")); n != 4 {
		t.Errorf("%d charts, want 4", n)
	}
	for _, want := range []string{">knee: 25,000 IOPS<", ">p99.9<", "offered IOPS"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("curve chart lacks %q", want)
		}
	}
}

// A result whose pattern has a rate but which records no schedule (run
// by an engine that ran it closed-loop) is a point all the same: its
// offered rate from the pattern, never sustained, service time marked.
func TestCurveWithoutRateStats(t *testing.T) {
	r := rateResult(2000, 2000, 300, results.ArrivalPoisson)
	r.Rate, r.Read.ResponseLatNS, r.Total.ResponseLatNS = nil, nil, nil
	curves := Curves([]results.Result{r})
	if len(curves) != 1 || len(curves[0].Points) != 1 {
		t.Fatalf("curves %+v", curves)
	}
	if pt := curves[0].Points[0]; pt.Offered != 2000 || pt.Sustained || !pt.Service || curves[0].Arrival != results.ArrivalPoisson {
		t.Errorf("point %+v", pt)
	}
}
