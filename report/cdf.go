package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/results"
)

// cellHistogram is a result's whole completion latency, both directions
// merged: the result's own histograms, or a fleet cell's union of its
// members'; nil where the file keeps none for a direction the pattern has.
func cellHistogram(r results.Result) *hist.Histogram {
	if r.Fleet == nil {
		h, err := r.LatencyHistogram()
		if err != nil {
			return nil
		}
		return h
	}
	var all *hist.Histogram
	for _, d := range []struct {
		has bool
		lat *results.Latency
	}{{r.Pattern.ReadPct > 0, r.Fleet.ReadLatNS}, {r.Pattern.ReadPct < 100, r.Fleet.WriteLatNS}} {
		if !d.has {
			continue
		}
		h, err := d.lat.Histogram()
		if h == nil || err != nil {
			return nil
		}
		if all == nil {
			all = h
		} else {
			all.Merge(h)
		}
	}
	return all
}

// cdfSVGs draw, for each row of a table (of the section titled section),
// the latency distribution of its cells, a line per column: none for a row
// without a histogram.
func cdfSVGs(section string, t Table) ([]template.HTML, error) {
	var out []template.HTML
	for i, row := range t.Rows {
		var cols []string
		var hs []*hist.Histogram
		for j, c := range t.Cells[i] {
			if c == nil {
				continue
			}
			if h := cellHistogram(*c.Result); h != nil && h.Count() > 0 {
				cols, hs = append(cols, t.Cols[j]), append(hs, h)
			}
		}
		if len(hs) == 0 {
			continue
		}
		svg, err := cdfSVG(section+", "+row+": latency distribution", cols, hs)
		if err != nil {
			return nil, err
		}
		out = append(out, svg)
	}
	return out, nil
}

// cdfSVG draws each histogram as its cumulative distribution: latency on
// a log axis, the share of I/Os at or below it as nines (1 is p90, 2 p99,
// 3 p99.9), so the tail takes as much room as the body.
func cdfSVG(title string, labels []string, hs []*hist.Histogram) (template.HTML, error) {
	p := newPlot()
	p.Title.Text = title
	p.X.Label.Text = "latency (µs)"
	p.Y.Label.Text = "percentile"
	p.Legend.Top, p.Legend.Left = true, true
	lowest, top := math.Inf(1), 0.0
	for k, h := range hs {
		pts := cdfPoints(h)
		lowest = math.Min(lowest, pts[0].X)
		top = math.Max(top, pts[len(pts)-1].Y)
		if err := (chartCurve{all: pts}).addTo(p, labels[k], plotutil.Color(k)); err != nil {
			return "", fmt.Errorf("chart %s: %w", title, err)
		}
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = latencyTicks{}
	p.X.Min = lowest / 1.2
	p.Y.Min, p.Y.Max = 0, math.Ceil(top)
	p.Y.Tick.Marker = ninesTicks{}
	p.Add(plotter.NewGrid())
	return inlineSVG(p)
}

// cdfPoints are a histogram's cumulative distribution in µs and nines:
// at each bucket's value (hist.Value, clamped to the exact min and max),
// the share of the I/Os up to it. A point is kept where the line turns
// visibly (2 % further right or 0.02 nines higher), so a chart stays
// small; the last, at the maximum, is placed at the nines of one I/O in
// the count, where the share of 1 would lie at infinity.
func cdfPoints(h *hist.Histogram) plotter.XYs {
	n := float64(h.Count())
	var pts plotter.XYs
	var seen uint64
	for i := range hist.Buckets {
		c := h.At(i)
		if c == 0 {
			continue
		}
		seen += c
		x := float64(max(h.Min(), min(hist.Value(i), h.Max()))) / 1000
		y := math.Log10(n)
		if seen < h.Count() {
			y = -math.Log10(1 - float64(seen)/n)
		}
		if last := len(pts) - 1; last > 0 && seen < h.Count() && x < pts[last].X*1.02 && y < pts[last].Y+0.02 {
			continue
		}
		pts = append(pts, plotter.XY{X: x, Y: y})
	}
	if len(pts) == 1 { // one bucket: a step from its value up
		pts = append(plotter.XYs{{X: pts[0].X, Y: 0}}, pts...)
	}
	return pts
}

// ninesTicks label the nines axis as percentiles: 0 is p0, 0.3 the
// median, 1 p90, 2 p99 and so on.
type ninesTicks struct{}

func (ninesTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := []plot.Tick{{Value: math.Log10(2), Label: "p50"}}
	for k := math.Ceil(lo); k <= hi; k++ {
		label := "p0"
		if k > 0 {
			label = "p" + strconv.FormatFloat(100-100*math.Pow(10, -k), 'f', -1, 64)
		}
		ticks = append(ticks, plot.Tick{Value: k, Label: label})
	}
	return ticks
}
