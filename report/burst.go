package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// burstLines are a burst measurement's figures, one per line, as the
// text and the page show them.
func burstLines(d *results.Burst) []string {
	rate := func(iops, bps float64) string {
		return fmt.Sprintf("%s IOPS, %s/s", units.Thousands(iops, 0), units.FormatSize(int64(bps)))
	}
	lines := []string{fmt.Sprintf("pattern: %s, flat out from its first I/O, second by second for at most %s",
		d.Pattern.Name(), time.Duration(d.MaxRuntimeNS))}
	lines = append(lines, fmt.Sprintf("rule: a drop of %g %% or more, by %g standard errors, after %d seconds at least and held %d",
		d.Rule.MinDropPct, d.Rule.Sigmas, d.Rule.MinBefore, d.Rule.MinAfter))
	s := d.Step
	if s == nil {
		lines = append(lines, "verdict: "+d.Verdict+": "+d.Summary)
		return lines
	}
	sigmas := fmt.Sprintf("%.1f", s.Sigmas)
	if s.Sigmas == math.MaxFloat64 {
		sigmas = "no scatter: beyond any"
	}
	lines = append(lines,
		fmt.Sprintf("burst:    %s for %s", rate(s.BurstIOPS, s.BurstBPS), time.Duration(s.DurationNS).Round(10*time.Millisecond)),
		fmt.Sprintf("baseline: %s (the step after second %d, %s standard errors)", rate(s.BaselineIOPS, s.BaselineBPS), s.StepAt, sigmas),
		fmt.Sprintf("bucket:   %s, %s above the baseline", units.Count(int(math.Round(s.BucketIOs)), "I/O"), units.FormatSize(int64(s.BucketBytes))),
		fmt.Sprintf("written or read during the burst: %s, %s", units.Count(int(math.Round(s.BurstIOs)), "I/O"), units.FormatSize(int64(s.BurstBytes))))
	if p := d.Probe; p != nil {
		if p.Skipped != "" {
			lines = append(lines, "bucket kind: not probed: "+p.Skipped)
		} else {
			lines = append(lines, fmt.Sprintf("bucket kind: %s: at %s the baseline did %s, %.0f %% of its IOPS and %.0f %% of its bytes a second (held: within %g %%)",
				p.Bucket, units.FormatSize(p.Pattern.BlockSize), rate(p.IOPS, p.BPS), p.IOPSPct, p.BPSPct, p.RangePct))
		}
	}
	if r := d.Refill; r != nil {
		idle := time.Duration(r.IdleNS).Round(time.Second)
		switch {
		case !r.Found:
			lines = append(lines, fmt.Sprintf("refill: after %s idle no second step within the maximum runtime: not known", idle))
		case r.Full:
			lines = append(lines, fmt.Sprintf("refill: at least %s: after %s idle the bucket was whole again (%s)", rate(r.IOPS, r.BPS), idle, units.Count(int(math.Round(r.BucketIOs)), "I/O")))
		default:
			lines = append(lines, fmt.Sprintf("refill: %s: %s earned back in %s idle", rate(r.IOPS, r.BPS), units.Count(int(math.Round(r.BucketIOs)), "I/O"), idle))
		}
	}
	return lines
}

