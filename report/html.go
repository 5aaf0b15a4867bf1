package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

func init() { Register("html", writeHTML) }

// htmlSection is one block size (or the sequential table): charts and
// tables.
type htmlSection struct {
	Title  string
	Charts []template.HTML
	Tables []htmlTable
	// Notes explain the signs of the flagged values its tables and charts
	// show.
	Notes []string
	// Legend, when set, says what the charts' hollow points are, in
	// place of the matrices' words.
	Legend string
}

type htmlTable struct {
	Title string
	Cols  []string
	Rows  []htmlRow
	// Notes are said right under the table, before the next one.
	Notes []string
}

type htmlRow struct {
	Label string
	Cells []htmlCell
}

type htmlCell struct {
	Text  string
	Style template.CSS
	Class string
	Title string // what the cell's flags mean
}

// writeHTML renders one self-contained page: inline CSS, charts as inline
// SVG drawn by gonum/plot, no script, font or stylesheet from anywhere, so
// it opens offline and mails as one file.
func writeHTML(w io.Writer, doc *results.Document, o Options) error {
	metric := metricOf(o)
	main := BuildMetric(doc.Results, metric)
	lat := BuildMetric(doc.Results, LatP99)
	iops := BuildMetric(doc.Results, IOPS)
	var sections []htmlSection
	for i, t := range main.Tables {
		s := htmlSection{Title: strings.TrimSuffix(t.Title, " "+metric.Title())}
		if t.Access == results.Random {
			for _, chart := range []struct {
				m Metric
				t Table
			}{{metric, t}, {LatP99, lat.Tables[i]}} {
				svg, err := chartSVG(chart.t, chart.m)
				if err != nil {
					return err
				}
				s.Charts = append(s.Charts, svg)
			}
			svg, err := hockeyStickSVG(iops.Tables[i], lat.Tables[i])
			if err != nil {
				return err
			}
			s.Charts = append(s.Charts, svg)
		}
		cdfs, err := cdfSVGs(s.Title, t)
		if err != nil {
			return err
		}
		s.Charts = append(s.Charts, cdfs...)
		s.Tables = append(s.Tables, htmlTableOf(t, metric, metric.LowerIsBetter()))
		if metric != LatP99 {
			s.Tables = append(s.Tables, htmlTableOf(lat.Tables[i], LatP99, true))
		}
		s.Notes = (t.Flags() | lat.Tables[i].Flags()).Notes()
		sections = append(sections, s)
	}
	if doc.Rehearsal != nil {
		sections = append(sections, rehearsalSection(doc))
	} else {
		for _, c := range Curves(doc.Results) {
			s, err := curveSection(c)
			if err != nil {
				return err
			}
			sections = append(sections, s)
		}
	}
	var members map[string]any
	if len(doc.Members) > 0 {
		header, rows := membersRows(Members(doc, metric, outlierOf(o)), metric)
		members = map[string]any{"Title": fleetTitle(doc), "Header": header, "Rows": rows, "Note": membersNote(metric, outlierOf(o))}
	}
	return htmlPage.Execute(w, map[string]any{
		"Members":  members,
		"Describe": Describe(doc),
		"Drift":    DriftLines(doc),
		"Doc":      doc,
		"Metric":   metric.Title(),
		"Sections": sections,
		"Results":  units.Count(len(doc.Results), "result"),
		"CPUs":     units.Count(doc.Host.CPUs, "CPU"),
	})
}

