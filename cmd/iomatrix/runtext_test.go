package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
)

// totalLatFixture has 4k random reads, 70 % reads and writes at QD1 and
// QD8; rand-4k-r70-qd1, rand-4k-r100-qd8 and rand-4k-r0-qd8 lack
// total.lat_ns, as an older iomatrix wrote them.
const totalLatFixture = "../../report/testdata/total-lat.json"

func fixtureResult(t *testing.T, doc *iotest.Document, name string) *iotest.Result {
	t.Helper()
	for i := range doc.Results {
		if doc.Results[i].Name == name {
			return &doc.Results[i]
		}
	}
	t.Fatalf("%s: no result %s", totalLatFixture, name)
	return nil
}

func TestRunTextTotalRow(t *testing.T) {
	doc := readDoc(t, totalLatFixture)
	totalRow := func(name string) []string {
		var b bytes.Buffer
		writeRunText(&b, doc, fixtureResult(t, doc, name))
		for _, line := range strings.Split(b.String(), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == "total" {
				return f
			}
		}
		return nil
	}
	r := fixtureResult(t, doc, "rand-4k-r70-qd8")
	l := r.Total.LatNS
	// IOPS are counted whole: a decimal would claim a precision the
	// measurement does not have.
	want := []string{"total", thousands(r.Total.IOPS, 0), thousands(r.Total.MiBPerS, 1),
		us(float64(l.Min)), us(l.Mean), us(float64(l.P50)), us(float64(l.P90)), us(float64(l.P99)),
		us(float64(l.P999)), us(float64(l.P9999)), us(float64(l.Max))}
	if got := totalRow(r.Name); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("mixed: total row %q, want %q", got, want)
	}
	// Without total.lat_ns there is no latency to show: IOPS and MiB/s only.
	if got := totalRow("rand-4k-r70-qd1"); len(got) != 3 {
		t.Errorf("mixed without total.lat_ns: total row %q", got)
	}
	// A single direction's row is its total.
	if got := totalRow("rand-4k-r100-qd1"); got != nil {
		t.Errorf("reads only: total row %q", got)
	}
}

func TestSweepProgressLineShowsTotalP99(t *testing.T) {
	doc := readDoc(t, totalLatFixture)
	for name, want := range map[string]string{
		"rand-4k-r70-qd8":  "p99 309 µs",  // total.lat_ns: 309,247 ns
		"rand-4k-r70-qd1":  "p99 ~161 µs", // weighted mean of 165 and 153 µs, marked
		"rand-4k-r0-qd8":   "p99 354 µs",  // one direction: exact without total.lat_ns
		"rand-4k-r100-qd1": "p99 151 µs",
	} {
		var b bytes.Buffer
		sp := &sweepProgress{g: &globalOptions{stderr: &b}, total: 6, started: time.Now(), patAt: time.Now()}
		r := fixtureResult(t, doc, name)
		sp.finished(*r)
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: %q lacks %q", name, b.String(), want)
		}
		// The matrices show the same number.
		v, approx := report.LatP99.Measure(*r)
		if !strings.Contains(b.String(), "p99 "+report.FormatMeasure(report.LatP99, v, approx)+" µs") {
			t.Errorf("%s: %q differs from the matrix cell", name, b.String())
		}
	}
}
