package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/iomatrix/iomatrix/results"
)

// driftDoc is the total-lat fixture watched by sentinels: the reference,
// a run that found the device halved, and a third at that rate; the
// second cell measured in the interval of the move, the third after it.
func driftDoc(t *testing.T) *results.Document {
	doc := loadFixture(t, "total-lat")
	run := func(at string, iops float64, level string, pct float64) results.SentinelRun {
		return results.SentinelRun{Result: results.Result{Name: "rand-4k-r100-qd32", StartedAt: at, DurationNS: 5e9,
			Total: results.Total{IOPS: iops}}, Level: level, ChangePct: pct, ThresholdPct: 20}
	}
	doc.Sentinels = &results.Sentinels{
		Pattern:   results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 32, Jobs: 1},
		RuntimeNS: 5e9, RampNS: 1e9, EveryNS: 300e9, OnDrift: results.DriftMark, FloorPct: 20, Sigmas: 6,
		Runs: []results.SentinelRun{
			run("2026-12-04T10:00:00Z", 2000, results.LevelReference, 0),
			run("2026-12-04T10:05:00Z", 1000, results.LevelChanged, -50),
			run("2026-12-04T10:10:00Z", 1000, results.LevelChanged, -50),
		},
		Changes: []results.DeviceShift{{FromRun: 0, ToRun: 1, After: "2026-12-04T10:00:00Z", Before: "2026-12-04T10:05:05Z",
			FromIOPS: 2000, ToIOPS: 1000, ChangePct: -50}},
	}
	doc.Results[1].DeviceChanged = &results.DeviceChange{SentinelBefore: 0, SentinelAfter: 1, SentinelIOPS: [2]float64{2000, 1000},
		ReferenceIOPS: 2000, InShift: true}
	doc.Results[2].DeviceChanged = &results.DeviceChange{SentinelBefore: 1, SentinelAfter: 2, SentinelIOPS: [2]float64{1000, 1000},
		ReferenceIOPS: 2000}
	return doc
}

func TestDeviceChangedMarkedEverywhere(t *testing.T) {
	doc := driftDoc(t)
	marked := []string{FormatValue(IOPS, doc.Results[1].Total.IOPS) + ChangedMark, FormatValue(IOPS, doc.Results[2].Total.IOPS) + ChangedMark}
	shift := "device changed between 2026-12-04 10:00:00Z and 2026-12-04 10:05:05Z: the sentinel rand-4k-r100-qd32 went from 2,000 to 1,000 IOPS (-50.0 %) between its runs 1 and 2; 1 cell measured in between marked device_changed (!)"
	for _, format := range []string{"text", "markdown"} {
		out := rendered(t, doc, format)
		for _, want := range append(marked, ChangedNote, shift, "the later runs from -50.0 % to -50.0 % of it",
			"2 cells marked device_changed (!), 1 of them measured in the interval of a move") {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", format, want, out)
			}
		}
		if n := strings.Count(out, ChangedMark); n < 4 {
			t.Errorf("%s: %d signs, want the two cells in the IOPS table and the notes", format, n)
		}
	}
	var b bytes.Buffer
	if err := WriteSweepText(&b, doc, "r.json", true); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, marked[0]) || !strings.Contains(out, shift) {
		t.Errorf("sweep text:\n%s", out)
	}
	page := string(htmlOf(t, doc))
	if n := len(regexp.MustCompile(`class="[^"]*\bchanged\b`).FindAllString(page, -1)); n != 4 {
		t.Errorf("HTML: %d cells of class changed, want 4 (IOPS and p99 tables)", n)
	}
	if !strings.Contains(page, "<h2>Sentinels</h2>") || !strings.Contains(page, "td.changed {") {
		t.Errorf("HTML: no sentinels section or style")
	}
	// The long CSV: a column per cell; the wide one: the marks table and
	// the summary.
	b.Reset()
	if err := writeCSV(&b, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.HasSuffix(lines[0], ",device_changed,bursting") || !strings.HasSuffix(lines[1], ",,") || !strings.HasSuffix(lines[2], ",in_shift,") ||
		!strings.HasSuffix(lines[3], ",changed,") {
		t.Errorf("long CSV: %q …", lines[:4])
	}
	b.Reset()
	if err := writeCSV(&b, doc, Options{Wide: true}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "IOPS: marks") || !strings.Contains(out, shift) {
		t.Errorf("wide CSV:\n%s", out)
	}
	b.Reset()
	if err := writeMatrixJSON(&b, doc, Options{Metric: IOPS}); err != nil {
		t.Fatal(err)
	}
	var m MatrixJSON
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tb := range m.Tables {
		for _, row := range tb.Cells {
			for _, c := range row {
				if c != nil && c.DeviceChanged {
					n++
				}
			}
		}
	}
	if n != 2 {
		t.Errorf("matrix JSON: %d cells device_changed, want 2", n)
	}
	var cells, summaries int
	for _, c := range xlsxCells(t, doc, false) {
		if strings.HasSuffix(c.format, `"`+ChangedMark+`"`) {
			cells++
		}
		if c.value == shift && c.sheet == "settings" {
			summaries++
		}
	}
	if cells < 2 || summaries != 1 {
		t.Errorf("XLSX: %d marked cells and %d summaries, want the marked cells and the shift in the settings", cells, summaries)
	}
}