// htmlTableOf colours each cell on a scale from the table's lowest to its
// highest value: green is good (high IOPS, low latency).
func htmlTableOf(t Table, m Metric, lowerIsBetter bool) htmlTable {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range t.Cells {
		for _, c := range row {
			if c != nil {
				lo, hi = math.Min(lo, c.Value), math.Max(hi, c.Value)
			}
		}
	}
	ht := htmlTable{Title: t.Title, Cols: t.Cols}
	for i, label := range t.Rows {
		r := htmlRow{Label: label}
		for _, c := range t.Cells[i] {
			if c == nil {
				r.Cells = append(r.Cells, htmlCell{})
				continue
			}
			f := 0.5
			if hi > lo {
				f = (c.Value - lo) / (hi - lo)
			}
			if lowerIsBetter {
				f = 1 - f
			}
			// From pale red (worst) through pale yellow to green (best).
			hue := 10 + 110*f
			var class []string
			if c.CDM {
				class = append(class, "cdm")
			}
			class = append(class, c.Flags.classes()...)
			r.Cells = append(r.Cells, htmlCell{
				Text: cellText(m, c),
				// The colour alone: a class may add a hatching image.
				Style: template.CSS(fmt.Sprintf("background-color:hsl(%.0f,65%%,%.0f%%)", hue, 88-10*f)),
				Class: strings.Join(class, " "),
				Title: c.Flags.titles(),
			})
		}
		ht.Rows = append(ht.Rows, r)
	}
	return ht
}

// chartSVG draws a metric against queue depth (× jobs), one line per read
// percentage: the classic curve of a sweep. Flagged values (approximate,
// low-confidence, not converged) are hollow points on the line.
func chartSVG(t Table, m Metric) (template.HTML, error) {
	logY := m.LowerIsBetter() // latencies span decades
	curves := make([]chartCurve, len(t.Rows))
	for i := range t.Rows {
		curves[i] = chartCurveOf(t.Cells[i], logY)
	}
	ticks := depthTicks(curves)
	if len(ticks) == 0 {
		return template.HTML(fmt.Sprintf("<p>%s: no data to chart</p>", template.HTMLEscapeString(t.Title))), nil
	}
	p := newPlot()
	p.Title.Text = t.Title
	p.X.Label.Text = "I/Os in flight (queue depth × jobs)"
	p.Y.Label.Text = m.Title()
	p.X.Scale = plot.LogScale{}
	p.Legend.Top = true
	p.Legend.Left = true // the curves rise to the right: the top left is free
	for i, curve := range curves {
		if len(curve.all) == 0 {
			continue // a row with nothing to draw gets no legend entry
		}
		if err := curve.addTo(p, t.Rows[i], plotutil.Color(i)); err != nil {
			return "", fmt.Errorf("chart %s: %w", t.Title, err)
		}
	}
	// Adding a curve widens the axes to its data, so the value axis is
	// pinned only now.
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = 0
	if m.Unit() == "IOPS" {
		p.Y.Tick.Marker = rateTicks{}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = latencyTicks{}
		p.Y.Min = lowestPositive(t) / 1.5
	}
	p.Add(plotter.NewGrid())
	return inlineSVG(p)
}

// hockeyStickSVG draws p99 latency against IOPS for one block size, one
// line per read share, its points in the order of the queue depths: the
// latency stays on its floor while the device has room, and leaves it
// where the queue only adds waiting. iops and lat are the same table in
// two metrics; a point is hollow where either figure is flagged.
func hockeyStickSVG(iops, lat Table) (template.HTML, error) {
	title := strings.TrimSuffix(iops.Title, " "+IOPS.Title()) + ": p99 latency against IOPS"
	p := newPlot()
	p.Title.Text = title
	p.X.Label.Text = "IOPS"
	p.Y.Label.Text = LatP99.Title()
	p.Legend.Top, p.Legend.Left = true, true // latency rises at the right
	drawn := 0
	for i, row := range iops.Rows {
		var curve chartCurve
		for j, c := range iops.Cells[i] {
			l := lat.Cells[i][j]
			if c == nil || l == nil || c.Value <= 0 || l.Value <= 0 {
				continue
			}
			pt := plotter.XY{X: c.Value, Y: l.Value}
			curve.all = append(curve.all, pt)
			if c.Flags|l.Flags != 0 {
				curve.flagged = append(curve.flagged, pt)
			} else {
				curve.exact = append(curve.exact, pt)
			}
		}
		if len(curve.all) == 0 {
			continue
		}
		if err := curve.addTo(p, row, plotutil.Color(i)); err != nil {
			return "", fmt.Errorf("chart %s: %w", title, err)
		}
		drawn++
	}
	if drawn == 0 {
		return template.HTML(fmt.Sprintf("<p>%s: no data to chart</p>", template.HTMLEscapeString(title))), nil
	}
	p.X.Min = 0
	p.X.Tick.Marker = rateTicks{}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = latencyTicks{}
	p.Y.Min = lowestPositive(lat) / 1.5
	p.Add(plotter.NewGrid())
	return inlineSVG(p)
}

