package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/iomatrix/iomatrix/results"
)

// In the total-lat fixture only rand-4k-r70-qd1 is mixed and lacks
// total.lat_ns: its latency cell alone is approximate.
const approxCell = "rand-4k-r70-qd1"

// p99Texts are the rendered p99 cells of the total-lat fixture by result
// name, as FormatValue writes them (no marker).
func p99Texts(t *testing.T, doc *results.Document) map[string]string {
	t.Helper()
	texts := map[string]string{}
	for _, tb := range BuildMetric(doc.Results, LatP99).Tables {
		for _, row := range tb.Cells {
			for _, c := range row {
				if c == nil {
					continue
				}
				if c.Flags.Has(FlagApprox) != (c.Result.Name == approxCell) {
					t.Errorf("%s: approximate %v", c.Result.Name, c.Flags.Has(FlagApprox))
				}
				texts[c.Result.Name] = FormatValue(LatP99, c.Value)
			}
		}
	}
	if len(texts) != 6 {
		t.Fatalf("%d p99 cells, want 6", len(texts))
	}
	return texts
}

func TestTotalLatencyFeedsTheCells(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	for _, r := range doc.Results {
		v, flags := LatP99.Measure(r)
		approx := flags.Has(FlagApprox)
		switch {
		case r.Total.LatNS != nil:
			if v != float64(r.Total.LatNS.P99)/1000 || approx {
				t.Errorf("%s: p99 %v µs (approximate %v), total.lat_ns says %d ns", r.Name, v, approx, r.Total.LatNS.P99)
			}
		case r.Read.IOs > 0 && r.Write.IOs > 0:
			if !approx {
				t.Errorf("%s: mixed without total.lat_ns not marked", r.Name)
			}
		default:
			if want := float64(max(r.Read.LatNS.P99, r.Write.LatNS.P99)) / 1000; v != want || approx {
				t.Errorf("%s: one direction: %v µs (approximate %v), want %v exact", r.Name, v, approx, want)
			}
		}
	}
}

// checkMarked checks a rendered table: the 70 % row carries the marker on
// its QD1 cell only, the read and write rows none, and the note is there
// once.
func checkMarked(t *testing.T, what, out string, texts map[string]string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, "| 70% read "):
			if strings.Count(line, ApproxMark) != 1 || !strings.Contains(line, ApproxMark+texts[approxCell]) ||
				!strings.Contains(line, " "+texts["rand-4k-r70-qd8"]) {
				t.Errorf("%s: 70%% row %q: want %s%s and an unmarked %s", what, line, ApproxMark, texts[approxCell], texts["rand-4k-r70-qd8"])
			}
		case strings.Contains(line, "| read ") || strings.Contains(line, "| write "):
			if strings.Contains(line, ApproxMark) {
				t.Errorf("%s: single-direction row marked: %q", what, line)
			}
		}
	}
	if n := strings.Count(out, ApproxNote); n != 1 {
		t.Errorf("%s: the note appears %d times:\n%s", what, n, out)
	}
}

func TestApproxMarkerTextAndMarkdown(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	texts := p99Texts(t, doc)
	for _, format := range []string{"text", "markdown"} {
		f, _ := Lookup(format)
		var b bytes.Buffer
		if err := f(&b, doc, Options{Metric: LatP99}); err != nil {
			t.Fatal(err)
		}
		checkMarked(t, format, b.String(), texts)
		if format == "markdown" { // text's golden is total-lat.lat-p99.txt
			golden(t, "total-lat.lat-p99.md", b.Bytes())
		}

		// IOPS cells are never approximate: no marker, no note.
		b.Reset()
		if err := f(&b, doc, Options{}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), ApproxMark) {
			t.Errorf("%s: IOPS table marked:\n%s", format, b.String())
		}
	}
	var b bytes.Buffer
	if err := WriteText(&b, BuildMetric(doc.Results, LatP99)); err != nil {
		t.Fatal(err)
	}
	checkMarked(t, "sweep text", b.String(), texts)
}

// hollowPoint is a chart glyph drawn as a ring: a circle (two arcs) with
// no fill.
var hollowPoint = regexp.MustCompile(`<path d="M[^"]*A2\.5,2\.5 [^"]*Z" style="fill:none;`)

