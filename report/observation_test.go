package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// Two hours observed from 08:00 UTC, a second an interval, the last hour
// kept interval by interval. The busiest hour is 08:30 to 09:30 (minutes
// 30 to 89), where vda's load doubles; sdb could not be read from minute
// 100 to 105.
const (
	obsMinutes   = 120
	obsWindowS   = 3600
	busyFromMin  = 30
	busyToMin    = 90
	sdbGoneMin   = 100
	sdbBackMin   = 105
	obsStartedAt = "2024-05-01T08:00:00Z"
)

// busyAt tells whether the second s since the start is in the busiest
// hour.
func busyAt(s int64) bool { return s >= busyFromMin*60 && s < busyToMin*60 }

// vdaPerSecond is vda's counters' increase per second: 600 reads of
// 4 KiB whose ticks sum to 300 ms (r_await 0.50), 200 writes of 16 KiB,
// 5 flushes, and twice the reads, more waiting, at the busiest hour.
func vdaPerSecond(busy bool) map[string]uint64 {
	if busy {
		return map[string]uint64{"rios": 1200, "rbytes": 1200 * 4096, "rticks_ms": 1200, "wios": 300, "wbytes": 300 * 16384,
			"wticks_ms": 900, "io_ticks_ms": 900, "queue_ms": 2400, "fios": 5, "fticks_ms": 5}
	}
	return map[string]uint64{"rios": 600, "rbytes": 600 * 4096, "rticks_ms": 300, "wios": 200, "wbytes": 200 * 16384,
		"wticks_ms": 400, "io_ticks_ms": 500, "queue_ms": 700, "fios": 5, "fticks_ms": 5}
}

// sdbPerSecond is a steady 64 KiB reader that also discards.
func sdbPerSecond(bool) map[string]uint64 {
	return map[string]uint64{"rios": 100, "rbytes": 100 * 65536, "rticks_ms": 50, "wios": 50, "wbytes": 50 * 4096,
		"wticks_ms": 25, "dios": 2, "dbytes": 2 << 20, "io_ticks_ms": 100, "queue_ms": 150}
}

// share is a fraction of vda's reads and writes, as a cgroup's counts.
func share(num, den uint64) func(bool) map[string]uint64 {
	return func(busy bool) map[string]uint64 {
		v := vdaPerSecond(busy)
		return map[string]uint64{"rios": v["rios"] * num / den, "wios": v["wios"] * num / den,
			"rbytes": v["rbytes"] * num / den, "wbytes": v["wbytes"] * num / den}
	}
}

func mysqlPerSecond(busy bool) map[string]uint64 {
	m := uint64(1)
	if busy {
		m = 2
	}
	return map[string]uint64{"data_reads": 800 * m, "data_writes": 150 * m, "data_read": 800 * m * 16384,
		"data_written": 150 * m * 16384, "data_fsyncs": 20, "dblwr_writes": 40, "os_log_written": 512000}
}

// timeline is n intervals of stepS seconds from firstS since the start,
// those skip picks left out (the source could not be read), each
// counter's increase the step times its rate per second.
func timeline(stepS, firstS int64, n int, skip func(endS int64) bool, perSecond func(busy bool) map[string]uint64) results.Timeline {
	t := results.Timeline{StepNS: stepS * 1e9, Counters: map[string][]uint64{}}
	for i := range n {
		startS := firstS + int64(i)*stepS
		if skip != nil && skip(startS+stepS) {
			continue
		}
		t.EndMS = append(t.EndMS, (startS+stepS)*1000)
		t.ElapsedUS = append(t.ElapsedUS, stepS*1e6)
		for name, v := range perSecond(busyAt(startS)) {
			t.Counters[name] = append(t.Counters[name], v*uint64(stepS))
		}
	}
	for name, c := range t.Counters {
		if len(c) != t.Len() {
			panic(name)
		}
	}
	return t
}

// series is a source's minutes over the two hours and intervals over the
// last one.
func series(name, device, kind string, skip func(endS int64) bool, perSecond func(bool) map[string]uint64) results.ObservedSeries {
	s := results.ObservedSeries{Name: name, Device: device, Kind: kind,
		Minutes: timeline(60, 0, obsMinutes, skip, perSecond),
		Seconds: timeline(1, obsMinutes*60-obsWindowS, obsWindowS, skip, perSecond),
		Totals:  map[string]uint64{},
	}
	for c, v := range s.Minutes.Counters {
		for _, x := range v {
			s.Totals[c] += x
		}
	}
	return s
}