// curveSection is a load–latency curve's chart and table.
func curveSection(c Curve) (htmlSection, error) {
	s := htmlSection{Title: "load–latency " + c.Title()}
	svg, err := curveSVG(c)
	if err != nil {
		return s, err
	}
	s.Charts = append(s.Charts, svg)
	header, rows := c.curveRows()
	t := htmlTable{Title: c.curveTitle(), Cols: header[1:]}
	for i, row := range rows {
		r := htmlRow{Label: row[0]}
		for _, text := range row[1:] {
			cell := htmlCell{Text: text}
			if i == c.Knee {
				cell.Class = "knee"
			}
			r.Cells = append(r.Cells, cell)
		}
		t.Rows = append(t.Rows, r)
	}
	s.Tables = append(s.Tables, t)
	s.Notes = c.curveNotes()
	s.Legend = "In the chart, a load that was not sustained (or whose figure is flagged or service time) is a hollow point; the triangle is the knee."
	return s, nil
}

// curveSVG draws p50, p99 and p99.9 response time against offered IOPS,
// a line each; a load that was not sustained is a hollow point, and the
// knee is a large diamond on the p99 line, named in the legend.
func curveSVG(c Curve) (template.HTML, error) {
	// The section's heading names the shape; the chart's width holds
	// no more than this.
	title := "response time against offered load"
	p := newPlot()
	p.Title.Text = title
	p.X.Label.Text = "offered IOPS"
	p.Y.Label.Text = "response time (µs)"
	p.Legend.Top, p.Legend.Left = true, true // latency rises at the right
	lowest := math.Inf(1)
	drawn := 0
	for i, q := range []struct {
		name string
		get  func(CurvePoint) float64
	}{{"p50", func(pt CurvePoint) float64 { return pt.P50 }}, {"p99", func(pt CurvePoint) float64 { return pt.P99 }},
		{"p99.9", func(pt CurvePoint) float64 { return pt.P999 }}} {
		var curve chartCurve
		for _, pt := range c.Points {
			v := q.get(pt)
			if !(v > 0) || math.IsInf(v, 0) {
				continue // a log axis cannot show it
			}
			xy := plotter.XY{X: pt.Offered, Y: v}
			lowest = math.Min(lowest, v)
			curve.all = append(curve.all, xy)
			if pt.Sustained && pt.Flags[i] == 0 && !pt.Service {
				curve.exact = append(curve.exact, xy)
			} else {
				curve.flagged = append(curve.flagged, xy)
			}
		}
		if len(curve.all) == 0 {
			continue
		}
		if err := curve.addTo(p, q.name, plotutil.Color(i)); err != nil {
			return "", fmt.Errorf("chart %s: %w", title, err)
		}
		drawn++
	}
	if drawn == 0 {
		return template.HTML(fmt.Sprintf("<p>%s: no data to chart</p>", template.HTMLEscapeString(title))), nil
	}
	if c.Knee >= 0 && c.Points[c.Knee].P99 > 0 {
		pt := c.Points[c.Knee]
		knee, err := plotter.NewScatter(plotter.XYs{{X: pt.Offered, Y: pt.P99}})
		if err != nil {
			return "", err
		}
		knee.Shape = draw.PyramidGlyph{}
		knee.Radius = vg.Points(6)
		knee.Color = color.Black
		p.Add(knee)
		p.Legend.Add("knee: "+FormatValue(IOPS, pt.Offered)+" IOPS", knee)
	}
	p.X.Min = 0
	p.X.Tick.Marker = rateTicks{}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = latencyTicks{}
	p.Y.Min = lowest / 1.5
	p.Add(plotter.NewGrid())
	return inlineSVG(p)
}

