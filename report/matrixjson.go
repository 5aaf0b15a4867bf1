package report

import (
	"io"

	"github.com/iomatrix/iomatrix/results"
)

// MatrixJSON is a metric's matrices as JSON, what `report --format json
// --metric M` writes (without --metric, JSON is the results document
// itself, every figure of every result). A cell not measured, or without
// a figure of the metric (the latency of a result that completed no I/O:
// Metric.Absent), is null, as every other format leaves it empty: never
// 0, which would read as a measurement.
type MatrixJSON struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	// Run is the one-line summary of the run (Describe).
	Run    string            `json:"run"`
	Tables []MatrixTableJSON `json:"tables"`
}

// MatrixTableJSON is one table: Cells[row][column], null where there is
// no figure.
type MatrixTableJSON struct {
	Title   string              `json:"title"`
	Rows    []string            `json:"rows"`
	Columns []string            `json:"columns"`
	Cells   [][]*MatrixCellJSON `json:"cells"`
}

// MatrixCellJSON is one pattern's figure, with compare's marks: Approx,
// FewIOs and Unsettled (see Metric.Measure), and DeviceChanged (the
// sentinels' mark).
type MatrixCellJSON struct {
	Name          string  `json:"name"`
	Value         float64 `json:"value"`
	Approx        bool    `json:"approx"`
	FewIOs        bool    `json:"few_ios"`
	Unsettled     bool    `json:"unsettled"`
	DeviceChanged bool    `json:"device_changed,omitempty"`
	Bursting      bool    `json:"bursting,omitempty"`
}

// NewMatrixJSON is m as JSON, for the run doc describes.
func NewMatrixJSON(doc *results.Document, m Matrix) MatrixJSON {
	out := MatrixJSON{Metric: string(m.Metric), Unit: m.Metric.Unit(), Run: Describe(doc), Tables: []MatrixTableJSON{}}
	for _, t := range m.Tables {
		jt := MatrixTableJSON{Title: t.Title, Rows: t.Rows, Columns: t.Cols, Cells: make([][]*MatrixCellJSON, len(t.Cells))}
		for i, row := range t.Cells {
			jt.Cells[i] = make([]*MatrixCellJSON, len(row))
			for j, c := range row {
				if c == nil {
					continue
				}
				jt.Cells[i][j] = &MatrixCellJSON{Name: c.Result.Name, Value: roundTo(c.Value, 2),
					Approx: c.Flags.Has(FlagApprox), FewIOs: c.Flags.Has(FlagFewIOs), Unsettled: c.Flags.Has(FlagUnsettled),
					DeviceChanged: c.Flags.Has(FlagDeviceChanged), Bursting: c.Flags.Has(FlagBursting)}
			}
		}
		out.Tables = append(out.Tables, jt)
	}
	return out
}

// writeMatrixJSON writes the matrices of the metric o asks for as JSON.
func writeMatrixJSON(w io.Writer, doc *results.Document, o Options) error {
	return WriteJSON(w, NewMatrixJSON(doc, BuildMetric(doc.Results, metricOf(o))))
}
