package report

import (
	"fmt"
	"io"

	"github.com/iomatrix/iomatrix/iotest"
)

// WriteCapCheck renders cap verify's matrices: each cell "measured /
// expected (deviation) verdict".
func WriteCapCheck(w io.Writer, doc *iotest.Document) error {
	m := BuildMetric(doc.Results, IOPS)
	for i, t := range m.Tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: measured / expected (deviation)\n", t.Title)
		header := append([]string{""}, t.Cols...)
		var rows [][]string
		for r, label := range t.Rows {
			row := []string{label}
			for _, c := range t.Cells[r] {
				if c == nil || c.Result.CapCheck == nil {
					row = append(row, "")
					continue
				}
				k := c.Result.CapCheck
				verdict := "ok"
				if !k.OK {
					verdict = "FAIL"
				}
				bind := ""
				if !k.Binding {
					bind = "*"
				}
				row = append(row, fmt.Sprintf("%s / %s%s (%+.1f%%) %s", FormatValue(IOPS, c.Value), FormatValue(IOPS, k.ExpectedIOPS), bind, k.DeviationPct, verdict))
			}
			rows = append(rows, row)
		}
		if err := renderRows(w, header, rows, asciiTable()); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, "* the cap does not bind there (its model is at least 90 % of the uncapped IOPS): the expectation is the lower of the two")
	return err
}