// chartFont is what gonum lays chart text out with: a sans-serif whose
// metrics match the common ones. The SVG then names no font, so that the
// text inherits the page's (see inlineSVG).
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot is a plot whose every text uses chartFont.
func newPlot() *plot.Plot {
	p := plot.New()
	for _, st := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		st.Font.Typeface, st.Font.Variant = chartFont.Typeface, chartFont.Variant
	}
	return p
}

// chartCurve is one row of a table as points to plot: all of them for the
// line, and the same points split by kind for the glyphs on it.
type chartCurve struct {
	all, exact, flagged plotter.XYs
}

func chartCurveOf(cells []*Cell, logY bool) chartCurve {
	var curve chartCurve
	for _, c := range cells {
		if c == nil {
			continue
		}
		x := float64(c.Result.Pattern.QueueDepth * c.Result.Pattern.Jobs)
		// Log axes cannot show zero: a cell without I/O has no point.
		if x <= 0 || (logY && c.Value <= 0) || math.IsNaN(c.Value) || math.IsInf(c.Value, 0) {
			continue
		}
		pt := plotter.XY{X: x, Y: c.Value}
		curve.all = append(curve.all, pt)
		if c.Flags != 0 {
			curve.flagged = append(curve.flagged, pt)
		} else {
			curve.exact = append(curve.exact, pt)
		}
	}
	return curve
}

// depthTicks puts one labelled tick at each depth some curve has a point
// at, in the order first met.
func depthTicks(curves []chartCurve) []plot.Tick {
	var ticks []plot.Tick
	seen := map[float64]bool{}
	for _, curve := range curves {
		for _, pt := range curve.all {
			if !seen[pt.X] {
				seen[pt.X] = true
				ticks = append(ticks, plot.Tick{Value: pt.X, Label: fmt.Sprint(pt.X)})
			}
		}
	}
	return ticks
}

// addTo draws the curve as a line with a dot on each plain point and a
// ring on each flagged one. The legend shows the line with the first kind of
// glyph drawn.
func (curve chartCurve) addTo(p *plot.Plot, label string, colour color.Color) error {
	line, err := plotter.NewLine(curve.all)
	if err != nil {
		return err
	}
	line.Color = colour
	line.Width = vg.Points(1.5)
	p.Add(line)
	legend := []plot.Thumbnailer{line}
	for _, g := range []struct {
		pts   plotter.XYs
		shape draw.GlyphDrawer
	}{{curve.exact, draw.CircleGlyph{}}, {curve.flagged, draw.RingGlyph{}}} {
		if len(g.pts) == 0 {
			continue // an empty scatter has no data range
		}
		glyphs, err := plotter.NewScatter(g.pts)
		if err != nil {
			return err
		}
		glyphs.Color = colour
		glyphs.Shape = g.shape
		p.Add(glyphs)
		if len(legend) == 1 {
			legend = append(legend, glyphs)
		}
	}
	p.Legend.Add(label, legend...)
	return nil
}

// lowestPositive is the smallest value of the table that a log axis can
// show, whether or not its cell is charted.
func lowestPositive(t Table) float64 {
	lowest := math.Inf(1)
	for _, row := range t.Cells {
		for _, c := range row {
			if c != nil && c.Value > 0 {
				lowest = math.Min(lowest, c.Value)
			}
		}
	}
	return lowest
}