func busiest() *results.BusiestHour {
	return &results.BusiestHour{Start: "2024-05-01T08:30:00Z", End: "2024-05-01T09:30:00Z",
		StartMS: busyFromMin * 60000, EndMS: busyToMin * 60000,
		Mean:      map[string]float64{"reads": 840, "writes": 210, "ios": 1050, "rkb": 3360, "wkb": 3360},
		ReadShare: 0.8,
		SizeMix:   []results.SizeClass{{Bytes: 16384, Reads: 0, Writes: 756000}, {Bytes: 4096, Reads: 3024000, Writes: 0}, {Bytes: 1 << 20, Reads: 1, Writes: 0}},
	}
}

func spread(p50, p95, p99, max float64) results.Spread3 {
	return results.Spread3{P50: p50, P95: p95, P99: p99, Max: max}
}

// observation is the synthetic observation every test below renders:
// two devices, three systems (erp with a database and a cross-check,
// web whose writeback is charged to itself, batch saved before its
// first summary) and the events of sdb's absence and the database's
// restart.
func observation() *results.Observation {
	o := results.NewObservation(results.ObserveSettings{
		IntervalNS: 1e9, DurationNS: 2 * 3600e9, SecondsWindowNS: obsWindowS * 1e9, SaveEveryNS: 10e9,
		Devices: []string{"auto"}, Cgroups: []string{"/erp.slice=erp", "/web.slice=web", "/batch.slice=batch"}, Databases: []string{"erp (mysql)"},
	}, obsStartedAt)
	o.Tool.Version = "0.1.0"
	o.Host = results.Host{Hostname: "db1", Kernel: "6.1.0-18-amd64", CPUs: 2}
	o.FinishedAt, o.SavedAt, o.Stop = "2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z", "duration"
	// Notes as observe words them.
	o.Accounting = results.Accounting{CgroupVersion: 2, CgroupMode: "unified", Writeback: "root", Notes: []string{
		"Device figures are /proc/diskstats' and iostat's: requests as the device completed them.",
		"Cgroup figures count bios as they were submitted, before merging: they are not diskstats' requests.",
		"This host accounts I/O in cgroup v2, but erp, batch lack the memory controller: their buffered writeback is charged to the root cgroup, not to them.",
	}}

	sdbGone := func(endS int64) bool { return endS > sdbGoneMin*60 && endS <= sdbBackMin*60 }
	vda := series("vda", "254:0", "device", nil, vdaPerSecond)
	vda.Summary = &results.SeriesSummary{ObservedNS: 7200e9, Intervals: obsWindowS, Minutes: obsMinutes,
		Mean:        map[string]float64{"reads": 900, "writes": 250, "ios": 1150, "rkb": 3600, "wkb": 4000},
		PerSecond:   map[string]results.Spread3{"ios": spread(800, 1500, 1500, 1500)},
		PerMinute:   map[string]results.Spread3{"ios": spread(800, 1500, 1500, 1500)},
		BusiestHour: &results.BusiestHour{Start: "2024-05-01T08:30:00Z", End: "2024-05-01T09:30:00Z", StartMS: busyFromMin * 60000, EndMS: busyToMin * 60000}}
	sdb := series("sdb", "8:16", "device", sdbGone, sdbPerSecond)
	sdb.UncountedIntervals = 12
	sdb.Summary = &results.SeriesSummary{BusiestHour: &results.BusiestHour{Start: "2024-05-01T08:00:00Z", End: "2024-05-01T09:00:00Z", StartMS: 0, EndMS: 3600000}}
	o.Devices = []results.ObservedSeries{vda, sdb}

	erpIO := series("erp", "", "cgroup", nil, share(7, 10))
	erpIO.Summary = &results.SeriesSummary{ObservedNS: 7200e9, Intervals: obsWindowS, Minutes: obsMinutes,
		Mean: map[string]float64{"reads": 630, "writes": 175, "ios": 805, "rkb": 2520, "wkb": 2800},
		PerMinute: map[string]results.Spread3{"reads": spread(420, 840, 840, 840), "writes": spread(140, 210, 210, 210),
			"ios": spread(560, 1050, 1050, 1050), "rkb": spread(1680, 3360, 3360, 3360), "wkb": spread(2240, 3360, 3360, 3360)},
		PerSecond: map[string]results.Spread3{"reads": {P50: 421, P95: 845, P99: 861, Max: 1234, PrecisionPct: 1},
			"writes": spread(140, 211, 215, 230), "ios": spread(561, 1056, 1076, 1464), "rkb": spread(1684, 3380, 3444, 4936), "wkb": spread(2240, 3376, 3440, 3680)},
		BusiestHour: busiest(),
		SizeMix:     []results.SizeClass{{Bytes: 4096, Reads: 4536000}, {Bytes: 16384, Writes: 1260000}},
	}
	erpDB := series("erp", "", "mysql", nil, mysqlPerSecond)
	// A database's figures by observe's names: the five of every series
	// from its data_* counters, and its own.
	erpDB.Summary = &results.SeriesSummary{
		Mean: map[string]float64{"reads": 1200, "writes": 225, "ios": 1425, "rkb": 1200 * 16, "wkb": 225 * 16,
			"fsyncs": 20, "dblwr_writes": 40, "log_kb": 500},
		PerMinute:   map[string]results.Spread3{"reads": spread(800, 1600, 1600, 1600), "rkb": spread(800*16, 1600*16, 1600*16, 1600*16)},
		PerSecond:   map[string]results.Spread3{"reads": spread(800, 1600, 1610, 1700)},
		BusiestHour: &results.BusiestHour{Mean: map[string]float64{"reads": 1600}},
	}
	web := series("web", "", "cgroup", nil, share(1, 10))
	web.Summary = &results.SeriesSummary{Mean: map[string]float64{"reads": 90, "writes": 25, "ios": 115, "rkb": 360, "wkb": 400},
		BusiestHour: &results.BusiestHour{Whole: true, Mean: map[string]float64{"reads": 90}, ReadShare: 0.783}}
	batch := series("batch", "", "cgroup", nil, share(1, 10))
	o.Systems = []results.ObservedSystem{
		{Name: "erp", Cgroup: "/erp.slice", Writeback: "root", IO: &erpIO, Database: &erpDB, Concurrency: 1.8,
			PerDevice: map[string]results.DeviceTotals{"vda": {ReadIOs: 4536000, WriteIOs: 1260000, ReadBytes: 4536000 * 4096, WriteBytes: 1260000 * 16384}},
			CrossCheck: &results.CrossCheck{DBReadIOPS: 1200, DBWriteIOPS: 225, CgroupReadIOPS: 630, CgroupWriteIOPS: 175,
				DBReadKBps: 19200, DBWriteKBps: 3600, CgroupReadKBps: 2520, CgroupWriteKBps: 2800, ReadRatio: 0.525, WriteRatio: 0.778,
				Notes: []string{"The buffer pool serves reads the device never sees.", "The redo log and the doublewrite buffer are writes data_writes does not count."}}},
		{Name: "web", Cgroup: "/web.slice", Writeback: "cgroup", IO: &web},
		{Name: "batch", Cgroup: "/batch.slice", IO: &batch},
	}
	o.Events = []results.ObserveEvent{
		{At: "2024-05-01T09:40:00Z", OffsetMS: sdbGoneMin * 60000, Source: "sdb", Kind: results.EventGone, Detail: "no line in /proc/diskstats"},
		{At: "2024-05-01T09:45:00Z", OffsetMS: sdbBackMin * 60000, Source: "sdb", Kind: results.EventAppeared},
		{At: "2024-05-01T09:50:00Z", OffsetMS: 110 * 60000, Source: "erp/mysql", Kind: results.EventReset, Detail: "uptime went back: the server restarted"},
	}
	return o
}

