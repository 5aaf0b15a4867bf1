package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// NotBindingMark follows the expectation of a cell where the cap does not
// bind: the expectation there is the uncapped figure.
const NotBindingMark = "†"

// WriteCapCheck renders cap verify's verdict as text: the matrices of
// measured against expected IOPS, the kernel's counts against iomatrix's
// (under a cgroup's cap), the cells that failed and why, and the verdict
// line.
func WriteCapCheck(w io.Writer, doc *results.Document, v *results.CapVerdict) error {
	fmt.Fprintf(w, "iomatrix cap verify: %s, tolerance %g %%\nresults: %s\n\n", Describe(doc), v.Settings.TolerancePct, v.ResultsFile)
	provisioned := doc.Cap != nil && doc.Cap.Provisioned
	rate := func(c *Cell) string {
		k := c.Result.CapCheck
		verdict := "ok"
		switch {
		case k.Inconclusive:
			verdict = "not judged"
		case k.Above:
			verdict = "ABOVE"
		case !k.RateOK:
			verdict = "FAIL"
		}
		bind := ""
		if !k.Binding {
			bind = NotBindingMark
		}
		return fmt.Sprintf("%s / %s%s (%+.1f%%) %s", FormatMeasure(IOPS, c.Value, c.Flags), FormatValue(IOPS, k.ExpectedIOPS), bind, k.DeviationPct, verdict)
	}
	counters := func(c *Cell) string {
		r, k := c.Result, c.Result.CapCheck
		if r.CgroupIOs == nil {
			return "unavailable FAIL"
		}
		kernel, want := r.CgroupIOs.Reads+r.CgroupIOs.Writes, k.ExpectedRequests.Reads+k.ExpectedRequests.Writes
		s := fmt.Sprintf("%s / %s", units.Thousands(float64(kernel), 0), units.Thousands(float64(want), 0))
		if f := k.ForeignRequests.Reads + k.ForeignRequests.Writes; f > 0 {
			s += fmt.Sprintf(" (%s foreign)", units.Thousands(float64(f), 0))
		}
		if m := k.MissingRequests.Reads + k.MissingRequests.Writes; m > 0 {
			s += fmt.Sprintf(" (%s missing)", units.Thousands(float64(m), 0))
		}
		if !k.CountersOK {
			s += " FAIL"
		}
		return s
	}
	if err := writeCheckTables(w, doc, "measured / expected IOPS (deviation)", rate); err != nil {
		return err
	}
	for _, note := range BuildMetric(doc.Results, IOPS).Flags().Notes() {
		fmt.Fprintln(w, note)
	}
	for _, c := range v.Cells {
		if !c.Binding && provisioned {
			fmt.Fprintln(w, NotBindingMark+" the limits do not bind at that depth: the same pattern at a deeper queue reached them (deeper_reached), "+
				"so the volume's latency, not its limits, set the cell's rate")
			break
		}
		if !c.Binding {
			fmt.Fprintln(w, NotBindingMark+" the cap does not bind there (its model is at least 90 % of the uncapped IOPS): the expectation is the uncapped figure, "+
				"which the cell must reach (less the tolerance) without exceeding the cap model")
			break
		}
	}
	if v.Above > 0 {
		fmt.Fprintln(w, "ABOVE marks a cell that did more than the provisioned limits allow: the volume is bursting (spending a burst's credits) or uncapped (not limited there); neither ok nor FAIL")
	}
	if carry := maxCarry(v.Cells); carry > 0 {
		fmt.Fprintf(w, "a cell that both reads and writes may deviate %.1f %% more: the throttle carries a direction's unused budget over one slice (see carry_pct)\n", carry)
	}
	fmt.Fprintln(w)
	if provisioned {
		fmt.Fprintln(w, "limits: provisioned, the volume's own as its provider advertises them; no cgroup was made or joined, so no cgroup counts the requests")
	} else {
		if err := writeCheckTables(w, doc, "cgroup requests: kernel / iomatrix", counters); err != nil {
			return err
		}
		fmt.Fprintf(w, "iomatrix counts its completed I/Os times the requests the block layer makes of each; the two must agree within %g %%\n", v.Settings.CounterTolerancePct)
	}
	fmt.Fprintf(w, "window: %s\n", v.Settings.Window)
	var lines []string
	for _, c := range v.Cells {
		if !c.OK {
			lines = append(lines, c.Name+": "+strings.Join(c.Reasons, "; "))
		}
	}
	list := ""
	if len(lines) > 0 {
		list = ":\n  " + strings.Join(lines, "\n  ")
	}
	_, err := fmt.Fprintf(w, "\n%s: %s%s\n", strings.ToUpper(v.Verdict), v.Summary, list)
	return err
}

// writeCheckTables renders one matrix per table of doc's checked results,
// each cell drawn by cell.
func writeCheckTables(w io.Writer, doc *results.Document, what string, cell func(*Cell) string) error {
	m := BuildMetric(doc.Results, IOPS)
	for _, t := range m.Tables {
		fmt.Fprintf(w, "%s: %s\n", strings.TrimSuffix(t.Title, " IOPS"), what)
		header := append([]string{""}, t.Cols...)
		var rows [][]string
		for r, label := range t.Rows {
			row := []string{label}
			for _, c := range t.Cells[r] {
				if c == nil || c.Result.CapCheck == nil {
					row = append(row, "")
					continue
				}
				row = append(row, cell(c))
			}
			rows = append(rows, row)
		}
		if err := renderRows(w, header, rows, asciiTable()); err != nil {
			return err
		}
	}
	return nil
}

// maxCarry is the largest carry-over allowance among the cells.
func maxCarry(cells []results.CapVerdictCell) float64 {
	m := 0.0
	for _, c := range cells {
		m = max(m, c.CarryPct)
	}
	return m
}