// inlineSVG renders the chart at its size on the page as an SVG element
// that HTML can hold directly.
func inlineSVG(p *plot.Plot) (template.HTML, error) {
	c := vgsvg.New(6*vg.Inch, 3.4*vg.Inch)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:] // inline SVG takes no XML prolog
	}
	// The text takes the page's font rather than naming one the reader
	// may not have.
	s = strings.ReplaceAll(s, "font-family:Liberation Sans;", "font-family:inherit;")
	return template.HTML(s), nil
}

// pageParts are what every page shares: its style sheet, and a section
// with its charts, tables and notes.
var pageParts = template.Must(template.New("parts").Parse(`{{define "style"}}<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #ccc; }
.meta { color: #555; font-size: 0.9em; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
.charts svg { max-width: 100%; height: auto; border: 1px solid #eee; }
table { border-collapse: collapse; margin: 1em 0; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td { text-align: right; }
th { background: #f3f3f3; }
td.cdm { outline: 2px solid #1a4fd0; outline-offset: -2px; font-weight: 700; }
td.approx { font-style: italic; }
td.outlier { color: #b00; font-weight: 700; }
td.fewios { color: #666; text-decoration: underline dotted; }
tr:has(td.knee) th, td.knee { font-weight: 700; }
td.unsettled { background-image: repeating-linear-gradient(45deg, rgba(0,0,0,0.13) 0 2px, transparent 2px 7px); }
td.changed { box-shadow: inset 0 0 0 2px #c05000; }
td.bursting { box-shadow: inset 0 0 0 2px #7030a0; }
.legend { font-size: 0.85em; color: #555; }
</style>{{end}}{{define "section"}}
<h2>{{.Title}}</h2>
{{if .Charts}}<div class="charts">{{range .Charts}}{{.}}{{end}}</div>{{end}}
{{range .Tables}}
<table>
<caption>{{.Title}}</caption>
<tr><th></th>{{range .Cols}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.Label}}</th>{{range .Cells}}<td{{with .Class}} class="{{.}}"{{end}}{{if .Style}} style="{{.Style}}"{{end}}{{with .Title}} title="{{.}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>
{{with .Notes}}<p class="legend">{{range .}}{{.}}.<br>{{end}}</p>
{{end}}{{end}}{{if .Notes}}
<p class="legend">{{range .Notes}}{{.}}.<br>{{end}}{{with .Legend}}{{.}}{{else}}In the charts these values are hollow points; not converged cells are hatched.{{end}}</p>{{end}}
{{end}}`))

// page is a page of its own made from pageParts.
func page(text string) *template.Template {
	return template.Must(template.Must(pageParts.Clone()).New("page").Parse(text))
}

var htmlPage = page(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>iomatrix — {{.Doc.Target.Path}}</title>
{{template "style"}}
</head>
<body>
<h1>iomatrix results</h1>
<p class="meta">{{.Describe}}<br>
host {{.Doc.Host.Hostname}}, kernel {{.Doc.Host.Kernel}}, {{.CPUs}}; started {{.Doc.StartedAt}}{{if .Doc.FinishedAt}}, finished {{.Doc.FinishedAt}}{{else}}, not finished{{end}}; {{.Results}}</p>
<p class="legend">Cells are coloured from worst (red) to best (green) within each table. Outlined cells are the ones CrystalDiskMark reports (4K random, QD1 and QD32, 100 % and 0 % reads). Empty cells were not measured.</p>
{{range .Sections}}{{template "section" .}}{{end}}
{{with .Drift}}
<h2>Sentinels</h2>
<p class="legend">{{range .}}{{.}}.<br>{{end}}</p>
{{end}}{{with .Members}}
<h2>Members</h2>
<p class="meta">{{.Title}}</p>
<table>
<tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}{{if eq $i 0}}<th>{{$c}}</th>{{else if eq $c "OUTLIER"}}<td class="outlier">{{$c}}</td>{{else}}<td>{{$c}}</td>{{end}}{{end}}</tr>
{{end}}</table>
<p class="legend">{{.Note}}.</p>
{{end}}
</body>
</html>
`)
