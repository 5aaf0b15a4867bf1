package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/iomatrix/iomatrix/results"
)

// unsettledDoc is the total-lat fixture measured with --runtime auto: one
// cell never converged, the others did.
func unsettledDoc(t *testing.T) (*results.Document, string) {
	doc := loadFixture(t, "total-lat")
	doc.Settings.Auto = &results.AutoSettings{MinRuntimeNS: 3e9, MaxRuntimeNS: 20e9, PrecisionPct: 2}
	ci := 1.5
	for i := range doc.Results {
		r := &doc.Results[i]
		r.Stop, r.Rounds, r.CIPct = results.StopConverged, 7, &ci
	}
	wide := 4.2
	u := &doc.Results[1]
	u.Stop, u.Rounds, u.CIPct = results.StopMaxRuntime, 20, &wide
	return doc, u.Name
}

func TestUnsettledCellsMarkedEverywhere(t *testing.T) {
	doc, name := unsettledDoc(t)
	iops := FormatValue(IOPS, doc.Results[1].Total.IOPS)
	for _, format := range []string{"text", "markdown"} {
		out := rendered(t, doc, format)
		if strings.Count(out, UnsettledMark) != 2 || !strings.Contains(out, iops+UnsettledMark) || !strings.Contains(out, UnsettledNote) {
			t.Errorf("%s: the unsettled cell %s is not marked %s%s once, with its note:\n%s", format, name, iops, UnsettledMark, out)
		}
		if !strings.Contains(out, "auto, 3s to 20s, ±2 % runtime") {
			t.Errorf("%s: the run is not described as auto:\n%s", format, out)
		}
	}
	page := string(htmlOf(t, doc))
	if n := len(regexp.MustCompile(`class="[^"]*\bunsettled\b`).FindAllString(page, -1)); n != 2 {
		t.Errorf("HTML: %d hatched cells, want 2 (IOPS and p99 tables)", n)
	}
	if !strings.Contains(page, "td.unsettled { background-image: repeating-linear-gradient") || !strings.Contains(page, UnsettledNote) {
		t.Errorf("HTML: no hatching rule or note")
	}

	// The cell stays a number; its format carries the sign as a literal
	// (excelize's own renderer drops literal suffixes; spreadsheet
	// programs show them).
	var marked, noted int
	for _, c := range xlsxCells(t, doc, true) {
		if c.value == UnsettledNote {
			noted++
		}
		if strings.HasSuffix(c.format, `"`+UnsettledMark+`"`) {
			marked++
			if c.typ != excelize.CellTypeNumber && c.typ != excelize.CellTypeUnset {
				t.Errorf("XLSX %s: type %v, want a number", c.ref, c.typ)
			}
		}
	}
	if marked != 1 || noted != 1 {
		t.Errorf("XLSX: %d cells formatted with %s, %d notes; want 1 and 1", marked, UnsettledMark, noted)
	}

	long := csvRows(t, doc, Options{})
	col := map[string]int{}
	for i, h := range long[0] {
		col[h] = i
	}
	for i, r := range doc.Results {
		row := long[1+i]
		if row[col["stop"]] != r.Stop || row[col["rounds"]] != itoa(r.Rounds) || row[col["ci_pct"]] != ftoa(*r.CIPct) {
			t.Errorf("CSV %s: stop %q rounds %q ci %q", r.Name, row[col["stop"]], row[col["rounds"]], row[col["ci_pct"]])
		}
	}

	c := Compare(doc, doc, "a", "b", IOPS)
	if !strings.Contains(c.Summary(), "1 not converged (*)") {
		t.Errorf("compare: %s", c.Summary())
	}
	// A fixed run against an auto one differs in its runtime.
	c = Compare(loadFixture(t, "total-lat"), doc, "fixed", "auto", IOPS)
	if len(c.Differences) != 1 || c.Differences[0].Setting != "runtime" || c.Differences[0].New != "auto, 3s to 20s, ±2 %" {
		t.Errorf("differences %+v", c.Differences)
	}
}

func TestDescribeStop(t *testing.T) {
	ci := 1.25
	auto := &results.AutoSettings{PrecisionPct: 2}
	for _, c := range []struct {
		r    results.Result
		want string
	}{
		{results.Result{Stop: results.StopConverged, Rounds: 7, CIPct: &ci}, "auto, converged after 7 one-second rounds: steady, mean IOPS ±1.25 % (95 % confidence)"},
		{results.Result{Stop: results.StopMaxRuntime, Rounds: 20, CIPct: &ci, Restarts: 1},
			"auto, NOT converged (*): stopped at the maximum runtime after 20 one-second rounds, mean IOPS ±1.25 % (95 % confidence), ±2 % asked; " +
				"restarted 1 time after a step in its rounds (what came before is ramp)"},
		{results.Result{Stop: results.StopFixed, Rounds: 1}, "fixed, 1 one-second round, precision unknown (too few rounds, or rounds too correlated, to tell)"},
		{results.Result{DurationNS: 2e9}, "2s (how it ended was not recorded)"},
	} {
		if got := DescribeStop(c.r, auto); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
