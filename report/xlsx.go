package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

func init() { Register("xlsx", writeXLSX) }

// writeXLSX builds a workbook for sizing documents: one sheet per table
// with numeric cells (never text), a colour scale, the CrystalDiskMark cells
// highlighted, a sheet with every result in long form and one with the run
// settings. A flagged cell stays a number: its number format shows the
// signs of its flags around it, as the text formats do, and the note of
// each sign used is a row under its table.
func writeXLSX(w io.Writer, doc *results.Document, o Options) error {
	m := BuildMetric(doc.Results, metricOf(o))
	f := excelize.NewFile()
	defer func() { _ = f.Close() }() // in memory only: nothing to lose
	numFmt := "#,##0"
	if m.Metric != IOPS {
		numFmt = "#,##0.0"
	}
	styles, err := cellStyles(f, numFmt)
	if err != nil {
		return err
	}
	bold, err := f.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true}})
	if err != nil {
		return err
	}
	sheets := tableSheets{
		f:             f,
		describe:      Describe(doc),
		cells:         styles,
		bold:          bold,
		lowerIsBetter: m.Metric.LowerIsBetter(),
		used:          map[string]bool{},
	}
	for _, t := range m.Tables {
		if err := sheets.add(t); err != nil {
			return err
		}
	}
	if err := writeResultsSheet(f, doc); err != nil {
		return err
	}
	if err := writeMembersSheet(f, doc, m.Metric, outlierOf(o), bold); err != nil {
		return err
	}
	if err := writeSettingsSheet(f, doc, m.Metric, bold); err != nil {
		return err
	}
	if err := declareDimensions(f); err != nil {
		return err
	}
	f.SetActiveSheet(0)
	_, err = f.WriteTo(w)
	return err
}

// tableSheets writes the workbook's matrix tables, one sheet each, all in
// the same styles and under the same description of the run.
type tableSheets struct {
	f             *excelize.File
	describe      string
	cells         map[cellStyle]int
	bold          int
	lowerIsBetter bool
	used          map[string]bool // the sheet names taken so far
}

// tableTop is the header row of a table sheet, under its title and the
// description of the run.
const tableTop = 4

func (s *tableSheets) add(t Table) error {
	// A new workbook comes with one sheet: the first table takes it over
	// rather than leave it empty.
	first := len(s.used) == 0
	name := sheetName(t, s.used)
	if first {
		if err := s.f.SetSheetName("Sheet1", name); err != nil {
			return err
		}
	} else if _, err := s.f.NewSheet(name); err != nil {
		return err
	}
	if err := s.writeCells(name, t); err != nil {
		return err
	}
	if err := s.colourScale(name, t); err != nil {
		return err
	}
	var e firstErr
	e.do(s.f.SetColWidth(name, "A", "A", 12))
	lastCol, _ := excelize.ColumnNumberToName(len(t.Cols) + 1)
	e.do(s.f.SetColWidth(name, "B", lastCol, 11))
	return e.err
}

// firstErr keeps the first error of a sequence of workbook writes, so the
// sequence reads as one and no error is dropped.
type firstErr struct{ err error }

func (e *firstErr) do(err error) {
	if e.err == nil {
		e.err = err
	}
}

// writeCells writes the title, the run, the table with its labels and,
// under it, the notes on the signs of its flagged values.
func (s *tableSheets) writeCells(name string, t Table) error {
	f := s.f
	set := func(col, row int, v any) error {
		cell, err := excelize.CoordinatesToCellName(col, row)
		if err != nil {
			return err
		}
		return f.SetCellValue(name, cell, v)
	}
	var e firstErr
	e.do(set(1, 1, t.Title))
	e.do(f.SetCellStyle(name, "A1", "A1", s.bold))
	e.do(set(1, 2, s.describe))
	for j, c := range t.Cols {
		e.do(set(j+2, tableTop, c))
	}
	for r, label := range t.Rows {
		e.do(set(1, tableTop+1+r, label))
		for c, cell := range t.Cells[r] {
			if cell == nil {
				continue // not measured: blank, never 0
			}
			ref, _ := excelize.CoordinatesToCellName(c+2, tableTop+1+r)
			e.do(f.SetCellValue(name, ref, cell.Value))
			e.do(f.SetCellStyle(name, ref, ref, s.cells[cellStyle{cdm: cell.CDM, flags: cell.Flags}]))
		}
	}
	if e.err != nil {
		return e.err
	}
	for i, note := range t.Flags().Notes() {
		e.do(set(1, tableTop+len(t.Rows)+2+i, note))
	}
	return e.err
}

