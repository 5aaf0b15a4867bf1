package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
)

// The workbook's tables hold numbers, and every value reads back.
func TestXLSXRoundTrip(t *testing.T) {
	for _, fx := range fixtures {
		doc := loadFixture(t, fx)
		var b bytes.Buffer
		if err := writeXLSX(&b, doc, Options{}); err != nil {
			t.Fatal(err)
		}
		f, err := excelize.OpenReader(&b)
		if err != nil {
			t.Fatalf("%s: excelize cannot open it: %v", fx, err)
		}
		m := Build(doc.Results)
		sheets := f.GetSheetList()
		if len(sheets) != len(m.Tables)+2 || sheets[len(sheets)-2] != "results" || sheets[len(sheets)-1] != "settings" {
			t.Fatalf("%s: sheets %v", fx, sheets)
		}
		var dump strings.Builder
		checked := 0
		for i, tb := range m.Tables {
			sheet := sheets[i]
			fmt.Fprintf(&dump, "[%s]\n", sheet)
			for r := range tb.Rows {
				for c, cell := range tb.Cells[r] {
					ref, _ := excelize.CoordinatesToCellName(c+2, 5+r)
					typ, err := f.GetCellType(sheet, ref)
					if err != nil {
						t.Fatal(err)
					}
					raw, err := f.GetCellValue(sheet, ref, excelize.Options{RawCellValue: true})
					if err != nil {
						t.Fatal(err)
					}
					if cell == nil {
						if raw != "" {
							t.Errorf("%s %s %s: missing cell holds %q", fx, sheet, ref, raw)
						}
						continue
					}
					if typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset {
						t.Errorf("%s %s %s: cell type %v, want a number", fx, sheet, ref, typ)
					}
					v, err := strconv.ParseFloat(raw, 64)
					if err != nil || v != cell.Value {
						t.Errorf("%s %s %s: read back %q, wrote %v", fx, sheet, ref, raw, cell.Value)
					}
					checked++
					fmt.Fprintf(&dump, "%s %s %s=%s cdm=%v\n", tb.Rows[r], tb.Cols[c], ref, raw, cell.CDM)
				}
			}
		}
		if checked != len(doc.Results) {
			t.Errorf("%s: %d cells read back, %d results", fx, checked, len(doc.Results))
		}
		// Long-form results: numeric columns are numbers too.
		raw, _ := f.GetCellValue("results", "M2", excelize.Options{RawCellValue: true})
		if hdr, _ := f.GetCellValue("results", "M1"); hdr != "total_iops" {
			t.Errorf("results sheet column M is %q", hdr)
		} else if v, err := strconv.ParseFloat(raw, 64); err != nil || v != doc.Results[0].Total.IOPS {
			t.Errorf("results sheet total_iops %q", raw)
		}
		if target, _ := f.GetCellValue("settings", "B4"); target != doc.Target.Path {
			t.Errorf("settings target %q", target)
		}
		golden(t, fx+".xlsx.txt", []byte(dump.String()))
		_ = f.Close()
	}
}

// The settings sheet names the target's size in units and the cap, "none"
// when there is none rather than no row.
func TestXLSXSettingsSizeAndCap(t *testing.T) {
	for fx, want := range map[string]map[string]string{
		"capped":       {"target size": "1GiB", "target size (bytes)": "1073741824", "cap": "riops=2000,wiops=1000 on 254:0 (cgroup v1)"},
		"full-missing": {"target size": "1GiB", "cap": "none"},
	} {
		f, err := excelize.OpenReader(bytes.NewReader(render(t, writeXLSX, loadFixture(t, fx), Options{})))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := f.GetRows("settings")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range rows {
			if len(r) == 2 {
				got[r[0]] = r[1]
			}
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: settings %q = %q, want %q", fx, k, got[k], v)
			}
		}
		_ = f.Close()
	}
}