func TestApproxMarkerHTML(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	texts := p99Texts(t, doc)
	page := string(renderHTML(t, "total-lat"))
	if n := len(regexp.MustCompile(`class="[^"]*\bapprox\b`).FindAllString(page, -1)); n != 1 {
		t.Errorf("%d approximate cells, want 1", n)
	}
	// It rests on too few I/Os for a p99 as well.
	if !strings.Contains(page, `>`+ApproxMark+texts[approxCell]+FewIOsMark+`</td>`) {
		t.Errorf("the approximate cell does not read %s%s%s", ApproxMark, texts[approxCell], FewIOsMark)
	}
	if n := strings.Count(page, ApproxNote); n != 1 {
		t.Errorf("the note appears %d times", n)
	}
	// The p99 charts (against queue depth, against IOPS) draw the
	// approximate point hollow: one ring each (and no legend ring, the row
	// has exact points too).
	if n := len(hollowPoint.FindAllString(page, -1)); n != 2 {
		t.Errorf("%d hollow chart points, want 2", n)
	}
	// A document whose cells are all exact says nothing of approximations.
	exact := loadFixture(t, "total-lat")
	exact.Results = slices.DeleteFunc(exact.Results, func(r results.Result) bool { return r.Name == approxCell })
	var b bytes.Buffer
	if err := writeHTML(&b, exact, Options{}); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, `class="approx"`) || strings.Contains(s, ApproxNote) {
		t.Error("exact cells rendered as approximate")
	}
}

func TestApproxMarkerCompare(t *testing.T) {
	cur := loadFixture(t, "total-lat")
	base := loadFixture(t, "total-lat")
	// The base lacks total.lat_ns on the 70 % QD8 mix: that cell is
	// approximate through its base side, QD1 through both.
	for i := range base.Results {
		if base.Results[i].Name == "rand-4k-r70-qd8" {
			base.Results[i].Total.LatNS = nil
		}
	}
	c := Compare(base, cur, "base.json", "new.json", LatP99)
	for _, d := range c.Cells {
		if want := d.Name == approxCell || d.Name == "rand-4k-r70-qd8"; d.Approx != want {
			t.Errorf("%s: approximate %v, want %v", d.Name, d.Approx, want)
		}
	}
	if !strings.Contains(c.Summary(), "2 approximate (~)") {
		t.Errorf("summary %q does not count the approximate cells", c.Summary())
	}
	for _, f := range ComparisonFormats {
		var b bytes.Buffer
		if err := WriteComparison(&b, c, f); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		switch f {
		case "text", "markdown":
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "| 70% read ") && strings.Count(line, ApproxMark) != 2 {
					t.Errorf("%s: 70%% row %q: want both cells marked", f, line)
				}
				if (strings.Contains(line, "| read ") || strings.Contains(line, "| write ")) && strings.Contains(line, ApproxMark) {
					t.Errorf("%s: single-direction row marked: %q", f, line)
				}
			}
			if !strings.Contains(out, ApproxNote) {
				t.Errorf("%s: no note:\n%s", f, out)
			}
		case "json":
			var back struct {
				Cells []struct {
					Name   string
					Approx *bool
				}
			}
			if err := json.Unmarshal(b.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			for _, d := range back.Cells {
				if d.Approx == nil {
					t.Errorf("json: %s has no approx flag", d.Name)
				} else if *d.Approx != (d.Name == approxCell || d.Name == "rand-4k-r70-qd8") {
					t.Errorf("json: %s approx %v", d.Name, *d.Approx)
				}
			}
		case "csv":
			rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := slices.Index(rows[0], "approx")
			for _, row := range rows[1:] {
				if col < 0 || row[col] != map[bool]string{true: "true", false: "false"}[row[0] == approxCell || row[0] == "rand-4k-r70-qd8"] {
					t.Errorf("csv: row %v (approx column %d)", row, col)
				}
			}
		}
		golden(t, "compare-approx."+f, b.Bytes())
	}
}

func TestCSVTotalLatency(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	rows := csvRows(t, doc, Options{})
	col := func(name string) int {
		i := slices.Index(rows[0], name)
		if i < 0 {
			t.Fatalf("no column %s in %v", name, rows[0])
		}
		return i
	}
	for _, name := range []string{"min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max"} {
		col("total_lat_" + name + "_ns")
	}
	p99, maxCol := col("total_lat_p99_ns"), col("total_lat_max_ns")
	for i, r := range doc.Results {
		row := rows[i+1]
		if r.Total.LatNS == nil {
			if row[p99] != "" || row[maxCol] != "" {
				t.Errorf("%s: total latency %q..%q without total.lat_ns, want empty", r.Name, row[p99], row[maxCol])
			}
			continue
		}
		if row[p99] != utoa(r.Total.LatNS.P99) || row[maxCol] != utoa(r.Total.LatNS.Max) {
			t.Errorf("%s: total p99 %q max %q, want %d %d", r.Name, row[p99], row[maxCol], r.Total.LatNS.P99, r.Total.LatNS.Max)
		}
	}
}