// colourScale shades the table's values from red for the worst to green
// for the best.
func (s *tableSheets) colourScale(name string, t Table) error {
	first, _ := excelize.CoordinatesToCellName(2, tableTop+1)
	last, _ := excelize.CoordinatesToCellName(len(t.Cols)+1, tableTop+len(t.Rows))
	low, high := "#F8696B", "#63BE7B"
	if s.lowerIsBetter {
		low, high = high, low
	}
	return s.f.SetConditionalFormat(name, first+":"+last, []excelize.ConditionalFormatOptions{{
		Type: "3_color_scale", Criteria: "=",
		MinType: "min", MidType: "percentile", MidValue: "50", MaxType: "max",
		MinColor: low, MidColor: "#FFEB84", MaxColor: high,
	}})
}

// declareDimensions sets each sheet's <dimension> to the range its values
// span. excelize leaves the "A1" of an empty sheet, and readers that trust
// the declaration (streaming readers, some importers) would then see one
// cell per sheet. Every sheet here starts at A1.
func declareDimensions(f *excelize.File) error {
	for _, name := range f.GetSheetList() {
		rows, err := f.GetRows(name, excelize.Options{RawCellValue: true})
		if err != nil {
			return fmt.Errorf("xlsx sheet %s: %w", name, err)
		}
		lastCol := 1
		for _, r := range rows {
			lastCol = max(lastCol, len(r))
		}
		last, err := excelize.CoordinatesToCellName(lastCol, max(len(rows), 1))
		if err != nil {
			return fmt.Errorf("xlsx sheet %s: %w", name, err)
		}
		ref := "A1:" + last
		if last == "A1" {
			ref = "A1"
		}
		if err := f.SetSheetDimension(name, ref); err != nil {
			return fmt.Errorf("xlsx sheet %s dimension %s: %w", name, ref, err)
		}
	}
	return nil
}

// cellStyle is what a matrix cell's look depends on.
type cellStyle struct {
	cdm   bool
	flags Flags
}

// cellStyles registers the number format numFmt for every cellStyle: the
// CrystalDiskMark cells outlined in bold, flagged cells with the signs of
// their flags as literals around the number, so that the value stays
// numeric.
func cellStyles(f *excelize.File, numFmt string) (map[cellStyle]int, error) {
	styles := map[cellStyle]int{}
	for _, cdm := range []bool{false, true} {
		for flags := Flags(0); flags <= AllFlags; flags++ {
			st := &excelize.Style{CustomNumFmt: &numFmt}
			if flags != 0 {
				marked := numFmt
				if flags.Has(FlagApprox) {
					marked = `"` + ApproxMark + `"` + marked
				}
				if after := (flags &^ FlagApprox).Signs(); after != "" {
					marked += `"` + after + `"`
				}
				st.CustomNumFmt = &marked
			}
			if cdm {
				st.Font = &excelize.Font{Bold: true}
				st.Border = []excelize.Border{
					{Type: "left", Color: "1A4FD0", Style: 5}, {Type: "right", Color: "1A4FD0", Style: 5},
					{Type: "top", Color: "1A4FD0", Style: 5}, {Type: "bottom", Color: "1A4FD0", Style: 5},
				}
			}
			id, err := f.NewStyle(st)
			if err != nil {
				return nil, fmt.Errorf("xlsx cell style: %w", err)
			}
			styles[cellStyle{cdm, flags}] = id
		}
	}
	return styles, nil
}

