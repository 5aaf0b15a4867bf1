package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/iomatrix/iomatrix/results"
)

// noIOFixture is the capped fixture (single-direction patterns: the other
// direction did no I/O) plus a result that did no I/O at all, with the
// total latency summary a current iomatrix writes.
func noIOFixture(t *testing.T) *results.Document {
	t.Helper()
	doc := loadFixture(t, "capped")
	idle := doc.Results[0]
	idle.Name = "idle"
	idle.Read, idle.Write, idle.Total = results.DirStats{}, results.DirStats{}, results.Total{LatNS: &results.Latency{}}
	doc.Results = append(doc.Results, idle)
	return doc
}

// absentLatency says, for a column of the long form, whether a result's
// value is absent: latency of a direction (or the total) without I/O is
// no measurement, while its counts and rates are measured zeros.
func absentLatency(r *results.Result, column string) (absent, numeric bool) {
	ios := map[string]uint64{"read": r.Read.IOs, "write": r.Write.IOs, "total": r.Total.IOs}
	for dir, n := range ios {
		if strings.HasPrefix(column, dir+"_lat_") {
			return n == 0, true
		}
		if strings.HasPrefix(column, dir+"_") {
			return false, true // ios, bytes, iops, mib_per_s: 0 is a number
		}
	}
	return false, false
}

// A latency of 0 ns is a number; a direction with no I/O has none: its
// latency columns are empty in the long CSV, its counts and rates 0.
func TestCSVLatencyOfNoIOIsEmpty(t *testing.T) {
	doc := noIOFixture(t)
	rows := csvRows(t, doc, Options{})
	header := rows[0]
	checked := 0
	for i, row := range rows[1:] {
		r := &doc.Results[i]
		for j, v := range row {
			absent, dirColumn := absentLatency(r, header[j])
			switch {
			case !dirColumn:
			case absent && v != "":
				t.Errorf("%s %s = %q: no I/O in that direction, want empty", r.Name, header[j], v)
			case !absent && v == "" && !(strings.HasPrefix(header[j], "total_lat_") && r.Total.LatNS == nil):
				t.Errorf("%s %s is empty", r.Name, header[j])
			case absent:
				checked++
			}
		}
	}
	// 8 single-direction results × 9 columns (8 figures and the list of
	// low-confidence ones), and the idle one's 3 × 9.
	if checked != 8*9+3*9 {
		t.Errorf("%d empty latency cells, want %d", checked, 8*9+3*9)
	}
}

// The XLSX results sheet leaves the same cells blank, and writes the
// measured zeros as the number 0.
func TestXLSXLatencyOfNoIOIsBlank(t *testing.T) {
	doc := noIOFixture(t)
	f, err := excelize.OpenReader(bytes.NewReader(render(t, writeXLSX, doc, Options{})))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	checked := 0
	for c, col := range csvColumns {
		for i := range doc.Results {
			r := &doc.Results[i]
			absent, dirColumn := absentLatency(r, col.name)
			if !dirColumn {
				continue
			}
			ref, _ := excelize.CoordinatesToCellName(c+1, i+2)
			raw, err := f.GetCellValue("results", ref, excelize.Options{RawCellValue: true})
			if err != nil {
				t.Fatal(err)
			}
			typ, _ := f.GetCellType("results", ref)
			switch {
			case absent && raw != "":
				t.Errorf("%s %s (%s) = %q: want a blank cell", r.Name, col.name, ref, raw)
			case absent:
				checked++
			case strings.HasSuffix(col.name, "_ios") && (raw != col.get(r) || typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset):
				t.Errorf("%s %s (%s) = %q of type %v, want the number %s", r.Name, col.name, ref, raw, typ, col.get(r))
			}
		}
	}
	if checked != 8*9+3*9 {
		t.Errorf("%d blank latency cells, want %d", checked, 8*9+3*9)
	}
}

// JSON keeps the results schema: lat_ns stays in every direction, and its
// count (with ios) says whether it holds a measurement.
func TestJSONKeepsLatencyOfNoIO(t *testing.T) {
	doc := noIOFixture(t)
	var back struct {
		Results []struct {
			Name  string
			Write struct {
				IOs   *uint64         `json:"ios"`
				LatNS *map[string]any `json:"lat_ns"`
			}
		}
	}
	if err := json.Unmarshal(render(t, writeJSON, doc, Options{}), &back); err != nil {
		t.Fatal(err)
	}
	for _, r := range back.Results {
		if r.Write.IOs == nil || r.Write.LatNS == nil {
			t.Errorf("%s: write.ios or write.lat_ns missing", r.Name)
			continue
		}
		if *r.Write.IOs == 0 && (*r.Write.LatNS)["count"] != 0.0 {
			t.Errorf("%s: no writes, lat_ns.count %v", r.Name, (*r.Write.LatNS)["count"])
		}
	}
}
