package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

func fixtureResult(t *testing.T, doc *results.Document, name string) *results.Result {
	t.Helper()
	for i := range doc.Results {
		if doc.Results[i].Name == name {
			return &doc.Results[i]
		}
	}
	t.Fatalf("total-lat: no result %s", name)
	return nil
}

func TestRunTextTotalRow(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	totalRow := func(name string) []string {
		var b bytes.Buffer
		testenv.Must(t, WriteRunText(&b, doc, fixtureResult(t, doc, name)))
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
		us(float64(l.P999)), us(float64(l.P9999)) + FewIOsMark, us(float64(l.Max))}
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

// The disk's counters are the whole disk's: the run text says so, counts
// the requests that were not iomatrix's, says when the run was capped and
// what the cgroup counted; a cell where another process loaded the disk
// gets a notice.
func TestRunTextDiskAndCap(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	res := *fixtureResult(t, doc, "rand-4k-r70-qd8")
	res.Device = results.DevStats{IOs: 85417, UtilPct: 97, OtherIOs: 85417 - 6215}
	res.Completed = results.Counts{Reads: 4351, Writes: 1864}
	res.CgroupIOs = &results.Counts{Reads: 4351, Writes: 1864}
	capped := *doc
	capped.Cap = &results.Cap{CgroupVersion: 1, Cgroup: "/sys/fs/cgroup/blkio/iomatrix/42-1", Device: "254:0", ReadIOPS: 3000}
	var b bytes.Buffer
	testenv.Must(t, WriteRunText(&b, &capped, &res))
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
	testenv.Must(t, WriteRunText(&b, doc, &res))
	if strings.Contains(b.String(), "capped") {
		t.Errorf("an uncapped run said capped:\n%s", b.String())
	}
}

// A disk that does not count the target's I/O (NVMe passthrough) is said
// to, with no figure, and its CSV cells are empty rather than zero.
func TestRunTextDiskUncounted(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	res := *fixtureResult(t, doc, "rand-4k-r70-qd8")
	res.Device = results.DevStats{Uncounted: "not counted: this kernel leaves NVMe passthrough commands out of /proc/diskstats"}
	var b bytes.Buffer
	testenv.Must(t, WriteRunText(&b, doc, &res))
	if want := "disk vda: requests not counted: this kernel leaves NVMe passthrough commands out of /proc/diskstats\n"; !strings.Contains(b.String(), want) ||
		strings.Contains(b.String(), "utilized") {
		t.Errorf("run text lacks %q, or gives figures:\n%s", want, b.String())
	}
	if got := uncounted(&res, "0"); got != "" {
		t.Errorf("an uncounted CSV cell: %q", got)
	}
}

// Scattered buffers are said to be, with what they do; contiguous ones,
// the usual case, are not mentioned.
func TestRunTextBuffers(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	res := *fixtureResult(t, doc, "rand-4k-r70-qd8")
	for _, c := range []struct {
		layout string
		said   bool
	}{{"scattered", true}, {"contiguous", false}, {"", false}} {
		res.Buffers = c.layout
		var b bytes.Buffer
		testenv.Must(t, WriteRunText(&b, doc, &res))
		if got := strings.Contains(b.String(), "buffers: scattered small pages"); got != c.said {
			t.Errorf("buffers %q: notice %v, want %v:\n%s", c.layout, got, c.said, b.String())
		}
	}
}

// The CPU wait is shown beside the CPU use, where the result holds it.
func TestRunTextCPUWait(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	res := *fixtureResult(t, doc, "rand-4k-r70-qd8")
	var b bytes.Buffer
	testenv.Must(t, WriteRunText(&b, doc, &res))
	if strings.Contains(b.String(), "cpu_wait") {
		t.Errorf("a result without the figure shows one:\n%s", b.String())
	}
	res.CPUWait = &results.CPUWait{IOThreadsNS: 620_400_000, IOThreads: 1, TargetThreadsNS: 12_345_678, TargetThreads: 42, Pct: 31.64}
	b.Reset()
	testenv.Must(t, WriteRunText(&b, doc, &res))
	want := "cpu_wait: 31.6% of the window: iomatrix's I/O threads waited 620.4ms for a CPU (1 thread), the kernel's threads that may serve the target 12.346ms (42 threads)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("run text lacks %q:\n%s", want, b.String())
	}
	others := int64(1_712_000_000)
	res.CPUWait.OthersNS = &others
	b.Reset()
	testenv.Must(t, WriteRunText(&b, doc, &res))
	if want := "(42 threads); other work ran 1.712s of CPU time\n"; !strings.Contains(b.String(), want) {
		t.Errorf("run text lacks %q:\n%s", want, b.String())
	}
}
