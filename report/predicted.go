package report

import (
	"fmt"
	"html/template"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Predicted is a model's prediction of a cell against what was measured
// (iocost model's check), for the chart of predicted against measured.
type Predicted struct {
	Cell                string
	Predicted, Measured float64
	// Judged: a point the model is judged on (drawn filled); the others
	// are drawn hollow.
	Judged bool
}

// PredictedPage is what the page shows: its title, the lines the model
// gives, the points and the notes.
type PredictedPage struct {
	Title  string
	Lines  []string
	Points []Predicted
	Notes  []string
}

// WritePredictedHTML renders an offline page with one chart, predicted
// against measured IOPS on log axes with the line where they are equal,
// and the table of every point, worst ratio first as given.
func WritePredictedHTML(w io.Writer, pg PredictedPage) error {
	svg, err := predictedSVG(pg)
	if err != nil {
		return err
	}
	type row struct {
		Cell, Predicted, Measured, Ratio, Mark string
	}
	var rows []row
	for _, p := range pg.Points {
		mark := ""
		if p.Judged {
			mark = "judged"
		}
		rows = append(rows, row{p.Cell, fmt.Sprintf("%.0f", p.Predicted), fmt.Sprintf("%.0f", p.Measured), fmt.Sprintf("%.3f", p.Measured/p.Predicted), mark})
	}
	return predictedPage.Execute(w, map[string]any{"Page": pg, "Chart": svg, "Rows": rows})
}

func predictedSVG(pg PredictedPage) (template.HTML, error) {
	p := newPlot()
	p.Title.Text = "predicted against measured IOPS"
	p.X.Label.Text = "measured IOPS"
	p.Y.Label.Text = "predicted IOPS (full vrate)"
	var judged, other plotter.XYs
	lo, hi := math.Inf(1), 0.0
	for _, pt := range pg.Points {
		if pt.Predicted <= 0 || pt.Measured <= 0 {
			continue
		}
		xy := plotter.XY{X: pt.Measured, Y: pt.Predicted}
		if pt.Judged {
			judged = append(judged, xy)
		} else {
			other = append(other, xy)
		}
		lo, hi = min(lo, pt.Measured, pt.Predicted), max(hi, pt.Measured, pt.Predicted)
	}
	if len(judged)+len(other) == 0 {
		return template.HTML("<p>no cells to chart</p>"), nil
	}
	lo, hi = lo/1.5, hi*1.5
	equal, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return "", err
	}
	equal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(equal)
	p.Legend.Add("predicted = measured", equal)
	for _, set := range []struct {
		xy     plotter.XYs
		filled bool
		label  string
	}{{other, false, "held by its concurrency"}, {judged, true, "judged (its shape's capacity)"}} {
		if len(set.xy) == 0 {
			continue
		}
		s, err := plotter.NewScatter(set.xy)
		if err != nil {
			return "", err
		}
		s.GlyphStyle.Radius = vg.Points(3)
		if set.filled {
			s.GlyphStyle.Shape = draw.CircleGlyph{}
		} else {
			s.GlyphStyle.Shape = draw.RingGlyph{}
		}
		p.Add(s)
		p.Legend.Add(set.label, s)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
	p.Add(plotter.NewGrid())
	return inlineSVG(p)
}

var predictedPage = page(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>iomatrix — {{.Page.Title}}</title>
{{template "style"}}
</head>
<body>
<h1>{{.Page.Title}}</h1>
{{range .Page.Lines}}<pre style="white-space: pre-wrap">{{.}}</pre>
{{end}}
<div class="charts">{{.Chart}}</div>
<p class="legend">A point below the dashed line is a cell the model promises less than the device did; above it, one it would admit more to than the device did: there the model is optimistic.</p>
<table>
<tr><th>cell</th><th>predicted IOPS</th><th>measured IOPS</th><th>measured/predicted</th><th></th></tr>
{{range .Rows}}<tr><th>{{.Cell}}</th><td>{{.Predicted}}</td><td>{{.Measured}}</td><td>{{.Ratio}}</td><td>{{.Mark}}</td></tr>
{{end}}</table>
{{with .Page.Notes}}<p class="legend">{{range .}}{{.}}.<br>{{end}}</p>{{end}}
</body>
</html>
`)