func renderObservation(t *testing.T, o *results.Observation, format string) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteObservation(&b, o, format); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return b.String()
}

// tail keeps the last n intervals of t.
func tail(t results.Timeline, n int) results.Timeline {
	from := max(0, t.Len()-n)
	out := results.Timeline{StepNS: t.StepNS, EndMS: t.EndMS[from:], ElapsedUS: t.ElapsedUS[from:], Counters: map[string][]uint64{}}
	for c, v := range t.Counters {
		out.Counters[c] = v[from:]
	}
	return out
}

func TestObservationGolden(t *testing.T) {
	o := observation()
	golden(t, "observation.txt", []byte(renderObservation(t, o, "text")))
	golden(t, "observation.md", []byte(renderObservation(t, o, "markdown")))
	golden(t, "observation.html", []byte(renderObservation(t, o, "html")))
	// The CSV of every interval of an hour is long: its golden file keeps
	// the last 20 of each series (and every minute).
	each(o, func(_ string, s *results.ObservedSeries) { s.Seconds = tail(s.Seconds, 20) })
	golden(t, "observation.csv", []byte(renderObservation(t, o, "csv")))
}

// containsAll fails the test for each of wants that the rendering out
// (in format) lacks.
func containsAll(t *testing.T, format, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%s: no %q in\n%.4000s", format, want, out)
		}
	}
}

