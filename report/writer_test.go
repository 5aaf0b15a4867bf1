package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from its golden file (go test ./report -update refreshes it):\n--- got\n%s", name, got)
	}
}

// render writes doc in a format through its writer.
func render(t *testing.T, write WriteFunc, doc *results.Document, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, doc, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// csvRows renders doc as CSV and reads it back.
func csvRows(t *testing.T, doc *results.Document, o Options) [][]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(render(t, writeCSV, doc, o))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// fixtures are real runs: a full sweep with three cells removed, the jobs
// profile, the cdm profile under a v1 blkio cap of 2000/1000 IOPS (these
// three predate total.lat_ns), and 4k random reads, 70 % reads and writes
// at QD1 and QD8 with total.lat_ns removed from rand-4k-r70-qd1,
// rand-4k-r100-qd8 and rand-4k-r0-qd8, as an older iomatrix wrote them.
var fixtures = []string{"full-missing", "jobs", "capped", "total-lat", "hist"}

func loadFixture(t *testing.T, name string) *results.Document {
	t.Helper()
	d, err := results.ReadDocumentFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestWritersGolden(t *testing.T) {
	cases := []struct {
		format string
		ext    string
		opts   Options
	}{
		{"text", "txt", Options{}},
		{"text", "lat-p99.txt", Options{Metric: LatP99}},
		{"markdown", "md", Options{}},
		{"csv", "csv", Options{}},
		{"csv", "wide.csv", Options{Wide: true}},
		{"json", "json", Options{}},
	}
	for _, fx := range fixtures {
		doc := loadFixture(t, fx)
		for _, c := range cases {
			f, err := Lookup(c.format)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := f(&b, doc, c.opts); err != nil {
				t.Fatalf("%s %s: %v", fx, c.format, err)
			}
			golden(t, fx+"."+c.ext, b.Bytes())
		}
	}
}

func TestMissingCellsAreEmpty(t *testing.T) {
	doc := loadFixture(t, "full-missing")
	m := Build(doc.Results)
	var missing int
	for _, tb := range m.Tables {
		for _, row := range tb.Cells {
			for _, c := range row {
				if c == nil {
					missing++
				}
			}
		}
	}
	if missing != 3 {
		t.Errorf("%d missing cells, want the 3 removed", missing)
	}
	var b bytes.Buffer
	testenv.Must(t, writeCSV(&b, doc, Options{Wide: true}))
	if strings.Contains(b.String(), ",0,") || strings.Contains(b.String(), ",0\n") {
		t.Error("a missing cell rendered as 0")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, fx := range fixtures {
		doc := loadFixture(t, fx)
		var b bytes.Buffer
		if err := writeJSON(&b, doc, Options{}); err != nil {
			t.Fatal(err)
		}
		back, err := results.ReadDocument(&b)
		if err != nil || len(back.Results) != len(doc.Results) || back.SchemaVersion != 1 {
			t.Errorf("%s: %v", fx, err)
		}
	}
}

func TestLookup(t *testing.T) {
	_, err := Lookup("pdf")
	if !errors.Is(err, ErrBadFormat) || !strings.Contains(err.Error(), "markdown") {
		t.Errorf("unknown format: %v", err)
	}
	if _, err := ParseMetric("lat-p42"); !errors.Is(err, ErrBadMetric) || !strings.Contains(err.Error(), "lat-p99.9") {
		t.Errorf("unknown metric: %v", err)
	}
	for path, want := range map[string]string{"a.md": "markdown", "b.CSV": "csv", "c.json": "json", "d.txt": "text"} {
		if got, ok := FormatForPath(path); !ok || got != want {
			t.Errorf("FormatForPath(%s) = %s", path, got)
		}
	}
	if _, ok := FormatForPath("x.pdf"); ok {
		t.Error("pdf inferred")
	}
}

func TestLatencyMetricWeightsDirections(t *testing.T) {
	r := results.Result{
		Read:  results.DirStats{IOs: 300, LatNS: results.Latency{P99: 1000, Mean: 500}},
		Write: results.DirStats{IOs: 100, LatNS: results.Latency{P99: 5000, Mean: 900}},
	}
	// Without total.lat_ns, a mixed result's figure is the weighted mean,
	// and says it is approximate.
	if v, approx := measureApprox(LatP99, r); v != 2 || !approx { // (300×1 + 100×5) / 400 µs
		t.Errorf("p99 %v µs, approximate %v", v, approx)
	}
	if v, approx := measureApprox(LatMean, r); v != 0.6 || !approx {
		t.Errorf("mean %v µs, approximate %v", v, approx)
	}
	// With it, the total's own percentile, exact.
	r.Total.LatNS = &results.Latency{P99: 4000, Mean: 600}
	if v, approx := measureApprox(LatP99, r); v != 4 || approx {
		t.Errorf("p99 with total.lat_ns %v µs, approximate %v", v, approx)
	}
	if v := LatMean.Value(r); v != 0.6 {
		t.Errorf("mean with total.lat_ns %v µs", v)
	}
}

func TestSingleDirectionLatencyIsExact(t *testing.T) {
	reads := results.Result{Read: results.DirStats{IOs: 300, LatNS: results.Latency{P50: 700, P99: 1000}}}
	writes := results.Result{Write: results.DirStats{IOs: 100, LatNS: results.Latency{P50: 2500, P99: 5000}}}
	for _, c := range []struct {
		name string
		r    results.Result
		m    Metric
		want float64
	}{
		{"reads p99", reads, LatP99, 1}, {"reads p50", reads, LatP50, 0.7},
		{"writes p99", writes, LatP99, 5}, {"writes p50", writes, LatP50, 2.5},
		{"no I/O", results.Result{}, LatP99, 0},
	} {
		if v, approx := measureApprox(c.m, c.r); v != c.want || approx {
			t.Errorf("%s: %v µs, approximate %v; want %v, exact", c.name, v, approx, c.want)
		}
	}
	mixed := results.Result{Read: reads.Read, Write: writes.Write, Total: results.Total{IOPS: 1000}}
	if _, approx := measureApprox(IOPS, mixed); approx {
		t.Error("IOPS of a mixed result marked approximate")
	}
}

// Wherever settings are shown, the target's size and the cap are: a
// target a cache can hold reads very differently from a large one, and a
// capped run from an uncapped one.
func TestSettingsShowSizeAndCap(t *testing.T) {
	for fx, want := range map[string][]string{
		"capped":       {"(file on vda, 1GiB)", "cap riops=2000,wiops=1000 on 254:0 (cgroup v1)"},
		"full-missing": {"(file on vda, 1GiB)", "no cap"},
		"total-lat":    {"(file on vda, 64MiB)", "no cap"},
	} {
		doc := loadFixture(t, fx)
		outputs := map[string]string{"describe": Describe(doc)}
		for _, format := range []string{"text", "markdown", "html"} {
			f, err := Lookup(format)
			if err != nil {
				t.Fatal(err)
			}
			outputs[format] = string(render(t, f, doc, Options{}))
		}
		for name, out := range outputs {
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("%s %s: no %q in\n%.300s", fx, name, w, out)
				}
			}
		}
	}
	doc := &results.Document{Target: results.TargetInfo{SizeBytes: 128 << 20}}
	if got := Describe(doc); got != "target 128MiB, no cap" {
		t.Errorf("a target known only by its size: %q", got)
	}
}

// A cap's rendering is the way caps are written: what cgroup.ParseCap
// reads (checked there against this very string), and "none" only in
// the description.
func TestCapSpec(t *testing.T) {
	c := &results.Cap{CgroupVersion: 1, Device: "254:0", ReadIOPS: 3000, WriteBPS: 64 << 20}
	if got := CapSpec(c); got != "riops=3000,wbps=64MiB" {
		t.Errorf("CapSpec = %q", got)
	}
	if got := CapSpec(&results.Cap{}); got != "" {
		t.Errorf("CapSpec of no limit = %q", got)
	}
	if got := DescribeCap(&results.Cap{CgroupVersion: 2, Device: "8:0"}); got != "none on 8:0 (cgroup v2)" {
		t.Errorf("DescribeCap = %q", got)
	}
}
