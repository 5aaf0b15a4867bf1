package report

import (
	"fmt"
	"html/template"
	"image/color"
	"io"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/iomatrix/iomatrix/results"
)

// writeObservationHTML renders an observation as one self-contained page,
// as writeHTML does a results file: per device its I/Os per second over
// the observation's minutes and over the last window's intervals, the
// busiest hour shaded; the systems' I/Os stacked minute by minute; the
// tables and notes of the text report.
func writeObservationHTML(w io.Writer, o *results.Observation) error {
	start, err := time.Parse(time.RFC3339Nano, o.StartedAt)
	if err != nil {
		return fmt.Errorf("started_at %q: %w", o.StartedAt, err)
	}
	axis := timeAxis{start}
	var sections []htmlSection
	stacked := false
	for _, p := range observationParts(o) {
		if p.System != nil && !stacked {
			// The sum before its parts.
			stacked = true
			s, err := systemsSection(axis, o)
			if err != nil {
				return err
			}
			if s != nil {
				sections = append(sections, *s)
			}
		}
		s := htmlSection{Title: p.Title}
		if d := p.Device; d != nil {
			var h *results.BusiestHour
			if d.Summary != nil {
				h = d.Summary.BusiestHour
			}
			for _, c := range []struct {
				title string
				t     results.Timeline
			}{{d.Name + ": I/Os per second, minute by minute", d.Minutes},
				{fmt.Sprintf("%s: I/Os per second, each %s", d.Name, time.Duration(o.Settings.IntervalNS)), d.Seconds}} {
				svg, err := ioTimelineSVG(c.title, axis, c.t, h)
				if err != nil {
					return err
				}
				s.Charts = append(s.Charts, svg)
			}
		}
		if p.Pressure != nil {
			for _, c := range []struct {
				title string
				pick  func(*results.ObservedSeries) results.Timeline
			}{{"stall on I/O, % of each minute", func(s *results.ObservedSeries) results.Timeline { return s.Minutes }},
				{fmt.Sprintf("stall on I/O, %% of each %s", time.Duration(o.Settings.IntervalNS)), func(s *results.ObservedSeries) results.Timeline { return s.Seconds }}} {
				svg, err := stallSVG(c.title, axis, o, c.pick)
				if err != nil {
					return err
				}
				s.Charts = append(s.Charts, svg)
			}
		}
		for i, t := range p.Tables {
			if i == len(p.Tables)-1 {
				// Under the last table, as the text has them.
				t.Notes = append(slices.Clip(t.Notes), p.Notes...)
			}
			s.Tables = append(s.Tables, htmlTableOfRows(t))
		}
		sections = append(sections, s)
	}
	title, header := observationHeader(o)
	return observationPage.Execute(w, map[string]any{
		"Title":      title,
		"Header":     header,
		"Accounting": accountingNotes(o),
		"Sections":   sections,
	})
}

// htmlTableOfRows is a table of strings as the page draws it: the first
// column the rows' labels.
func htmlTableOfRows(t obsTable) htmlTable {
	ht := htmlTable{Title: t.Title, Cols: t.Header[1:]}
	for _, row := range t.Rows {
		r := htmlRow{Label: row[0]}
		for i, c := range row[1:] {
			cell := htmlCell{Text: c}
			if i+1 < t.Text {
				cell.Style = "text-align:left"
			}
			r.Cells = append(r.Cells, cell)
		}
		ht.Rows = append(ht.Rows, r)
	}
	for _, n := range t.Notes {
		// The page adds the full stop.
		ht.Notes = append(ht.Notes, strings.TrimSuffix(n, "."))
	}
	return ht
}

// timeAxis puts an observation's times on a chart's x axis as Unix
// seconds, marked by the clock of the zone the observation started in.
type timeAxis struct{ start time.Time }

func (a timeAxis) x(ms int64) float64 { return float64(a.start.UnixMilli()+ms) / 1e3 }

func (a timeAxis) apply(p *plot.Plot) {
	p.X.Tick.Marker = clockTicks{a.start.Location()}
	p.X.Label.Text = "time (" + zoneName(a.start) + ")"
}

// legendRoom is how far above the data a chart's value axis reaches, so
// that its legend, at the top, covers none of it.
const legendRoom = 1.3

// rateLines are rate's values over t as lines, broken where the source
// could not be read: a gap in EndMS of more than a step and a half.
func rateLines(a timeAxis, t results.Timeline, rate func(i int) float64) []plotter.XYs {
	var lines []plotter.XYs
	var cur plotter.XYs
	gap := 1.5 * float64(t.StepNS) / 1e6
	for i, end := range t.EndMS {
		if i > 0 && t.StepNS > 0 && float64(end-t.EndMS[i-1]) > gap && len(cur) > 0 {
			lines = append(lines, cur)
			cur = nil
		}
		cur = append(cur, plotter.XY{X: a.x(end), Y: rate(i)})
	}
	if len(cur) > 0 {
		lines = append(lines, cur)
	}
	return lines
}

