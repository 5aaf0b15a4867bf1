package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
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
	// 10,469 I/Os: enough for a p99.9, too few for a p99.99 (marked).
	want := []string{"total", units.Thousands(r.Total.IOPS, 0), units.Thousands(r.Total.MiBPerS, 1),
		us(float64(l.Min)), us(l.Mean), us(float64(l.P50)), us(float64(l.P90)), us(float64(l.P99)),
		us(float64(l.P999)), us(float64(l.P9999)) + report.FewIOsMark, us(float64(l.Max))}
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
		"rand-4k-r70-qd8":  "p99 309 µs",   // total.lat_ns: 309,247 ns
		"rand-4k-r70-qd1":  "p99 ~161? µs", // weighted mean of 165 and 153 µs, marked; 879 writes are too few for a p99
		"rand-4k-r0-qd8":   "p99 354 µs",   // one direction: exact without total.lat_ns
		"rand-4k-r100-qd1": "p99 151 µs",
	} {
		var b bytes.Buffer
		prog := &sweepProgress{g: &globalOptions{stderr: &b}, total: 6, started: time.Now(), patAt: time.Now()}
		r := fixtureResult(t, doc, name)
		prog.finished(*r)
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

// The disk's counters are the whole disk's: the run text says so, counts
// the requests that were not iomatrix's, says when the run was capped and
// what the cgroup counted; a cell where another process loaded the disk
// gets a notice.
func TestRunTextDiskAndCap(t *testing.T) {
	doc := readDoc(t, totalLatFixture)
	res := *fixtureResult(t, doc, "rand-4k-r70-qd8")
	res.Device = results.DevStats{IOs: 85417, UtilPct: 97, OtherIOs: 85417 - 6215}
	res.Completed = results.Counts{Reads: 4351, Writes: 1864}
	res.CgroupIOs = &results.Counts{Reads: 4351, Writes: 1864}
	capped := *doc
	capped.Cap = &results.Cap{CgroupVersion: 1, Cgroup: "/sys/fs/cgroup/blkio/iomatrix/42-1", Device: "254:0", ReadIOPS: 3000}
	var b bytes.Buffer
	writeRunText(&b, &capped, &res)
	for _, want := range []string{
		"disk vda, all processes: 85,417 requests completed, 97.0% utilized (79,202 of them not iomatrix's)",
		"capped: riops=3000 on 254:0 (cgroup v1), cgroup /sys/fs/cgroup/blkio/iomatrix/42-1",
		"cgroup counted 4,351 reads, 1,864 writes; iomatrix completed 4,351 reads, 1,864 writes",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("run text lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	writeRunText(&b, doc, &res)
	if strings.Contains(b.String(), "capped") {
		t.Errorf("an uncapped run said capped:\n%s", b.String())
	}

	const mib = 1 << 20
	for _, tc := range []struct {
		ios, other, bytes, otherBytes uint64
		notice                        bool
	}{
		{85417, 79202, 0, 0, true},
		{10000, 400, 0, 0, false}, // a few hundred: timing at the window's edges
		{100000, 5000, 0, 0, false},
		{10000, 2500, 0, 0, true},
		// A writeback storm beside 4K reads at QD1: few requests, most of
		// the bytes (1,653 reads and 280 MiB in 300 requests of 1 MiB).
		{1953, 300, 286 * mib, 280 * mib, true},
		{10000, 100, 100 * mib, 10 * mib, false}, // a tenth of the bytes
		{2000, 50, 18 * mib, 10 * mib, false},    // under 16 MiB
	} {
		var e bytes.Buffer
		r := res
		r.Device = results.DevStats{IOs: tc.ios, OtherIOs: tc.other, Bytes: tc.bytes, OtherBytes: tc.otherBytes}
		noticeOtherLoad(&globalOptions{stderr: &e}, r, "vda")
		if got := strings.Contains(e.String(), "another process was loading the device"); got != tc.notice {
			t.Errorf("%d of %d requests, %d of %d bytes not iomatrix's: notice %v, want %v (%q)", tc.other, tc.ios, tc.otherBytes, tc.bytes, got, tc.notice, e.String())
		}
	}
}

// Buffered writes escape a cap on v1 always, on v2 unless the cgroup has
// the memory controller as well as io: throttle says so exactly then.
func TestWritebackWarning(t *testing.T) {
	for _, tc := range []struct {
		version int
		enabled []string
		warn    string
	}{
		{1, []string{"blkio"}, "cgroup v1 limits direct I/O only"},
		{2, []string{"io"}, "memory controller"},
		{2, []string{"io", "memory"}, ""},
	} {
		got := writebackWarning(tc.version, tc.enabled)
		if (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
			t.Errorf("v%d with %q: %q, want %q", tc.version, tc.enabled, got, tc.warn)
		}
	}
}

// A resumed auto sweep measures its remaining patterns as its file says.
func TestResumeAdoptsAuto(t *testing.T) {
	o := &sweepOptions{}
	o.measureOptions.Precision = "2%"
	s := results.Settings{RuntimeNS: int64(20 * time.Second), RampNS: int64(time.Second),
		Auto: &results.AutoSettings{MinRuntimeNS: int64(4 * time.Second), MaxRuntimeNS: int64(20 * time.Second), PrecisionPct: 2.5}}
	if err := o.adoptAuto(s); err != nil {
		t.Fatal(err)
	}
	opts, err := o.options(&globalOptions{stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if a := opts.Auto; a == nil || a.MinRuntime != 4*time.Second || a.MaxRuntime != 20*time.Second || a.Precision != 0.025 || opts.Runtime != 20*time.Second {
		t.Errorf("options %+v, auto %+v", opts, opts.Auto)
	}
	if got := autoSettings(opts); *got != *s.Auto {
		t.Errorf("recorded again as %+v, want %+v", got, s.Auto)
	}
}

// The sweep's ETA: from the plan before any auto pattern ends ("up to"),
// then from what the patterns really took.
func TestSweepETAWithAuto(t *testing.T) {
	start := time.Now()
	prog := &sweepProgress{g: &globalOptions{stderr: &bytes.Buffer{}}, total: 10, per: 21 * time.Second, auto: true, started: start, patAt: start}
	if got := prog.etaText(start); got != "up to 3m30s" {
		t.Errorf("before any pattern: %s", got)
	}
	prog.done, prog.ran, prog.ranFor, prog.patAt = 4, 4, 28*time.Second, start.Add(28*time.Second)
	if left, upTo := prog.eta(prog.patAt); upTo || left != 6*7*time.Second {
		t.Errorf("after 4 patterns of 7s: %s (up to %v), want 42s", left, upTo)
	}
	prog.auto = false // a fixed runtime never expects less than its plan
	if left, _ := prog.eta(prog.patAt); left != 6*21*time.Second {
		t.Errorf("fixed: %s, want 2m6s", left)
	}
}