// tableRow finds the row of a text table whose label is label, and
// returns its cells.
func tableRow(t *testing.T, text, label string) []string {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) > 1 && strings.TrimSpace(cells[0]) == label {
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			return cells[1:]
		}
	}
	t.Fatalf("no row %q in\n%s", label, text)
	return nil
}

// The iostat figures of one interval, by hand: 600 reads of 4096 bytes
// in a second whose read ticks sum to 300 ms are 600 r/s, 2400 rkB/s,
// 4 kB each, waiting 0.5 ms each.
func TestIostatOfOneInterval(t *testing.T) {
	tl := results.Timeline{EndMS: []int64{1000}, ElapsedUS: []int64{1e6}, Counters: map[string][]uint64{
		"rios": {600}, "rbytes": {600 * 4096}, "rticks_ms": {300}, "io_ticks_ms": {250}, "queue_ms": {1500}}}
	f := iostatOf(spanOf(tl, 0, 1))
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"r/s", f.Reads, 600}, {"rkB/s", f.ReadKB, 2400}, {"rareq-sz", f.ReadSize, 4}, {"r_await", f.ReadAwait, 0.5},
		{"aqu-sz", f.AquSz, 1.5}, {"%util", f.UtilPct, 25}, {"w/s", f.Writes, 0}} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Rounding that reaches the next magnitude takes its decimals.
	for v, want := range map[float64]string{99.97: "100", 9.996: "10.0", 9.99: "9.99", 1234.6: "1,235", 0.004: "0.00"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
	// No writes: no size and no wait, rather than a measured 0.
	if num(f.WriteSize) != "-" || num(f.WriteAwait) != "-" {
		t.Errorf("wareq-sz %v, w_await %v without writes", f.WriteSize, f.WriteAwait)
	}
}