// rendered is doc in format, with the default options.
func rendered(t *testing.T, doc *results.Document, format string) string {
	t.Helper()
	var b bytes.Buffer
	f, _ := Lookup(format)
	if err := f(&b, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// xlsxCell is a cell of an XLSX file as a test reads it.
type xlsxCell struct {
	sheet, ref, value, format string
	typ                       excelize.CellType
}

// xlsxCells are the cells of doc's XLSX rendering, of its first sheet
// only when first.
func xlsxCells(t *testing.T, doc *results.Document, first bool) []xlsxCell {
	t.Helper()
	var b bytes.Buffer
	if err := writeXLSX(&b, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	x, err := excelize.OpenReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = x.Close() }()
	sheets := x.GetSheetList()
	if first {
		sheets = sheets[:1]
	}
	var cells []xlsxCell
	for _, sheet := range sheets {
		rows, _ := x.GetRows(sheet)
		for r, row := range rows {
			for c, v := range row {
				cell := xlsxCell{sheet: sheet, value: v}
				cell.ref, _ = excelize.CoordinatesToCellName(c+1, r+1)
				id, _ := x.GetCellStyle(sheet, cell.ref)
				if st, _ := x.GetStyle(id); st != nil && st.CustomNumFmt != nil {
					cell.format = *st.CustomNumFmt
				}
				cell.typ, _ = x.GetCellType(sheet, cell.ref)
				cells = append(cells, cell)
			}
		}
	}
	return cells
}

func TestDriftLinesSteady(t *testing.T) {
	doc := driftDoc(t)
	s := doc.Sentinels
	s.Runs[1].Total.IOPS, s.Runs[1].Level, s.Runs[1].ChangePct = 1990, results.LevelSame, -0.5
	s.Runs[2].Total.IOPS, s.Runs[2].Level, s.Runs[2].ChangePct = 2010, results.LevelSame, 0.5
	s.Changes = nil
	for i := range doc.Results {
		doc.Results[i].DeviceChanged = nil
	}
	got := strings.Join(DriftLines(doc), "\n")
	want := "Sentinels: rand-4k-r100-qd32, 3 runs of 5s + 1s ramp, every 5m0s; a change is 20 % of the reference's rate or more, and 6 standard errors\n" +
		"reference 2,000 IOPS; 2 later runs within -0.5 % to +0.5 % of it: no change"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if DriftLines(&results.Document{}) != nil {
		t.Error("lines for a document without sentinels")
	}
}