// sheetName makes a unique, valid sheet name (31 characters, none of
// []:*?/\).
func sheetName(t Table, used map[string]bool) string {
	base := "sequential"
	if t.Access == results.Random {
		base = "random " + units.FormatSize(t.BlockSize)
	}
	base = strings.Map(func(r rune) rune {
		if strings.ContainsRune(`[]:*?/\`, r) {
			return '-'
		}
		return r
	}, base)
	if len(base) > 28 {
		base = base[:28]
	}
	name := base
	for n := 2; used[name]; n++ {
		name = fmt.Sprintf("%s %d", base, n)
	}
	used[name] = true
	return name
}

func writeResultsSheet(f *excelize.File, doc *results.Document) error {
	const name = "results"
	if _, err := f.NewSheet(name); err != nil {
		return err
	}
	var e firstErr
	header, rows := longForm(doc)
	for c, h := range header {
		ref, _ := excelize.CoordinatesToCellName(c+1, 1)
		e.do(f.SetCellValue(name, ref, h))
	}
	for r, row := range rows {
		for c, v := range row {
			ref, _ := excelize.CoordinatesToCellName(c+1, r+2)
			if x, ok := parseNumber(v); ok && header[c] != "name" && header[c] != "member" {
				e.do(f.SetCellValue(name, ref, x))
			} else if v != "" {
				e.do(f.SetCellValue(name, ref, v))
			}
		}
	}
	return e.err
}

func writeSettingsSheet(f *excelize.File, doc *results.Document, m Metric, bold int) error {
	const name = "settings"
	if _, err := f.NewSheet(name); err != nil {
		return err
	}
	t, s, h := doc.Target, doc.Settings, doc.Host
	rows := [][2]any{
		{"tool", doc.Tool.Name + " " + doc.Tool.Version},
		{"schema_version", doc.SchemaVersion},
		{"metric", m.Title()},
		{"target", t.Path},
		{"target kind", t.Kind},
		{"device", t.Device},
		{"disk", t.Disk},
		{"target size", units.FormatSize(t.SizeBytes)},
		{"target size (bytes)", t.SizeBytes},
		{"logical block size", t.LogicalBlockSize},
		{"rotational", t.Rotational},
		{"scheduler", t.Scheduler},
		{"profile", s.Profile},
		{"engine", s.Engine},
		{"runtime", runtimeSetting(s)},
		{"ramp", time.Duration(s.RampNS).String()},
		{"seed", fmt.Sprint(s.Seed)},
		{"host", h.Hostname},
		{"kernel", h.Kernel},
		{"cpus", h.CPUs},
		{"started", doc.StartedAt},
		{"finished", doc.FinishedAt},
		{"results", len(doc.Results)},
		{"cap", "none"}, // a row either way: a missing row would not say there was none
	}
	if doc.Cap != nil {
		rows[len(rows)-1][1] = DescribeCap(doc.Cap)
	}
	for i, l := range DriftLines(doc) {
		label := ""
		if i == 0 {
			label = "sentinels"
		}
		rows = append(rows, [2]any{label, l})
	}
	var e firstErr
	for i, r := range rows {
		e.do(f.SetCellValue(name, fmt.Sprintf("A%d", i+1), r[0]))
		e.do(f.SetCellValue(name, fmt.Sprintf("B%d", i+1), r[1]))
	}
	e.do(f.SetCellStyle(name, "A1", fmt.Sprintf("A%d", len(rows)), bold))
	e.do(f.SetColWidth(name, "A", "A", 22))
	e.do(f.SetColWidth(name, "B", "B", 60))
	return e.err
}

// writeMembersSheet adds a fleet document's members table.
func writeMembersSheet(f *excelize.File, doc *results.Document, m Metric, outlier float64, bold int) error {
	if len(doc.Members) == 0 {
		return nil
	}
	const name = "members"
	if _, err := f.NewSheet(name); err != nil {
		return err
	}
	var e firstErr
	e.do(f.SetCellValue(name, "A1", fleetTitle(doc)))
	header := []string{"member", "host", "target", "cells", "ratio to fleet median", "worst cell", "worst ratio", "outlier"}
	for i, h := range header {
		ref, _ := excelize.CoordinatesToCellName(i+1, 3)
		e.do(f.SetCellValue(name, ref, h))
	}
	e.do(f.SetCellStyle(name, "A3", "H3", bold))
	for r, row := range Members(doc, m, outlier) {
		for i, v := range []any{row.Label, row.Host, row.Target, row.Cells, row.Ratio, row.Worst, row.WorstRatio, row.Outlier} {
			ref, _ := excelize.CoordinatesToCellName(i+1, 4+r)
			e.do(f.SetCellValue(name, ref, v))
		}
	}
	e.do(f.SetCellValue(name, fmt.Sprintf("A%d", 5+len(doc.Members)), membersNote(m, outlier)))
	return e.err
}

// runtimeSetting is a run's runtime setting in words: the fixed runtime,
// or auto with its bounds and precision.
func runtimeSetting(s results.Settings) string {
	if a := s.Auto; a != nil {
		return fmt.Sprintf("auto, %s to %s, ±%s %%", time.Duration(a.MinRuntimeNS), time.Duration(a.MaxRuntimeNS), plain(a.PrecisionPct))
	}
	return time.Duration(s.RuntimeNS).String()
}

func parseNumber(s string) (float64, bool) {
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil
}