func TestObservationTextFigures(t *testing.T) {
	text := renderObservation(t, observation(), "text")
	header := tableRow(t, text, "")
	wantHeader := []string{"r/s", "w/s", "rkB/s", "wkB/s", "rareq-sz", "wareq-sz", "r_await", "w_await", "aqu-sz", "%util", "f/s"}
	if !slices.Equal(header, wantHeader) {
		t.Errorf("vda's header %q, want %q (f/s: it flushed; no d/s: it discarded nothing)", header, wantHeader)
	}
	// vda over two hours, half of them at the busiest hour's load:
	// r/s (600+1200)/2 = 900, rkB/s 900×4 = 3,600, 4 kB each, r_await
	// (300+1200)/(600+1200) = 0.83 ms; w/s (200+300)/2 = 250, 16 kB each,
	// 4,000 kB/s, w_await (400+900)/500 = 2.60 ms; aqu-sz (0.7+2.4)/2 =
	// 1.55; %util (50+90)/2 = 70.
	whole := []string{"900", "250", "3,600", "4,000", "4.00", "16.0", "0.83", "2.60", "1.55", "70.0", "5.00"}
	if got := tableRow(t, text, "whole observation (2h0m0s)"); !slices.Equal(got, whole) {
		t.Errorf("vda whole observation %q, want %q", got, whole)
	}
	hour := []string{"1,200", "300", "4,800", "4,800", "4.00", "16.0", "1.00", "3.00", "2.40", "90.0", "5.00"}
	if got := tableRow(t, text, "busiest hour 08:30–09:30"); !slices.Equal(got, hour) {
		t.Errorf("vda busiest hour %q, want %q", got, hour)
	}
	containsAll(t, "text", text,
		"busiest hour: 2024-05-01 08:30:00–09:30:00 UTC (+30m0s to +1h30m0s)",
		// erp's busiest hour: its read share and sizes, smallest first.
		"reads 80% of its I/Os; sizes 4K 80% · 16K 20% · 1M <1%",
		"each within 1% of the exact value",
		"I/Os in flight at the busiest hour: 1.80",
		"on vda: 4,536,000 reads (17.3GiB)",
		// The database beside its cgroup, with the notes.
		"The buffer pool serves reads the device never sees.",
		"| log kB/s ",
		"no cgroup counted this device's I/O in 12 intervals",
		// batch has no summary: its mean from its minutes, 10 % of vda's.
		"no summary in the document yet",
		"%util is the share of time the device had at least one I/O in flight",
		"| sdb       | gone     | no line in /proc/diskstats",
		"started 2024-05-01T08:00:00Z, finished 2024-05-01T10:00:00Z (duration)",
		"interval 1s; each interval kept for the last 1h0m0s")
	if got := tableRow(t, text, "r/s")[:3]; !slices.Equal(got, []string{"630", "840", "420"}) {
		t.Errorf("erp r/s: mean, busiest hour, minute p50 %q", got)
	}
	if got := tableRow(t, text, "log kB/s")[:2]; !slices.Equal(got, []string{"500", "-"}) {
		t.Errorf("erp's database's log: %q", got)
	}
	if got := tableRow(t, text, "fsyncs/s")[:1]; !slices.Equal(got, []string{"20.0"}) {
		t.Errorf("erp's database's fsyncs: %q", got)
	}
}

// The notes on how the kernel counted are in every format that has
// prose: the document's own, or, in a document without them, what its
// fields say: a cgroup's counts are bios at submission, and where
// writeback is charged.
func TestObservationAccountingNotes(t *testing.T) {
	o := observation()
	for _, format := range []string{"text", "markdown", "html"} {
		containsAll(t, format, html.UnescapeString(renderObservation(t, o, format)), o.Accounting.Notes...)
	}
	o.Accounting.Notes = nil
	for _, format := range []string{"text", "markdown", "html"} {
		containsAll(t, format, html.UnescapeString(renderObservation(t, o, format)),
			"a system's counts are its cgroup's io.stat, bios counted as they are submitted",
			"/proc/diskstats' requests",
			"buffered writeback is charged to the root cgroup on this host",
			"web: its buffered writeback is charged to its own cgroup")
	}
}

func TestObservationNotFinished(t *testing.T) {
	o := observation()
	o.FinishedAt, o.Stop, o.SavedAt = "", "", "2024-05-01T09:12:30Z"
	text := renderObservation(t, o, "text")
	if want := "not finished: still running, or killed: last saved at 2024-05-01T09:12:30Z"; !strings.Contains(text, want) {
		t.Errorf("no %q in\n%.600s", want, text)
	}
}