// WriteBurstText writes a burst measurement as text: its verdict, its
// figures, and its rate second by second with the step marked.
func WriteBurstText(w io.Writer, d *results.Burst) error {
	var b strings.Builder
	fmt.Fprintf(&b, "burst on %s: %s\n", d.Target.Path, d.Verdict)
	for _, l := range burstLines(d) {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if len(d.RatesIOPS) > 0 {
		b.WriteString("\n  second  IOPS\n")
		for i, r := range d.RatesIOPS {
			mark := ""
			if d.Step != nil && i == d.Step.StepAt {
				mark = "  <- step"
			}
			fmt.Fprintf(&b, "  %6d  %s%s\n", i, units.Thousands(r, 0), mark)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// burstPlot draws a burst measurement's rate against time, the step a
// vertical line and the burst and baseline rates dashed lines, with the
// refill run's rates after the idle time when there was one.
func burstPlot(d *results.Burst) (*plot.Plot, error) {
	p := newPlot()
	p.Title.Text = "rate over time: " + d.Pattern.Name()
	p.X.Label.Text = "seconds from the start"
	p.Y.Label.Text = "IOPS"
	p.Legend.Top = true
	line := func(name string, xys plotter.XYs, c color.Color, dashed bool) error {
		if len(xys) == 0 {
			return nil
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = c
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		if name != "" {
			p.Legend.Add(name, l)
		}
		return nil
	}
	perSecond := func(rates []float64, from float64) plotter.XYs {
		xys := make(plotter.XYs, 0, len(rates))
		for i, r := range rates {
			xys = append(xys, plotter.XY{X: from + float64(i) + 0.5, Y: r})
		}
		return xys
	}
	end := float64(len(d.RatesIOPS))
	if err := line("IOPS each second", perSecond(d.RatesIOPS, 0), color.RGBA{R: 31, G: 119, B: 180, A: 255}, false); err != nil {
		return nil, err
	}
	top := 0.0
	for _, r := range d.RatesIOPS {
		top = math.Max(top, r)
	}
	if rf := d.Refill; rf != nil {
		from := end + time.Duration(rf.IdleNS).Seconds()
		if err := line("after the idle time", perSecond(rf.RatesIOPS, from), color.RGBA{R: 44, G: 160, B: 44, A: 255}, false); err != nil {
			return nil, err
		}
		end = from + float64(len(rf.RatesIOPS))
		for _, r := range rf.RatesIOPS {
			top = math.Max(top, r)
		}
	}
	if s := d.Step; s != nil {
		at := time.Duration(s.DurationNS).Seconds()
		grey := color.Gray{Y: 90}
		if err := line(fmt.Sprintf("step at %.1f s", at), plotter.XYs{{X: at, Y: 0}, {X: at, Y: top * 1.05}}, color.Black, false); err != nil {
			return nil, err
		}
		if err := line("burst "+units.Thousands(s.BurstIOPS, 0)+" IOPS", plotter.XYs{{X: 0, Y: s.BurstIOPS}, {X: at, Y: s.BurstIOPS}}, grey, true); err != nil {
			return nil, err
		}
		if err := line("baseline "+units.Thousands(s.BaselineIOPS, 0)+" IOPS", plotter.XYs{{X: at, Y: s.BaselineIOPS}, {X: end, Y: s.BaselineIOPS}}, grey, true); err != nil {
			return nil, err
		}
	}
	p.X.Min, p.Y.Min = 0, 0
	p.Y.Max = top * 1.1
	p.Add(plotter.NewGrid())
	return p, nil
}

// WriteBurstSVG writes the chart alone, as an SVG file.
func WriteBurstSVG(w io.Writer, d *results.Burst) error {
	p, err := burstPlot(d)
	if err != nil {
		return fmt.Errorf("burst chart: %w", err)
	}
	c := vgsvg.New(7*vg.Inch, 3.6*vg.Inch)
	p.Draw(draw.New(c))
	_, err = c.WriteTo(w)
	return err
}

// WriteBurstHTML writes a burst measurement as one offline page: the
// chart and the figures.
func WriteBurstHTML(w io.Writer, d *results.Burst) error {
	p, err := burstPlot(d)
	if err != nil {
		return fmt.Errorf("burst chart: %w", err)
	}
	svg, err := inlineSVG(p)
	if err != nil {
		return err
	}
	return burstPage.Execute(w, map[string]any{"D": d, "Lines": burstLines(d), "Chart": svg})
}

var burstPage = page(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>iomatrix burst: {{.D.Target.Path}}</title>{{template "style"}}</head>
<body>
<h1>Burst on {{.D.Target.Path}}: {{.D.Verdict}}</h1>
<p>{{.D.Summary}}</p>
{{.Chart}}
<ul>{{range .Lines}}<li>{{.}}</li>{{end}}</ul>
<p class="note">iomatrix {{.D.Tool.Version}} on {{.D.Host.Hostname}}, started {{.D.StartedAt}}.</p>
</body></html>
`)
