package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/iomatrix/iomatrix/results"
)

// noIO empties a result's I/O as a cell that completed none records it:
// zero counts, and a latency summary of no sample (withTotal: an empty
// total.lat_ns, as iomatrix writes it; without: none, as an older file or
// a fio import has it).
func noIO(r *results.Result, withTotal bool) {
	r.Read, r.Write = results.DirStats{}, results.DirStats{}
	r.Total = results.Total{}
	if withTotal {
		r.Total.LatNS = &results.Latency{}
	}
}

// withoutIO is the total-lat fixture with two cells that did no I/O, and
// the same fixture with those cells left out.
func withoutIO(t *testing.T) (empty, missing *results.Document, names []string) {
	t.Helper()
	empty, missing = loadFixture(t, "total-lat"), loadFixture(t, "total-lat")
	names = []string{"rand-4k-r70-qd8", "rand-4k-r100-qd8"}
	for i := range empty.Results {
		if r := &empty.Results[i]; slices.Contains(names, r.Name) {
			noIO(r, r.Total.LatNS != nil)
		}
	}
	missing.Results = slices.DeleteFunc(missing.Results, func(r results.Result) bool { return slices.Contains(names, r.Name) })
	return empty, missing, names
}

// A result without I/O has no latency: its latency cell is absent in
// every format, shown as each shows a cell that was not measured, never
// as 0 µs. Its IOPS are a measured 0.
func TestNoIOLatencyIsAbsent(t *testing.T) {
	empty, missing, names := withoutIO(t)
	// OpenMetrics publishes no latency of theirs, only their rates.
	for _, line := range strings.Split(string(render(t, writeOpenMetrics, empty, Options{})), "\n") {
		for _, n := range names {
			if strings.Contains(line, `pattern="`+n+`"`) && strings.HasPrefix(line, "iomatrix_latency_seconds") {
				t.Errorf("openmetrics: %s", line)
			}
		}
	}
	for _, m := range Metrics {
		for _, tb := range BuildMetric(empty.Results, m).Tables {
			for _, row := range tb.Cells {
				for _, c := range row {
					if c == nil || !slices.Contains(names, c.Result.Name) {
						continue
					}
					if m.LowerIsBetter() {
						t.Errorf("%s: %s shows %v, want no cell", m, c.Result.Name, c.Value)
					} else if c.Value != 0 {
						t.Errorf("%s: %s shows %v, want 0", m, c.Result.Name, c.Value)
					}
				}
			}
		}
		if !m.LowerIsBetter() {
			continue
		}
		for _, c := range []struct {
			format string
			o      Options
		}{{"text", Options{Metric: m}}, {"markdown", Options{Metric: m}}, {"csv", Options{Metric: m, Wide: true}}} {
			f, err := Lookup(c.format)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := render(t, f, empty, c.o), render(t, f, missing, c.o); !bytes.Equal(got, want) {
				t.Errorf("%s %s: cells without I/O differ from cells not measured:\n%s\nwant\n%s", c.format, m, got, want)
			}
		}
		// HTML: the tables (the page's counts of results aside).
		got := htmlTables(render(t, writeHTML, empty, Options{Metric: m}))
		want := htmlTables(render(t, writeHTML, missing, Options{Metric: m}))
		if len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("html %s: tables of cells without I/O differ from tables of cells not measured", m)
		}
		// XLSX: the matrix sheets.
		if got, want := xlsxMatrices(t, empty, m), xlsxMatrices(t, missing, m); got != want {
			t.Errorf("xlsx %s: sheets\n%s\nwant\n%s", m, got, want)
		}
	}
}

// htmlTables are the tables of a page.
func htmlTables(page []byte) []string {
	var tables []string
	s := string(page)
	for {
		start := strings.Index(s, "<table")
		if start < 0 {
			return tables
		}
		end := strings.Index(s[start:], "</table>")
		if end < 0 {
			return append(tables, s[start:])
		}
		tables = append(tables, s[start:start+end])
		s = s[start+end:]
	}
}

