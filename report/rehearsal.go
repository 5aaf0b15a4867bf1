package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// WriteRehearsal renders a rehearsal's document as text: a row per
// system (its need, its cap, its schedule against what it achieved, its
// p99 response time and each bound), why a system does not fit, and the
// rehearsal's verdict beside the lookup's. It decides nothing: the
// verdicts are the document's.
func WriteRehearsal(w io.Writer, doc *results.Document) error {
	return writeRehearsal(w, doc, asciiTable(), "")
}

func writeRehearsal(w io.Writer, doc *results.Document, r tw.Renderer, titlePrefix string) error {
	reh := doc.Rehearsal
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s%s — %s\n", titlePrefix, rehearsalTitle(doc), Describe(doc))
	if titlePrefix != "" {
		fmt.Fprintln(bw) // a markdown heading, then its table
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	header, rows := rehearsalRows(doc)
	if err := renderRows(w, header, rows, r); err != nil {
		return err
	}
	for _, sys := range reh.Systems {
		if sys.Why != "" {
			fmt.Fprintf(bw, "%s: %s\n", sys.Name, sys.Why)
		}
	}
	for _, sys := range reh.Systems {
		if line := ReplayedLine(sys.Replayed); line != "" {
			fmt.Fprintf(bw, "%s replayed %s\n", sys.Name, line)
		}
	}
	fmt.Fprintf(bw, "\n%s\n", RehearsalVerdict(reh))
	return bw.Flush()
}

// ReplayedLine says what a system replayed of its observed shape; ""
// for flat rates.
func ReplayedLine(r *results.ReplayedShape) string {
	if r == nil {
		return ""
	}
	var parts []string
	if r.Timeline != "" {
		parts = append(parts, fmt.Sprintf("its timeline (%s, %d steps of %s at speed %s)", r.Timeline, r.Steps,
			time.Duration(r.StepNS), strconv.FormatFloat(r.Speed, 'f', -1, 64)))
	}
	if r.BSSplit != "" {
		parts = append(parts, "its size mix "+r.BSSplit)
	}
	if r.Sync != "" {
		line := "its durable writes as " + r.Sync
		if r.FlushIOPS > 0 {
			line += fmt.Sprintf(" (%s of its writes a second their flushes, not data writes)", results.FormatRate(r.FlushIOPS))
		}
		parts = append(parts, line)
	}
	if r.BurstSize > 1 {
		parts = append(parts, fmt.Sprintf("%s of its data writes a second in bursts of %d", results.FormatRate(r.BurstIOPS), r.BurstSize))
	}
	return strings.Join(parts, ", ")
}

// RehearsalVerdict is the rehearsal's verdict in a line, beside the
// lookup's, saying which one the exit status follows when they differ.
func RehearsalVerdict(reh *results.Rehearsal) string {
	word := func(fits bool) string {
		if fits {
			return "FITS"
		}
		return "DOES NOT FIT"
	}
	if reh.Inconclusive {
		return fmt.Sprintf("rehearsal: INCONCLUSIVE: a system that did not fit waited for a CPU long enough to explain it (the lookup says %s; run again on idle CPUs)",
			word(reh.LookupFits))
	}
	if reh.Fits == reh.LookupFits {
		return fmt.Sprintf("rehearsal: %s (the lookup agrees)", word(reh.Fits))
	}
	return fmt.Sprintf("rehearsal: %s, but the lookup says %s: the measurement decides (the exit status follows the rehearsal)",
		word(reh.Fits), word(reh.LookupFits))
}

func resultNamed(doc *results.Document, name string) *results.Result {
	for i := range doc.Results {
		if doc.Results[i].Name == name {
			return &doc.Results[i]
		}
	}
	return nil
}

func writeRehearsalMarkdown(w io.Writer, doc *results.Document) error {
	return writeRehearsal(w, doc, renderer.NewMarkdown(), "### ")
}

// rehearsalTitle names a rehearsal: its systems and their arrivals.
func rehearsalTitle(doc *results.Document) string {
	arrival := "arrivals not recorded"
	if len(doc.Results) > 0 {
		arrival = doc.Results[0].Pattern.Rate.Arrival + " arrivals"
	}
	return fmt.Sprintf("rehearsal of %s at once, %s", units.Count(len(doc.Rehearsal.Systems), "system"), arrival)
}

// rehearsalRows are the rehearsal's table: a row per system, with its
// needs, cap, schedule, achieved rate, p99 response, bounds and verdict.
func rehearsalRows(doc *results.Document) (header []string, rows [][]string) {
	reh := doc.Rehearsal
	header = []string{"system", "needs", "bs", "QD", "cap", "scheduled", "achieved", "Δ", "p99 response", "bounds", "verdict"}
	for _, sys := range reh.Systems {
		cap := "-"
		if sys.Cap != nil {
			cap = fmt.Sprintf("%s r + %s w", units.Thousands(float64(sys.Cap.ReadIOPS), 0), units.Thousands(float64(sys.Cap.WriteIOPS), 0))
		}
		qd := "-"
		if r := resultNamed(doc, sys.Result); r != nil {
			qd = fmt.Sprint(r.Pattern.QueueDepth)
		}
		var bounds []string
		for _, b := range sys.Latency {
			mark := "holds"
			if !b.Holds {
				mark = "FAILS"
			}
			bounds = append(bounds, fmt.Sprintf("%s: %s µs %s", b.Bound, units.Thousands(b.US, 0), mark))
		}
		if len(bounds) == 0 {
			bounds = []string{"-"}
		}
		p99 := "-"
		if r := resultNamed(doc, sys.Result); r != nil && r.Total.ResponseLatNS != nil {
			p99 = units.Thousands(sys.ResponseP99US, 0) + " µs"
		}
		verdict := "FITS"
		if !sys.Fits {
			verdict = "DOES NOT FIT"
		}
		rows = append(rows, []string{sys.Name,
			fmt.Sprintf("%s r + %s w", units.Thousands(sys.ReadIOPS, 0), units.Thousands(sys.WriteIOPS, 0)),
			results.ShortSize(sys.BlockSize), qd, cap,
			units.Thousands(sys.ScheduledIOPS, 0), units.Thousands(sys.AchievedIOPS, 0), fmt.Sprintf("%+.2f %%", sys.DeviationPct),
			p99, strings.Join(bounds, ", "), verdict})
	}
	return header, rows
}

// rehearsalSection is the rehearsal's table and verdicts on the HTML
// page, in place of the curves its open-loop results would otherwise
// draw: each system is one load of its own shape, no curve.
func rehearsalSection(doc *results.Document) htmlSection {
	header, rows := rehearsalRows(doc)
	t := htmlTable{Title: "each system's own open-loop stream, all at once", Cols: header[1:]}
	for _, row := range rows {
		r := htmlRow{Label: row[0]}
		for _, c := range row[1:] {
			r.Cells = append(r.Cells, htmlCell{Text: c})
		}
		t.Rows = append(t.Rows, r)
	}
	var notes []string
	for _, sys := range doc.Rehearsal.Systems {
		if sys.Why != "" {
			notes = append(notes, sys.Name+": "+sys.Why)
		}
	}
	notes = append(notes, RehearsalVerdict(doc.Rehearsal))
	return htmlSection{Title: rehearsalTitle(doc), Tables: []htmlTable{t}, Notes: notes,
		Legend: "p99 response is from each I/O's intended start on its system's schedule."}
}
