package report

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/iotest"
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

// fixtures are real runs: a full sweep with three cells removed, the jobs
// profile, and the cdm profile under a v1 blkio cap of 2000/1000 IOPS.
var fixtures = []string{"full-missing", "jobs", "capped"}

func loadFixture(t *testing.T, name string) *iotest.Document {
	t.Helper()
	d, err := iotest.ReadDocumentFile(filepath.Join("testdata", name+".json"))
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
	writeCSV(&b, doc, Options{Wide: true})
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
		back, err := iotest.ReadDocument(&b)
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
	r := iotest.Result{
		Read:  iotest.DirStats{IOs: 300, LatNS: iotest.Latency{P99: 1000, Mean: 500}},
		Write: iotest.DirStats{IOs: 100, LatNS: iotest.Latency{P99: 5000, Mean: 900}},
	}
	if v := LatP99.Value(r); v != 2 { // (300×1 + 100×5) / 400 µs
		t.Errorf("p99 %v µs", v)
	}
	if v := LatMean.Value(r); v != 0.6 {
		t.Errorf("mean %v µs", v)
	}
}
