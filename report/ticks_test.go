package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"

	"github.com/iomatrix/iomatrix/results"
)

func labels(ticks []plot.Tick) []string {
	var l []string
	for _, t := range ticks {
		if t.Label != "" {
			l = append(l, t.Label)
		}
	}
	return l
}

func TestLatencyTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		// The quick profile's p99 charts: 1-2-5 across a decade and a half.
		{66, 1500, []string{"100", "200", "500", "1000"}},
		// Two decades and more: powers of ten only.
		{50, 20000, []string{"100", "1000", "10000"}},
		{1, 100, []string{"1", "10", "100"}},
		// Under one decade, below 1 µs.
		{0.15, 0.9, []string{"0.2", "0.5"}},
		// Too narrow for two 1-2-5 labels: every multiple, of which
		// these ranges hold one, and the ends.
		{110, 260, []string{"110", "200", "260"}},
		{310, 480, []string{"310", "400", "480"}},
		{120, 290, []string{"120", "200", "290"}},
		{200, 290, []string{"200", "290"}},
		// Not even two multiples: the ends, rounded inwards.
		{1119, 1679, []string{"1200", "1600"}},
		{0.0123, 0.0171, []string{"0.013", "0.017"}},
	} {
		got := labels(latencyTicks{}.Ticks(c.lo, c.hi))
		if !slices.Equal(got, c.want) {
			t.Errorf("Ticks(%v, %v) labels %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
	// A 1.6× range has every multiple labelled, so it shows two.
	if got := labels((latencyTicks{}).Ticks(250, 420)); !slices.Equal(got, []string{"300", "400"}) {
		t.Errorf("Ticks(250, 420) labels %v, want [300 400]", got)
	}
	// Unlabelled ticks stay at each multiple inside the range.
	if n := len((latencyTicks{}).Ticks(66, 1500)); n != 3+9+1 { // 70..90, 100..900, 1000
		t.Errorf("Ticks(66, 1500): %d ticks, want 13", n)
	}
	if got := (latencyTicks{}).Ticks(0, 10); got != nil {
		t.Errorf("Ticks(0, 10) = %v, want none", got)
	}
}

// The quick profile's p99 chart carries its 2× and 5× labels in the SVG.
func TestLatencyChartLabels(t *testing.T) {
	tb := Table{Title: "random 4 KiB p99 latency (µs)", Rows: []string{"read"}, Cols: []string{"QD1", "QD32"}}
	tb.Cells = [][]*Cell{{cellAt(1, 100), cellAt(32, 1500)}}
	svg, err := chartSVG(tb, LatP99)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{">100<", ">200<", ">500<", ">1000<"} {
		if !strings.Contains(string(svg), l) {
			t.Errorf("p99 chart over 100–1,500 µs lacks the label %s", l)
		}
	}
}

// cellAt is a plain cell of a one-job result at queue depth qd.
func cellAt(qd int, v float64) *Cell {
	r := &results.Result{Pattern: results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: qd, Jobs: 1}}
	return &Cell{Value: v, Result: r}
}

func TestRateTicks(t *testing.T) {
	if got := labels((rateTicks{}).Ticks(0, 50000)); !slices.Contains(got, "25,000") || slices.Contains(got, "25000.00") {
		t.Errorf("IOPS axis labels %v, want 25,000 written as the tables write IOPS", got)
	}
}

func TestClockTicks(t *testing.T) {
	at := func(s string) float64 {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return float64(v.Unix())
	}
	india := time.FixedZone("IST", 5*3600+1800)
	for _, c := range []struct {
		lo, hi string
		loc    *time.Location
		want   []string
	}{
		// Two hours from a minute past: every 15 minutes, on the quarter;
		// the tick at the right end has no label, which the chart's edge
		// would cut.
		{"2024-05-01T08:01:00Z", "2024-05-01T10:00:00Z", time.UTC,
			[]string{"08:15", "08:30", "08:45", "09:00", "09:15", "09:30", "09:45"}},
		// An hour: every 10 minutes.
		{"2024-05-01T09:00:00Z", "2024-05-01T10:02:00Z", time.UTC, []string{"09:00", "09:10", "09:20", "09:30", "09:40", "09:50"}},
		{"2024-05-01T09:00:00Z", "2024-05-01T10:04:00Z", time.UTC, []string{"09:00", "09:10", "09:20", "09:30", "09:40", "09:50", "10:00"}},
		// A minute: seconds shown.
		{"2024-05-01T09:00:00Z", "2024-05-01T09:01:00Z", time.UTC, []string{"09:00:00", "09:00:10", "09:00:20", "09:00:30", "09:00:40", "09:00:50"}},
		// Round hours of the zone's clock, half past UTC's: 08:00 UTC is
		// 13:30 IST.
		{"2024-05-01T08:00:00Z", "2024-05-01T14:00:00Z", india, []string{"14:00", "15:00", "16:00", "17:00", "18:00", "19:00"}},
		// A week: whole days, by the date.
		{"2024-05-01T00:00:00Z", "2024-05-07T12:00:00Z", time.UTC, []string{"May 1", "May 2", "May 3", "May 4", "May 5", "May 6", "May 7"}},
	} {
		got := labels(clockTicks{c.loc}.Ticks(at(c.lo), at(c.hi)))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s to %s in %s: %q, want %q", c.lo, c.hi, c.loc, got, c.want)
		}
	}
	if ticks := (clockTicks{time.UTC}).Ticks(5, 5); ticks != nil {
		t.Errorf("an empty axis: %v", ticks)
	}
}