func TestObservationCSV(t *testing.T) {
	o := observation()
	rows, err := csv.NewReader(strings.NewReader(renderObservation(t, o, "csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows[0], observationCSVHeader) || len(rows[0]) != 16 {
		t.Fatalf("header %q", rows[0])
	}
	want := 1
	each(o, func(_ string, s *results.ObservedSeries) { want += s.Minutes.Len() + s.Seconds.Len() })
	if len(rows) != want {
		t.Errorf("%d rows, want %d (a header and one per interval and minute of each series)", len(rows), want)
	}
	var last []string
	kinds := map[string]int{}
	for _, r := range rows[1:] {
		kinds[r[0]+" "+r[1]+" "+r[2]]++
		if strings.ContainsRune(strings.Join(r[3:], ""), ' ') {
			t.Errorf("a number with a separator: %q", r)
		}
		if r[0] == "vda" && r[2] == "interval" {
			last = r
		}
	}
	// vda's last second, by hand: 600 reads of 4 KiB with 300 ms of
	// ticks, 200 writes of 16 KiB with 400 ms, 500 ms busy, 700 ms queued,
	// 5 flushes; no stall times.
	if w := []string{"vda", "device", "interval", "2024-05-01T10:00:00Z", "1", "600", "200", "2400", "3200", "0.5", "2", "0.7", "50", "5", "", ""}; !slices.Equal(last, w) {
		t.Errorf("vda's last interval %q, want %q", last, w)
	}
	for _, k := range []string{"vda device minute", "sdb device interval", "erp cgroup minute", "erp/mysql mysql interval", "batch cgroup interval"} {
		if kinds[k] == 0 {
			t.Errorf("no %s rows", k)
		}
	}
	// A cgroup has no waits or queue: its device columns are empty.
	for _, r := range rows[1:] {
		if r[1] == "cgroup" && strings.Join(r[9:], "") != "" {
			t.Fatalf("cgroup row with device figures: %q", r)
		}
	}
}

func TestObservationHTMLSelfContained(t *testing.T) {
	page := renderObservation(t, observation(), "html")
	// Two charts per device (minutes, intervals) and the systems' stack.
	if n := strings.Count(page, "<svg"); n != 5 {
		t.Errorf("%d charts, want 5", n)
	}
	external := regexp.MustCompile(`(?i)<script|<link|<img|<iframe|src=|@import|url\(|https?://`)
	stripped := strings.ReplaceAll(page, `"http://www.w3.org/2000/svg"`, "")
	stripped = strings.ReplaceAll(stripped, `"http://www.w3.org/1999/xlink"`, "")
	if m := external.FindString(stripped); m != "" {
		t.Errorf("external reference %q", m)
	}
	containsAll(t, "html", page, "busiest hour", "systems&#39; I/Os per second, stacked", "<caption>erp: the database&#39;s view beside its cgroup&#39;s</caption>",
		`<td style="text-align:left">no line in /proc/diskstats</td>`, ">08:30<")
	if strings.Contains(page, "..<br>") {
		t.Error("a note ends in two full stops")
	}
}

// Headless Chromium draws the charts: the busiest hour's band, the
// reads' and the writes' lines and the systems' stack are there in their
// colours.
func TestObservationHTMLRendersInChromium(t *testing.T) {
	img := screenshot(t, []byte(renderObservation(t, observation(), "html")))
	for _, c := range []struct {
		what    string
		r, g, b int
		least   int
	}{{"busiest hour band", 255, 230, 160, 5000}, {"reads line", 90, 155, 212, 300}, {"writes line", 241, 90, 96, 300}} {
		n := countNear(img, c.r, c.g, c.b)
		t.Logf("%s: %d pixels", c.what, n)
		if n < c.least {
			t.Errorf("%s: %d pixels, want %d or more", c.what, n, c.least)
		}
	}
}

func TestObservationFormats(t *testing.T) {
	if !slices.Equal(ObservationFormats, []string{"text", "markdown", "csv", "html", "json"}) {
		t.Errorf("formats %q", ObservationFormats)
	}
	err := WriteObservation(&bytes.Buffer{}, observation(), "xlsx")
	if !errors.Is(err, ErrBadFormat) || !strings.Contains(err.Error(), "text, markdown, csv, html, json") {
		t.Errorf("xlsx: %v", err)
	}
	// json is the document itself.
	got, err := results.ReadObservation(strings.NewReader(renderObservation(t, observation(), "json")))
	if err != nil || got.Host.Hostname != "db1" || len(got.Systems) != 3 {
		t.Errorf("json: %v %+v", err, got)
	}
}

// A document cut short or from a source that records fewer counters
// renders in every format: a counter it lacks counts nothing, a series
// without a summary has its means from its minutes.
func TestObservationPartialSeries(t *testing.T) {
	o := observation()
	each(o, func(_ string, s *results.ObservedSeries) {
		s.Summary = nil
		for _, tl := range []*results.Timeline{&s.Minutes, &s.Seconds} {
			delete(tl.Counters, "wios")
			delete(tl.Counters, "queue_ms")
		}
	})
	o.Systems[0].CrossCheck, o.Systems[0].Concurrency = nil, 0
	o.Events = nil
	for _, format := range ObservationFormats {
		out := renderObservation(t, o, format)
		if format == "text" && (strings.Contains(out, "busiest hour") || strings.Contains(out, "events")) {
			t.Errorf("a busiest hour or events without any:\n%s", out)
		}
	}
}
