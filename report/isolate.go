package report

import (
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// isolateRow is one phase as the text and HTML show it.
type isolateRow struct {
	Phase, VictimIOPS, P50, P99, P999, AggressorIOPS, PairIOPS, Control string
}

func isolateRows(rep *results.IsolateReport) []isolateRow {
	var rows []isolateRow
	for _, p := range rep.Phases {
		lat := func(m Metric) string {
			if m.Absent(p.Victim) {
				return "—" // no I/O, no latency
			}
			v, f := m.Measure(p.Victim)
			return FormatMeasure(m, v, f)
		}
		agg := "—"
		if p.Aggressor != nil {
			agg = units.Thousands(p.Aggressor.Total.IOPS, 0)
		}
		vic := units.Thousands(p.Victim.Total.IOPS, 0)
		if p.VictimIdle {
			vic = "idle"
		}
		control := p.Control
		if c := p.Controller; c != nil {
			control += fmt.Sprintf(", vrate %.0f %%", c.VRatePct)
		}
		rows = append(rows, isolateRow{Phase: p.Name, VictimIOPS: vic,
			P50: lat(LatP50), P99: lat(LatP99), P999: lat(LatP999), AggressorIOPS: agg,
			PairIOPS: units.Thousands(p.PairIOPS(), 0), Control: control})
	}
	return rows
}

// WriteIsolateHTML writes an isolation test as one offline page, the
// phases side by side.
func WriteIsolateHTML(w io.Writer, rep *results.IsolateReport) error {
	return isolatePage.Execute(w, map[string]any{"R": rep, "Rows": isolateRows(rep), "Control": isolateControl(rep),
		"Victim": rep.Phases[0].Victim.Name, "Aggressor": rep.Phases[1].Aggressor.Name, "Lines": iocostLines(rep),
		"Window": fmt.Sprintf("%s + %s ramp", time.Duration(rep.RuntimeNS), time.Duration(rep.RampNS))})
}

// isolateControl says how the aggressor was held.
func isolateControl(rep *results.IsolateReport) string {
	if ic := rep.IOCost; ic != nil {
		return fmt.Sprintf("iocost on %s, weights victim %d, aggressor %d", ic.Device, ic.VictimWeight, ic.AggressorWeight)
	}
	return "cap " + DescribeCap(rep.Cap)
}

// iocostLines are an iocost test's figures, in words: the controller's
// lines, the gain, the work conservation and the io.max comparison.
func iocostLines(rep *results.IsolateReport) []string {
	ic := rep.IOCost
	if ic == nil {
		return nil
	}
	un, wt := rep.Phases[1], rep.Phases[2]
	out := []string{
		"io.cost.model: " + ic.Model,
		"io.cost.qos: " + ic.QoS,
		fmt.Sprintf("gain: beside the weighted aggressor the victim did %s IOPS, beside the uncontrolled one %s: ×%.2f",
			units.Thousands(wt.Victim.Total.IOPS, 0), units.Thousands(un.Victim.Total.IOPS, 0), ic.Gain),
		fmt.Sprintf("work conservation: the pair did %s IOPS weighted, %s uncontrolled: %.0f %%",
			units.Thousands(wt.PairIOPS(), 0), units.Thousands(un.PairIOPS(), 0), 100*ic.Conservation),
	}
	if c := wt.Controller; c != nil {
		held := "the model's rate: it held nothing back for the QoS's latency targets"
		switch {
		case c.VRatePct < 99.5:
			held = "below the model's rate, to keep the QoS's latency targets"
		case c.VRatePct > 100.5:
			held = "above the model's rate: the device kept the QoS's latency targets beyond it"
		}
		out = append(out, fmt.Sprintf("controller, weighted: vrate %.2f %% as the phase ended, %s; device time charged by the model: victim %.0f ms, aggressor %.0f ms",
			c.VRatePct, held, c.VictimUsageMS, c.AggressorUsageMS))
	}
	how := "the cap given with --cap"
	if ic.IOMaxSearched {
		how = "caps halved from the weighted aggressor's IOPS, then bisected"
	}
	if ic.IOMaxPhase != "" {
		out = append(out, fmt.Sprintf("io.max (%s): under %s, the highest that left the victim at least %.0f %% of its weighted IOPS, the pair did ×%.2f fewer IOPS than weighted",
			how, ic.IOMaxPhase, 100*ic.SameProtection, ic.PairVsIOMax))
	} else {
		out = append(out, fmt.Sprintf("io.max (%s): none left the victim %.0f %% of its weighted IOPS", how, 100*ic.SameProtection))
	}
	if ic.IdleGain > 0 {
		out = append(out, fmt.Sprintf("with the victim idle: the aggressor did %s IOPS weighted, %s under that io.max: ×%.2f, the work the cap gives up",
			units.Thousands(ic.IdleWeighted, 0), units.Thousands(ic.IdleIOMax, 0), ic.IdleGain))
	}
	return out
}

// WriteIsolateText writes an isolation test as text: the phases, the
// drift of the victim alone, the capped aggressor against its cap (or
// iocost's figures), the notes and the verdict.
func WriteIsolateText(w io.Writer, rep *results.IsolateReport) error {
	fmt.Fprintf(w, "isolate %s: victim %s, aggressor %s, %s, %s + %s ramp per phase, engine %s\n\n",
		rep.Target.Path, rep.Phases[0].Victim.Name, rep.Phases[1].Aggressor.Name, isolateControl(rep),
		time.Duration(rep.RuntimeNS), time.Duration(rep.RampNS), rep.Engine)
	rows := isolateRows(rep)
	width := len("phase")
	for _, r := range rows {
		width = max(width, len(r.Phase))
	}
	pair := rep.IOCost != nil
	fmt.Fprintf(w, "%-*s %12s %10s %10s %10s %15s", width, "phase", "victim IOPS", "p50 µs", "p99 µs", "p99.9 µs", "aggressor IOPS")
	if pair {
		fmt.Fprintf(w, " %10s  %s", "pair IOPS", "control")
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s %12s %10s %10s %10s %15s", width, r.Phase, r.VictimIOPS, r.P50, r.P99, r.P999, r.AggressorIOPS)
		if pair {
			fmt.Fprintf(w, " %10s  %s", r.PairIOPS, r.Control)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "victim alone: %s IOPS before, %s after (%+.1f %%); the baseline is their mean\n",
		units.Thousands(rep.Phases[0].Victim.Total.IOPS, 0), units.Thousands(rep.Phases[len(rep.Phases)-1].Victim.Total.IOPS, 0), 100*rep.Drift)
	if rep.CapIOPS > 0 {
		fmt.Fprintf(w, "capped aggressor: %s IOPS against the cap's %s (%+.1f %%)\n",
			units.Thousands(rep.Phases[2].Aggressor.Total.IOPS, 0), units.Thousands(rep.CapIOPS, 0), rep.AggCappedPct)
	}
	for _, l := range iocostLines(rep) {
		fmt.Fprintln(w, l)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w, rep.Verdict)
	return nil
}

var isolatePage = template.Must(template.New("isolate").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>iomatrix isolate — {{.R.Target.Path}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.8em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.pass { color: #060; font-weight: 700; } .fail { color: #b00; font-weight: 700; }
.meta { color: #555; font-size: 0.9em; }
</style>
</head>
<body>
<h1>Does the {{if .R.IOCost}}controller{{else}}cap{{end}} shield the neighbours?</h1>
<p class="meta">{{.R.Target.Path}} ({{.R.Target.Kind}} on {{.R.Target.Disk}}); victim {{.Victim}}, aggressor {{.Aggressor}}; {{.Control}}; {{.Window}} per phase; engine {{.R.Engine}}; {{.R.Host.Hostname}}, {{.R.StartedAt}}</p>
<table>
<caption>The phases</caption>
<tr><th></th>{{range .Rows}}<th>{{.Phase}}</th>{{end}}</tr>
<tr><td>victim IOPS</td>{{range .Rows}}<td>{{.VictimIOPS}}</td>{{end}}</tr>
<tr><td>victim p50 (µs)</td>{{range .Rows}}<td>{{.P50}}</td>{{end}}</tr>
<tr><td>victim p99 (µs)</td>{{range .Rows}}<td>{{.P99}}</td>{{end}}</tr>
<tr><td>victim p99.9 (µs)</td>{{range .Rows}}<td>{{.P999}}</td>{{end}}</tr>
<tr><td>aggressor IOPS</td>{{range .Rows}}<td>{{.AggressorIOPS}}</td>{{end}}</tr>
{{if .R.IOCost}}<tr><td>pair IOPS</td>{{range .Rows}}<td>{{.PairIOPS}}</td>{{end}}</tr>
<tr><td>control</td>{{range .Rows}}<td>{{.Control}}</td>{{end}}</tr>{{end}}
</table>
{{range .Lines}}<p class="meta">{{.}}</p>{{end}}
<p class="{{if .R.Inconclusive}}meta{{else if .R.Protected}}pass{{else}}fail{{end}}">{{.R.Verdict}}</p>
{{range .R.Notes}}<p class="meta">Note: {{.}}</p>{{end}}
</body>
</html>
`))
