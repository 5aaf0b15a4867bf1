package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/iomatrix/iomatrix/results"
)

// tableRows is a table as strings: the header and the rows.
func tableRows(m Metric, t Table) (header []string, rows [][]string) {
	header = append([]string{""}, t.Cols...)
	for i, r := range t.Rows {
		row := []string{r}
		for j := range t.Cols {
			row = append(row, cellText(m, t.Cells[i][j]))
		}
		rows = append(rows, row)
	}
	return header, rows
}

func renderTable(w io.Writer, m Metric, t Table, r tw.Renderer) error {
	header, rows := tableRows(m, t)
	return renderRows(w, header, rows, r)
}

// renderRows draws a table: the first column left-aligned labels, the
// others right-aligned numbers.
func renderRows(w io.Writer, header []string, rows [][]string, r tw.Renderer) error {
	return renderAligned(w, header, rows, r, 1)
}

// renderAligned draws a table whose first left columns are left-aligned
// text and the others right-aligned numbers.
func renderAligned(w io.Writer, header []string, rows [][]string, r tw.Renderer, left int) error {
	align := make([]tw.Align, len(header))
	for i := range align {
		align[i] = tw.AlignRight
		if i < left {
			align[i] = tw.AlignLeft
		}
	}
	tbl := tablewriter.NewTable(w,
		tablewriter.WithRenderer(r),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	tbl.Header(header)
	for _, row := range rows {
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// asciiTable draws with plain ASCII, which survives every terminal, log
// and document it is pasted into.
func asciiTable() tw.Renderer {
	return renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})
}

// WriteText renders the matrix as plain-text tables, as a sweep prints it.
func WriteText(w io.Writer, m Matrix) error { return writeTextTables(w, m, "") }

func writeText(w io.Writer, doc *results.Document, o Options) error {
	if doc.Rehearsal != nil {
		// Its cells are systems at their own rates, not a matrix's.
		return WriteRehearsal(w, doc)
	}
	m := BuildMetric(doc.Results, metricOf(o))
	if err := writeTextTables(w, m, Describe(doc)); err != nil {
		return err
	}
	if err := writeDrift(w, doc); err != nil {
		return err
	}
	if err := writeCurves(w, Curves(doc.Results), len(m.Tables) > 0, func(title string) string {
		return title + " — " + Describe(doc) + "\n"
	}, asciiTable); err != nil {
		return err
	}
	return writeMembers(w, doc, o, asciiTable())
}

// writeCurves draws each load–latency curve as a table under its title
// (as heading renders it), its knee and notes after it; after says
// whether something was written before, for the blank line between.
func writeCurves(w io.Writer, curves []Curve, after bool, heading func(string) string, r func() tw.Renderer) error {
	for _, c := range curves {
		if after {
			fmt.Fprintln(w)
		}
		after = true
		fmt.Fprint(w, heading(c.curveTitle()))
		header, rows := c.curveRows()
		if err := renderRows(w, header, rows, r()); err != nil {
			return err
		}
		// After a blank line, as writeNotes: a markdown table would take
		// a line right under it for one of its rows.
		if _, err := fmt.Fprintf(w, "\n%s\n", strings.Join(c.curveNotes(), "\n")); err != nil {
			return err
		}
	}
	return nil
}

// writeMembers adds a fleet document's members table: each member's
// deviation from the fleet median, outliers flagged.
func writeMembers(w io.Writer, doc *results.Document, o Options, r tw.Renderer) error {
	if len(doc.Members) == 0 {
		return nil
	}
	m := metricOf(o)
	header, rows := membersRows(Members(doc, m, outlierOf(o)), m)
	fmt.Fprintf(w, "\n%s\n", fleetTitle(doc))
	if err := renderRows(w, header, rows, r); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, membersNote(m, outlierOf(o)))
	return err
}

// writeTextTables draws each table under its title, followed by desc when
// there is one.
func writeTextTables(w io.Writer, m Matrix, desc string) error {
	for i, t := range m.Tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if desc == "" {
			fmt.Fprintln(w, t.Title)
		} else {
			fmt.Fprintf(w, "%s — %s\n", t.Title, desc)
		}
		if err := renderTable(w, m.Metric, t, asciiTable()); err != nil {
			return err
		}
	}
	return writeNotes(w, m.Flags())
}

func writeMarkdown(w io.Writer, doc *results.Document, o Options) error {
	if doc.Rehearsal != nil {
		return writeRehearsalMarkdown(w, doc)
	}
	m := BuildMetric(doc.Results, metricOf(o))
	fmt.Fprintf(w, "%s\n", Describe(doc))
	for _, t := range m.Tables {
		fmt.Fprintf(w, "\n### %s\n\n", t.Title)
		if err := renderTable(w, m.Metric, t, renderer.NewMarkdown()); err != nil {
			return err
		}
	}
	if err := writeNotes(w, m.Flags()); err != nil {
		return err
	}
	if err := writeDrift(w, doc); err != nil {
		return err
	}
	if err := writeCurves(w, Curves(doc.Results), true, func(title string) string {
		return "### " + title + "\n\n"
	}, func() tw.Renderer { return renderer.NewMarkdown() }); err != nil {
		return err
	}
	return writeMembers(w, doc, o, renderer.NewMarkdown())
}

// writeNotes explains the signs of the flags shown, after a blank line,
// one per line: in text and in markdown alike they read as footnotes.
func writeNotes(w io.Writer, shown Flags) error {
	notes := shown.Notes()
	if len(notes) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	return err
}

func writeJSON(w io.Writer, doc *results.Document, _ Options) error { return WriteJSON(w, doc) }

// WriteJSON writes v as indented JSON: the machine output of every
// command.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