// rateAt is counter c's rate in interval i of t, 0 where the source
// did not record c (Timeline.Rate would index past its end).
func rateAt(t results.Timeline, c string, i int) float64 {
	if i >= len(t.Counters[c]) || i >= len(t.ElapsedUS) {
		return 0
	}
	return t.Rate(c, i)
}

// timePlot is a chart over the observation's time, its legend at the
// top.
func timePlot(title, yLabel string, a timeAxis) *plot.Plot {
	p := newPlot()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	a.apply(p)
	return p
}

// addLines draws the pieces of one series' line (rateLines) a point wide
// in one style, the first of them in the legend under label.
func addLines(p *plot.Plot, label string, lines []plotter.XYs, style func(*plotter.Line)) error {
	for i, pts := range lines {
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Width = vg.Points(1)
		style(line)
		p.Add(line)
		if i == 0 {
			p.Legend.Add(label, line)
		}
	}
	return nil
}

// busiestBand is the shade behind a chart that marks the busiest hour.
var busiestBand = color.RGBA{R: 255, G: 230, B: 160, A: 255}

// ioTimelineSVG draws a device's reads and writes per second, an
// interval a point, with the busiest hour (where it falls within the
// timeline) as a shaded band behind them.
func ioTimelineSVG(title string, a timeAxis, t results.Timeline, h *results.BusiestHour) (template.HTML, error) {
	if t.Len() == 0 {
		return template.HTML(fmt.Sprintf("<p>%s: no intervals to chart</p>", template.HTMLEscapeString(title))), nil
	}
	p := timePlot(title, "I/Os per second", a)
	top := 0.0
	type series struct {
		label  string
		lines  []plotter.XYs
		colour color.Color
	}
	var all []series
	for _, s := range []struct {
		label, counter string
		colour         int
	}{{"reads", cReads, 2}, {"writes", cWrites, 0}} {
		lines := rateLines(a, t, func(i int) float64 { return rateAt(t, s.counter, i) })
		for _, l := range lines {
			for _, pt := range l {
				top = max(top, pt.Y)
			}
		}
		all = append(all, series{s.label, lines, plotutil.Color(s.colour)})
	}
	if top == 0 {
		top = 1
	}
	top *= legendRoom
	if h != nil && !h.Whole {
		first := a.x(t.EndMS[0])
		if len(t.ElapsedUS) > 0 {
			first = a.x(t.EndMS[0] - t.ElapsedUS[0]/1000)
		}
		last := a.x(t.EndMS[t.Len()-1])
		if from, to := max(first, a.x(h.StartMS)), min(last, a.x(h.EndMS)); to > from {
			band, err := plotter.NewPolygon(plotter.XYs{{X: from, Y: 0}, {X: to, Y: 0}, {X: to, Y: top}, {X: from, Y: top}})
			if err != nil {
				return "", err
			}
			band.Color = busiestBand
			band.LineStyle.Width = 0
			p.Add(band)
			p.Legend.Add("busiest hour", band)
		}
	}
	for _, s := range all {
		if err := addLines(p, s.label, s.lines, func(l *plotter.Line) { l.Color = s.colour }); err != nil {
			return "", fmt.Errorf("chart %s: %w", title, err)
		}
	}
	p.Y.Min, p.Y.Max = 0, top
	p.Y.Tick.Marker = rateTicks{}
	p.Add(plotter.NewGrid())
	return inlineSVG(p)
}

// stallSVG draws the stall shares over the timelines pick chooses (the
// minutes, or the last window's intervals): the host's some and full,
// and each system's some where its cgroup keeps its own.
func stallSVG(title string, a timeAxis, o *results.Observation, pick func(*results.ObservedSeries) results.Timeline) (template.HTML, error) {
	type line struct {
		label string
		t     results.Timeline
		c     string
	}
	var lines []line
	if h := o.HostPressure; h != nil {
		for _, f := range stallFigures {
			if _, ok := h.Minutes.Counters[f.counter]; ok {
				label, _ := figureLabel(f.figure)
				lines = append(lines, line{"host " + strings.TrimSuffix(label, " %"), pick(h), f.counter})
			}
		}
	}
	for _, sys := range o.Systems {
		if sys.IO != nil && sys.Pressure == results.PressureCgroup {
			lines = append(lines, line{sys.Name + " stall some", pick(sys.IO), results.CounterStallSome})
		}
	}
	if len(lines) == 0 || lines[0].t.Len() == 0 {
		return template.HTML(fmt.Sprintf("<p>%s: nothing to chart</p>", template.HTMLEscapeString(title))), nil
	}
	p := timePlot(title, "% of the time stalled", a)
	for k, l := range lines {
		share := func(i int) float64 { return min(100, rateAt(l.t, l.c, i)/1e4) }
		style := func(pl *plotter.Line) { pl.Color, pl.Dashes = plotutil.Color(k), plotutil.Dashes(k) }
		if err := addLines(p, l.label, rateLines(a, l.t, share), style); err != nil {
			return "", fmt.Errorf("chart %s: %w", title, err)
		}
	}
	p.Y.Min, p.Y.Max = 0, 100*legendRoom
	p.Add(plotter.NewGrid())
	return inlineSVG(p)
}