func TestCSVWideFlagsApproxCells(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	var b bytes.Buffer
	if err := writeCSV(&b, doc, Options{Metric: LatP99, Wide: true}); err != nil {
		t.Fatal(err)
	}
	golden(t, "total-lat.lat-p99.wide.csv", b.Bytes())
	r := csv.NewReader(bytes.NewReader(b.Bytes()))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// The value table, the flag table of the same shape, the notes.
	m := BuildMetric(doc.Results, LatP99)
	tb := m.Tables[0]
	notes := tb.Flags().Notes()
	if len(m.Tables) != 1 || len(rows) != 2*(1+len(tb.Rows))+len(notes) || len(notes) != 2 {
		t.Fatalf("%d rows:\n%v", len(rows), rows)
	}
	flags := rows[1+len(tb.Rows):]
	if !strings.HasSuffix(flags[0][0], ": marks") || !slices.Equal(flags[0][1:], tb.Cols) {
		t.Errorf("flag table header %v", flags[0])
	}
	for i, label := range tb.Rows {
		values, marks := rows[1+i], flags[1+i]
		if values[0] != label || marks[0] != label {
			t.Fatalf("row %d labels %q %q, want %q", i, values[0], marks[0], label)
		}
		for j, c := range tb.Cells[i] {
			if _, ok := parseNumber(values[1+j]); !ok {
				t.Errorf("%s %s: value %q is not a number", label, tb.Cols[j], values[1+j])
			}
			if want := c.Flags.Signs(); marks[1+j] != want || (c.Flags.Has(FlagApprox) && !strings.HasPrefix(want, ApproxMark)) {
				t.Errorf("%s %s: flag %q, want %q", label, tb.Cols[j], marks[1+j], want)
			}
		}
	}
	if tail := rows[len(rows)-2:]; len(tail[0]) != 1 || tail[0][0] != ApproxNote || tail[1][0] != FewIOsNote {
		t.Errorf("last rows %v, want the notes", tail)
	}
}

func TestXLSXMarksApproxCells(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	var b bytes.Buffer
	if err := writeXLSX(&b, doc, Options{Metric: LatP99}); err != nil {
		t.Fatal(err)
	}
	f, err := excelize.OpenReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tb := BuildMetric(doc.Results, LatP99).Tables[0]
	sheet := f.GetSheetList()[0]
	for r := range tb.Rows {
		for c, cell := range tb.Cells[r] {
			ref, _ := excelize.CoordinatesToCellName(c+2, 5+r)
			if typ, _ := f.GetCellType(sheet, ref); typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset {
				t.Errorf("%s: cell type %v, want a number", ref, typ)
			}
			id, err := f.GetCellStyle(sheet, ref)
			if err != nil {
				t.Fatal(err)
			}
			st, err := f.GetStyle(id)
			if err != nil {
				t.Fatal(err)
			}
			marked := st.CustomNumFmt != nil && strings.HasPrefix(*st.CustomNumFmt, `"`+ApproxMark+`"`)
			if marked != cell.Flags.Has(FlagApprox) {
				t.Errorf("%s (%s): number format %v, approximate %v", ref, cell.Result.Name, st.CustomNumFmt, cell.Flags.Has(FlagApprox))
			}
			if shown, _ := f.GetCellValue(sheet, ref); cell.Flags.Has(FlagApprox) && !strings.HasPrefix(shown, ApproxMark) {
				t.Errorf("%s shows %q, want the marker", ref, shown)
			}
		}
	}
	noteRef, _ := excelize.CoordinatesToCellName(1, 4+len(tb.Rows)+2)
	if note, _ := f.GetCellValue(sheet, noteRef); note != ApproxNote {
		t.Errorf("%s holds %q, want the note", noteRef, note)
	}
}

// measureApprox is Measure with only the approximate flag.
func measureApprox(m Metric, r results.Result) (float64, bool) {
	v, flags := m.Measure(r)
	return v, flags.Has(FlagApprox)
}
