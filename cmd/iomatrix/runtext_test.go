package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/progress"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// totalLatFixture has 4k random reads, 70 % reads and writes at QD1 and
// QD8; rand-4k-r70-qd1, rand-4k-r100-qd8 and rand-4k-r0-qd8 lack
// total.lat_ns, as an older iomatrix wrote them.
const totalLatFixture = "../../report/testdata/total-lat.json"

func fixtureResult(t *testing.T, doc *results.Document, name string) *results.Result {
	t.Helper()
	for i := range doc.Results {
		if doc.Results[i].Name == name {
			return &doc.Results[i]
		}
	}
	t.Fatalf("%s: no result %s", totalLatFixture, name)
	return nil
}

func TestSweepProgressLineShowsTotalP99(t *testing.T) {
	doc := readDoc(t, totalLatFixture)
	for name, want := range map[string]string{
		"rand-4k-r70-qd8":  "p99 309 µs",   // total.lat_ns: 309,247 ns
		"rand-4k-r70-qd1":  "p99 ~161? µs", // weighted mean of 165 and 153 µs, marked; 879 writes are too few for a p99
		"rand-4k-r0-qd8":   "p99 354 µs",   // one direction: exact without total.lat_ns
		"rand-4k-r100-qd1": "p99 151 µs",
	} {
		var b bytes.Buffer
		prog := progress.NewSweep(&b, false, 6, 0, iotest.Options{})
		r := fixtureResult(t, doc, name)
		prog.Finished(*r)
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

// A resumed auto sweep measures its remaining patterns as its file says.
func TestResumeAdoptsAuto(t *testing.T) {
	o := &sweepOptions{}
	o.measureOptions.Precision = "2%"
	s := results.Settings{Profile: "quick", RuntimeNS: int64(20 * time.Second), RampNS: int64(time.Second),
		Auto: &results.AutoSettings{MinRuntimeNS: int64(4 * time.Second), MaxRuntimeNS: int64(20 * time.Second), PrecisionPct: 2.5}}
	if err := o.adoptSettings(&results.Document{Settings: s, Target: results.TargetInfo{Path: "/x"}}, &sweepSetup{}); err != nil {
		t.Fatal(err)
	}
	opts, err := o.options(&globalOptions{stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if a := opts.Auto; a == nil || a.MinRuntime != 4*time.Second || a.MaxRuntime != 20*time.Second || a.Precision != 0.025 || opts.Runtime != 20*time.Second {
		t.Errorf("options %+v, auto %+v", opts, opts.Auto)
	}
	if got := opts.Settings().Auto; *got != *s.Auto {
		t.Errorf("recorded again as %+v, want %+v", got, s.Auto)
	}
}