// systemsSection is the chart of every system's I/Os per second, minute
// by minute, stacked so that the top is their sum and each band one
// system's share of it, with the devices' own figure beside it; nil
// without a system whose cgroup was read.
func systemsSection(a timeAxis, o *results.Observation) (*htmlSection, error) {
	var systems []*results.ObservedSystem
	for i := range o.Systems {
		if sysIO := o.Systems[i].IO; sysIO != nil && sysIO.Minutes.Len() > 0 {
			systems = append(systems, &o.Systems[i])
		}
	}
	if len(systems) == 0 {
		return nil, nil
	}
	ends := minuteEnds(func(f func(results.Timeline)) {
		for _, sys := range systems {
			f(sys.IO.Minutes)
		}
	})
	// stack[k][j] is the sum of systems 0..k at ends[j]; a minute a
	// system was not read adds nothing.
	stack := make([][]float64, len(systems))
	for k, sys := range systems {
		stack[k] = make([]float64, len(ends))
		if k > 0 {
			copy(stack[k], stack[k-1])
		}
		m := sys.IO.Minutes
		for i, end := range m.EndMS {
			j, _ := slices.BinarySearch(ends, end)
			stack[k][j] += rateAt(m, cReads, i) + rateAt(m, cWrites, i)
		}
	}
	title := "systems' I/Os per second, stacked"
	p := timePlot(title, "I/Os per second", a)
	// The tallest first: each lower band is drawn over it.
	lines := make([]*plotter.Line, len(systems))
	for k := len(systems) - 1; k >= 0; k-- {
		pts := make(plotter.XYs, len(ends))
		for j, end := range ends {
			pts[j] = plotter.XY{X: a.x(end), Y: stack[k][j]}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", title, err)
		}
		line.Color = plotutil.Color(k)
		line.FillColor = plotutil.Color(k)
		line.Width = vg.Points(0.5)
		p.Add(line)
		lines[k] = line
	}
	for k, sys := range systems {
		p.Legend.Add(sys.Name, lines[k])
	}
	if len(o.Devices) > 0 {
		devEnds := minuteEnds(func(f func(results.Timeline)) {
			for _, d := range o.Devices {
				f(d.Minutes)
			}
		})
		sum := make([]float64, len(devEnds))
		for _, d := range o.Devices {
			for i, end := range d.Minutes.EndMS {
				j, _ := slices.BinarySearch(devEnds, end)
				sum[j] += rateAt(d.Minutes, cReads, i) + rateAt(d.Minutes, cWrites, i)
			}
		}
		pts := make(plotter.XYs, len(devEnds))
		for j, end := range devEnds {
			pts[j] = plotter.XY{X: a.x(end), Y: sum[j]}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", title, err)
		}
		line.Color = color.Black
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		p.Legend.Add("devices (diskstats)", line)
	}
	p.Y.Min = 0
	p.Y.Max *= legendRoom
	p.Y.Tick.Marker = rateTicks{}
	p.Add(plotter.NewGrid())
	svg, err := inlineSVG(p)
	if err != nil {
		return nil, err
	}
	return &htmlSection{Title: "systems", Charts: []template.HTML{svg},
		Notes: []string{"each band is one system's cgroup I/Os per second, minute by minute, and the top of the stack their sum; " +
			"the dashed line is the devices' requests per second, which the cgroups' bios need not match (see the accounting)"},
		Legend: "A minute in which a system could not be read adds nothing to the stack."}, nil
}

// minuteEnds is the sorted union of the EndMS of the timelines visit
// hands over.
func minuteEnds(visit func(func(results.Timeline))) []int64 {
	var ends []int64
	visit(func(t results.Timeline) { ends = append(ends, t.EndMS...) })
	slices.Sort(ends)
	return slices.Compact(ends)
}

var observationPage = page(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
{{template "style"}}
<style>caption { white-space: nowrap; }</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">{{range $i, $l := .Header}}{{if $i}}<br>
{{end}}{{$l}}{{end}}</p>
{{with .Accounting}}<h2>accounting</h2>
<ul class="meta">{{range .}}
<li>{{.}}</li>{{end}}
</ul>{{end}}
{{range .Sections}}{{template "section" .}}{{end}}
</body>
</html>
`)
