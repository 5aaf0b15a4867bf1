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
	Phase, VictimIOPS, P50, P99, P999, AggressorIOPS string
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
		rows = append(rows, isolateRow{Phase: p.Name, VictimIOPS: units.Thousands(p.Victim.Total.IOPS, 0),
			P50: lat(LatP50), P99: lat(LatP99), P999: lat(LatP999), AggressorIOPS: agg})
	}
	return rows
}

// WriteIsolateHTML writes an isolation test as one offline page, the
// phases side by side.
func WriteIsolateHTML(w io.Writer, rep *results.IsolateReport) error {
	return isolatePage.Execute(w, map[string]any{"R": rep, "Rows": isolateRows(rep), "Cap": DescribeCap(rep.Cap),
		"Victim": rep.Phases[0].Victim.Name, "Aggressor": rep.Phases[1].Aggressor.Name,
		"Window": fmt.Sprintf("%s + %s ramp", time.Duration(rep.RuntimeNS), time.Duration(rep.RampNS))})
}

// WriteIsolateText writes an isolation test as text: the phases, the
// drift of the victim alone, the capped aggressor against its cap, the
// notes and the verdict.
func WriteIsolateText(w io.Writer, rep *results.IsolateReport) error {
	fmt.Fprintf(w, "isolate %s: victim %s, aggressor %s, cap %s, %s + %s ramp per phase, engine %s\n\n",
		rep.Target.Path, rep.Phases[0].Victim.Name, rep.Phases[1].Aggressor.Name, DescribeCap(rep.Cap),
		time.Duration(rep.RuntimeNS), time.Duration(rep.RampNS), rep.Engine)
	fmt.Fprintf(w, "%-12s %12s %10s %10s %10s %15s\n", "phase", "victim IOPS", "p50 µs", "p99 µs", "p99.9 µs", "aggressor IOPS")
	for _, r := range isolateRows(rep) {
		fmt.Fprintf(w, "%-12s %12s %10s %10s %10s %15s\n", r.Phase, r.VictimIOPS, r.P50, r.P99, r.P999, r.AggressorIOPS)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "victim alone: %s IOPS before, %s after (%+.1f %%); the baseline is their mean\n",
		units.Thousands(rep.Phases[0].Victim.Total.IOPS, 0), units.Thousands(rep.Phases[3].Victim.Total.IOPS, 0), 100*rep.Drift)
	if rep.CapIOPS > 0 {
		fmt.Fprintf(w, "capped aggressor: %s IOPS against the cap's %s (%+.1f %%)\n",
			units.Thousands(rep.Phases[2].Aggressor.Total.IOPS, 0), units.Thousands(rep.CapIOPS, 0), rep.AggCappedPct)
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
<h1>Does the cap shield the neighbours?</h1>
<p class="meta">{{.R.Target.Path}} ({{.R.Target.Kind}} on {{.R.Target.Disk}}); victim {{.Victim}}, aggressor {{.Aggressor}}; cap {{.Cap}}; {{.Window}} per phase; engine {{.R.Engine}}; {{.R.Host.Hostname}}, {{.R.StartedAt}}</p>
<table>
<caption>The three phases</caption>
<tr><th></th>{{range .Rows}}<th>{{.Phase}}</th>{{end}}</tr>
<tr><td>victim IOPS</td>{{range .Rows}}<td>{{.VictimIOPS}}</td>{{end}}</tr>
<tr><td>victim p50 (µs)</td>{{range .Rows}}<td>{{.P50}}</td>{{end}}</tr>
<tr><td>victim p99 (µs)</td>{{range .Rows}}<td>{{.P99}}</td>{{end}}</tr>
<tr><td>victim p99.9 (µs)</td>{{range .Rows}}<td>{{.P999}}</td>{{end}}</tr>
<tr><td>aggressor IOPS</td>{{range .Rows}}<td>{{.AggressorIOPS}}</td>{{end}}</tr>
</table>
<p class="{{if .R.Inconclusive}}meta{{else if .R.Protected}}pass{{else}}fail{{end}}">{{.R.Verdict}}</p>
{{range .R.Notes}}<p class="meta">Note: {{.}}</p>{{end}}
</body>
</html>
`))