// xlsxMatrices dumps every cell of the workbook's matrix sheets.
func xlsxMatrices(t *testing.T, doc *results.Document, m Metric) string {
	t.Helper()
	f, err := excelize.OpenReader(bytes.NewReader(render(t, writeXLSX, doc, Options{Metric: m})))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read from memory: nothing to lose
	var b strings.Builder
	for _, sheet := range f.GetSheetList() {
		if sheet == "results" || sheet == "settings" {
			continue
		}
		rows, err := f.GetRows(sheet, excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("[" + sheet + "]\n")
		for _, r := range rows {
			b.WriteString(strings.Join(r, "|") + "\n")
		}
	}
	return b.String()
}

// The run text has no row for a direction without I/O, so it shows no
// latency of it: its way of showing a figure that is not there.
func TestRunTextNoIOHasNoLatency(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	for name, rows := range map[string][]string{"rand-4k-r70-qd8": nil, "rand-4k-r0-qd1": {"write"}} {
		r := *fixtureResult(t, doc, name)
		if rows == nil {
			noIO(&r, true)
		}
		r.Read = results.DirStats{}
		var b bytes.Buffer
		if err := WriteRunText(&b, doc, &r); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(b.String(), "\n") {
			if f := strings.Fields(line); len(f) > 0 && (f[0] == "read" || f[0] == "write" || f[0] == "total") {
				got = append(got, f[0])
			}
		}
		if !slices.Equal(got, rows) {
			t.Errorf("%s without reads: rows %q, want %q:\n%s", name, got, rows, b.String())
		}
	}
}

// A bound needs a latency that proves it: a cell without I/O proves none.
func TestNoIOProvesNoBound(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	for i := range doc.Results {
		noIO(&doc.Results[i], i%2 == 0)
	}
	m, err := ParseMetric("iops@p99<2ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range BuildMetric(doc.Results, m).Tables {
		for i, row := range tb.Cells {
			if row[0] != nil {
				t.Errorf("%s %s: %s proves %s without an I/O", tb.Title, tb.Rows[i], row[0].Result.Name, m)
			}
		}
	}
}

// In a fleet, a member without I/O in a cell adds nothing to the cell's
// latency spread; a cell where no member did I/O has no latency.
func TestFleetNoIOLatency(t *testing.T) {
	var in []MemberInput
	for i, n := range []string{"node-a", "node-b", "node-c"} {
		doc := loadFixture(t, "fleet/"+n)
		for j := range doc.Results {
			switch r := &doc.Results[j]; {
			case r.Name == "rand-4k-r100-qd1": // nobody's I/O
				noIO(r, true)
			case r.Name == "rand-4k-r100-qd32" && i == 0: // node-a's missing
				noIO(r, true)
			}
		}
		in = append(in, MemberInput{Doc: doc, Source: n + ".json"})
	}
	fleet, err := Merge(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range fleet.Results {
		switch r.Name {
		case "rand-4k-r100-qd1":
			for _, m := range Metrics {
				if _, has := r.Fleet.Metrics[string(m)]; has == m.LowerIsBetter() {
					t.Errorf("%s %s: in the spread %v, want it there only for rates", r.Name, m, has)
				}
			}
		case "rand-4k-r100-qd32":
			if sp := r.Fleet.Metrics[string(LatP99)]; sp.Min == 0 {
				t.Errorf("%s: p99 spread %+v counts the member without I/O", r.Name, sp)
			}
		}
	}
	for _, tb := range BuildMetric(fleet.Results, LatP99).Tables {
		for _, row := range tb.Cells {
			for _, c := range row {
				if c != nil && c.Result.Name == "rand-4k-r100-qd1" {
					t.Errorf("fleet p99: %s shows %v, want no cell", c.Result.Name, c.Value)
				}
			}
		}
	}
}

// report --format json --metric M writes M's matrices: a cell without
// I/O has no latency there either, null as a cell not measured, and the
// golden file pins the shape.
func TestMatrixJSONNoIOIsNull(t *testing.T) {
	empty, missing, names := withoutIO(t)
	for _, m := range Metrics {
		got, want := render(t, writeMatrixJSON, empty, Options{Metric: m}), render(t, writeMatrixJSON, missing, Options{Metric: m})
		if m.LowerIsBetter() && !bytes.Equal(got, want) {
			t.Errorf("json %s: cells without I/O differ from cells not measured:\n%s\nwant\n%s", m, got, want)
		}
		var mj MatrixJSON
		if err := json.Unmarshal(got, &mj); err != nil || mj.Metric != string(m) || len(mj.Tables) == 0 {
			t.Fatalf("json %s: %v, %+v", m, err, mj)
		}
		seen := map[string]bool{}
		for _, tb := range mj.Tables {
			for _, row := range tb.Cells {
				for _, c := range row {
					if c != nil {
						seen[c.Name] = true
					}
				}
			}
		}
		for _, n := range names {
			if seen[n] == m.LowerIsBetter() {
				t.Errorf("json %s: cell %s present %v", m, n, seen[n])
			}
		}
	}
	golden(t, "total-lat-p99.json", render(t, writeMatrixJSON, empty, Options{Metric: LatP99}))
}

// Without --metric, JSON is the results document, every figure of every
// result; with it, the metric's matrices.
func TestRenderJSONMetric(t *testing.T) {
	path := filepath.Join("testdata", "total-lat.json")
	for _, c := range []struct {
		given bool
		want  string
	}{{false, `"schema_version"`}, {true, `"tables"`}} {
		var b bytes.Buffer
		r := Request{Path: path, Format: "json", Metric: "lat-p99", Given: func(o string) bool { return c.given && o == "metric" }}
		if err := Render(&b, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("--metric given %v: no %s in\n%.300s", c.given, c.want, b.String())
		}
	}
}

// compare on a latency metric where one run's cell did no I/O: no figure
// of it in JSON (null, and no ratio) or CSV (empty), never 0 µs or a
// change of -100 %; the text shows no change for it.
func TestCompareNoIOIsAbsent(t *testing.T) {
	base, cur := loadFixture(t, "total-lat"), loadFixture(t, "total-lat")
	for i := range base.Results {
		if r := &base.Results[i]; r.Name == "rand-4k-r70-qd8" {
			noIO(r, true)
		}
	}
	for i := range cur.Results {
		if r := &cur.Results[i]; r.Name == "rand-4k-r100-qd8" {
			noIO(r, true)
		}
	}
	c := Compare(base, cur, "base.json", "new.json", LatP99)
	var b bytes.Buffer
	if err := WriteComparison(&b, c, "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			Name             string
			Base, New, Ratio *float64
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, d := range doc.Cells {
		baseless, newless := d.Name == "rand-4k-r70-qd8", d.Name == "rand-4k-r100-qd8"
		if (d.Base == nil) != baseless || (d.New == nil) != newless || (d.Ratio == nil) != (baseless || newless) {
			t.Errorf("json %s: base %v, new %v, ratio %v", d.Name, d.Base, d.New, d.Ratio)
		}
	}
	b.Reset()
	if err := WriteComparison(&b, c, "csv"); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		f := strings.Split(line, ",")
		switch f[0] {
		case "rand-4k-r70-qd8":
			if f[1] != "" || f[2] == "" || f[3] != "" || f[4] != "" {
				t.Errorf("csv, base without I/O: %s", line)
			}
		case "rand-4k-r100-qd8":
			if f[1] == "" || f[2] != "" || f[3] != "" || f[4] != "" {
				t.Errorf("csv, new without I/O: %s", line)
			}
		}
	}
	golden(t, "compare-noio.csv", b.Bytes())
	b.Reset()
	if err := WriteComparison(&b, c, "text"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "-100.0 %") {
		t.Errorf("text shows a change of -100 %%:\n%s", b.String())
	}
}

// isolate's writers: a phase whose victim completed no I/O has no
// latency, "—" in the text and the page, never 0 µs; nor has the
// report a p99 inflation resting on it (null in JSON).
func TestIsolateNoIOLatency(t *testing.T) {
	victim := func(iops float64, p99us uint64) results.Result {
		r := results.Result{Name: "rand-4k-r100-qd1", DurationNS: 1e9, Pattern: results.Pattern{BlockSize: 4096},
			Total: results.Total{IOs: uint64(iops), IOPS: iops}}
		if iops > 0 {
			r.Read = results.DirStats{IOs: uint64(iops), LatNS: results.Latency{P50: p99us * 500, P99: p99us * 1000, P999: p99us * 1100, Count: uint64(iops)}}
		}
		return r
	}
	agg := &results.Result{Name: "rand-16k-r0-qd32", Total: results.Total{IOPS: 40000}}
	rep := &results.IsolateReport{Target: results.TargetInfo{Path: "/dev/x"}, Engine: "uring", Cap: &results.Cap{ReadIOPS: 500},
		Phases: []results.IsolatePhase{
			{Name: "alone", Victim: victim(13000, 200)},
			{Name: "uncapped", Victim: victim(0, 0), Aggressor: agg},
			{Name: "capped", Victim: victim(12000, 300), Aggressor: agg},
			{Name: "alone again", Victim: victim(13000, 200)},
		}}
	var text, page bytes.Buffer
	if err := WriteIsolateText(&text, rep); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "uncapped" {
			if len(f) < 5 || f[2] != "—" || f[3] != "—" || f[4] != "—" {
				t.Errorf("text: the phase without I/O reads %q, want — for its latencies", line)
			}
		}
	}
	if err := WriteIsolateHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	for row, alone := range map[string]string{"victim p50 (µs)": "100", "victim p99 (µs)": "200", "victim p99.9 (µs)": "220"} {
		if want := "<td>" + row + "</td><td>" + alone + "</td><td>—</td>"; !strings.Contains(page.String(), want) {
			t.Errorf("html: no %q", want)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(b), `"p99_inflation":null`) {
		t.Errorf("json: %v, p99_inflation not null: %.200s", err, b)
	}
}
