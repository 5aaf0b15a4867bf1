package fio

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/results"
)

// fioFixture returns a file from testdata, captured from real fio 3.33
// runs (see testdata/README.md).
func fioFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fioRaw parses a fixture generically, without the importer's types, so
// that expectations do not share the code under test.
func fioRaw(t *testing.T, data []byte) map[string]any {
	t.Helper()
	i := 0
	if !bytes.HasPrefix(data, []byte("{")) {
		i = bytes.Index(data, []byte("\n{")) + 1
	}
	if i <= 0 && !bytes.HasPrefix(data, []byte("{")) {
		t.Fatal("no JSON object in fixture")
	}
	var m map[string]any
	if err := json.Unmarshal(data[i:], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func fioRawJobs(m map[string]any) []map[string]any {
	var jobs []map[string]any
	for _, j := range m["jobs"].([]any) {
		jobs = append(jobs, j.(map[string]any))
	}
	return jobs
}

func fioRawNum(m map[string]any, path ...string) float64 {
	var v any = m
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	return v.(float64)
}

// editFioFixture changes a real fixture the way another fio run would have
// written it.
func editFioFixture(t *testing.T, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	m := fioRaw(t, fioFixture(t, name))
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func importFioBytes(t *testing.T, name string, data []byte) (*results.Document, []Problem) {
	t.Helper()
	doc, problems, err := Import(name, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Import(%s): %v", name, err)
	}
	return doc, problems
}

func closeRel(got, want, rel float64) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}

func TestImportFioFixtures(t *testing.T) {
	type want struct {
		fioJob  string // jobname in the fixture
		pattern results.Pattern
		name    string
		engine  string
	}
	rand := func(bs int64, read, qd, jobs int) results.Pattern {
		return results.Pattern{Access: results.Random, BlockSize: bs, ReadPct: read, QueueDepth: qd, Jobs: jobs}
	}
	seq := func(bs int64, read, qd int) results.Pattern {
		return results.Pattern{Access: results.Sequential, BlockSize: bs, ReadPct: read, QueueDepth: qd, Jobs: 1}
	}
	tests := []struct {
		file    string
		engine  string // settings.engine
		results []want
	}{
		{"randread.json", "io_uring", []want{{"randread", rand(4096, 100, 16, 1), "rand-4k-r100-qd16", "io_uring"}}},
		{"randwrite.json", "io_uring", []want{{"randwrite", rand(4096, 0, 8, 1), "rand-4k-r0-qd8", "io_uring"}}},
		{"randrw70.json", "io_uring", []want{{"randrw70", rand(8192, 70, 16, 1), "rand-8k-r70-qd16", "io_uring"}}},
		{"seqread.json", "psync", []want{{"seqread", seq(65536, 100, 1), "seq-read-64k-qd1", "psync"}}},
		{"seqwrite.json", "io_uring", []want{{"seqwrite", seq(1<<20, 0, 2), "seq-write-1m-qd2", "io_uring"}}},
		{"numjobs4-grouped.json", "io_uring", []want{{"numjobs4", rand(4096, 100, 4, 4), "rand-4k-r100-qd4-j4", "io_uring"}}},
		{"numjobs4-separate.json", "io_uring", []want{{"numjobs4", rand(4096, 100, 4, 4), "rand-4k-r100-qd4-j4", "io_uring"}}},
		{"numjobs4-separate-jsonplus.json", "io_uring", []want{{"numjobs4", rand(4096, 100, 4, 4), "rand-4k-r100-qd4-j4", "io_uring"}}},
		{"randread-jsonplus.json", "psync", []want{{"randread-jsonplus", rand(4096, 100, 1, 1), "rand-4k-r100-qd1", "psync"}}},
		// fio capped the depth at 1 (its note says so); the pattern keeps
		// the iodepth as given and the engine tells.
		{"notice-prefix.json", "psync", []want{{"notice", rand(4096, 100, 1, 1), "rand-4k-r100-qd1", "psync"}}}, // iodepth=8, capped at 1 by fio
		{"stonewall.json", "io_uring", []want{
			{"randread-4k-qd1", rand(4096, 100, 1, 1), "rand-4k-r100-qd1", "io_uring"},
			{"randread-4k-qd32", rand(4096, 100, 32, 1), "rand-4k-r100-qd32", "io_uring"},
			{"randwrite-16k-qd8", rand(16384, 0, 8, 1), "rand-16k-r0-qd8", "io_uring"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := fioFixture(t, tt.file)
			raw := fioRaw(t, data)
			doc, problems := importFioBytes(t, tt.file, data)
			if len(problems) != 0 {
				t.Fatalf("problems: %v", problems)
			}
			if doc.SchemaVersion != 1 || doc.Tool.Name != "iomatrix" || doc.Tool.Version != results.Version {
				t.Errorf("header: schema %d tool %+v", doc.SchemaVersion, doc.Tool)
			}
			if doc.Settings.Profile != "fio-import" || doc.Settings.Engine != tt.engine {
				t.Errorf("settings: %+v, want profile fio-import engine %s", doc.Settings, tt.engine)
			}
			if doc.Target.Path != "/tmp/iomatrix-fio-fixture.dat" || doc.Target.Kind != "file" {
				t.Errorf("target: %+v", doc.Target)
			}
			if doc.FinishedAt == "" || doc.StartedAt == "" || doc.StartedAt > doc.FinishedAt {
				t.Errorf("started_at %q finished_at %q", doc.StartedAt, doc.FinishedAt)
			}
			if len(doc.Results) != len(tt.results) {
				t.Fatalf("%d results, want %d: %+v", len(doc.Results), len(tt.results), doc.Results)
			}
			for i, w := range tt.results {
				got := doc.Results[i]
				if got.Pattern != w.pattern {
					t.Errorf("pattern %+v, want %+v", got.Pattern, w.pattern)
				}
				if got.Name != w.name || got.Name != got.Pattern.Name() {
					t.Errorf("name %q, want %q", got.Name, w.name)
				}
				if got.Engine != w.engine {
					t.Errorf("engine %q, want %q", got.Engine, w.engine)
				}

				// fio's own figures for this job: the sum over its entries.
				var iops, readIOPS, writeIOPS, readBW, readIOs, writeIOs float64
				entries := 0
				for _, j := range fioRawJobs(raw) {
					if j["jobname"] != w.fioJob {
						continue
					}
					entries++
					r := fioRawNum(j, "read", "iops")
					wr := fioRawNum(j, "write", "iops")
					iops += r + wr
					readIOPS += r
					writeIOPS += wr
					readBW += fioRawNum(j, "read", "bw_bytes")
					readIOs += fioRawNum(j, "read", "total_ios")
					writeIOs += fioRawNum(j, "write", "total_ios")
				}
				if entries == 0 || iops == 0 {
					t.Fatalf("fixture has no I/O for job %q", w.fioJob)
				}
				if !closeRel(got.Total.IOPS, iops, 1e-4) {
					t.Errorf("total IOPS %.3f, fio says %.3f", got.Total.IOPS, iops)
				}
				if !closeRel(got.Read.IOPS, readIOPS, 1e-9) || !closeRel(got.Write.IOPS, writeIOPS, 1e-9) {
					t.Errorf("read/write IOPS %.3f/%.3f, fio says %.3f/%.3f", got.Read.IOPS, got.Write.IOPS, readIOPS, writeIOPS)
				}
				if float64(got.Read.IOs) != readIOs || float64(got.Write.IOs) != writeIOs || got.Total.IOs != got.Read.IOs+got.Write.IOs {
					t.Errorf("ios r/w/t %d/%d/%d, fio says %v/%v", got.Read.IOs, got.Write.IOs, got.Total.IOs, readIOs, writeIOs)
				}
				// The import leaves total.lat_ns out: reports then mark its
				// mixed latency cells approximate.
				if got.Total.LatNS != nil {
					t.Errorf("total lat_ns %+v from a fio import", got.Total.LatNS)
				}
				if !closeRel(got.Read.MiBPerS, readBW/1048576, 1e-9) {
					t.Errorf("read MiB/s %.3f, fio says %.3f", got.Read.MiBPerS, readBW/1048576)
				}
				if got.Read.Bytes != got.Read.IOs*uint64(w.pattern.BlockSize) || got.Write.Bytes != got.Write.IOs*uint64(w.pattern.BlockSize) {
					t.Errorf("bytes %d/%d do not match %d/%d I/Os of %d", got.Read.Bytes, got.Write.Bytes, got.Read.IOs, got.Write.IOs, w.pattern.BlockSize)
				}
				if got.DurationNS < 500e6 || got.DurationNS > 5e9 {
					t.Errorf("duration %d ns for a 1 s run", got.DurationNS)
				}
				if got.CPU.SysPct <= 0 {
					t.Errorf("cpu %+v", got.CPU)
				}
				if got.TimelineIOPS == nil || len(got.TimelineIOPS) != 0 {
					t.Errorf("timeline %v, want empty", got.TimelineIOPS)
				}
			}
		})
	}
}

// A single fio entry's latency is copied, not recomputed.
func TestImportFioLatencyCopied(t *testing.T) {
	for _, file := range []string{"randrw70.json", "randread-jsonplus.json", "numjobs4-grouped.json"} {
		t.Run(file, func(t *testing.T) {
			data := fioFixture(t, file)
			j := fioRawJobs(fioRaw(t, data))[0]
			doc, _ := importFioBytes(t, file, data)
			res := doc.Results[0]
			for _, dir := range []struct {
				name string
				got  results.Latency
			}{{"read", res.Read.LatNS}, {"write", res.Write.LatNS}} {
				if fioRawNum(j, dir.name, "total_ios") == 0 {
					if dir.got != (results.Latency{}) {
						t.Errorf("%s: latency %+v without I/O", dir.name, dir.got)
					}
					continue
				}
				pct := func(k string) uint64 { return uint64(fioRawNum(j, dir.name, "clat_ns", "percentile", k)) }
				want := results.Latency{
					Min:   uint64(fioRawNum(j, dir.name, "clat_ns", "min")),
					Mean:  fioRawNum(j, dir.name, "clat_ns", "mean"),
					Max:   uint64(fioRawNum(j, dir.name, "clat_ns", "max")),
					P50:   pct("50.000000"),
					P90:   pct("90.000000"),
					P99:   pct("99.000000"),
					P999:  pct("99.900000"),
					P9999: pct("99.990000"),
					Count: uint64(fioRawNum(j, dir.name, "clat_ns", "N")),
				}
				want.MarkConfidence(want.Count)
				if want.Count == 0 || dir.got.Figures() != want {
					t.Errorf("%s latency\n got %+v\nwant %+v", dir.name, dir.got, want)
				}
			}
		})
	}
}

func TestImportFioMissingPercentileIsZero(t *testing.T) {
	data := editFioFixture(t, "randread.json", func(m map[string]any) {
		pct := fioRawJobs(m)[0]["read"].(map[string]any)["clat_ns"].(map[string]any)["percentile"].(map[string]any)
		delete(pct, "99.990000")
	})
	doc, _ := importFioBytes(t, "edited", data)
	l := doc.Results[0].Read.LatNS
	if l.P9999 != 0 || l.P999 == 0 || l.P50 == 0 {
		t.Errorf("latency %+v: want p99.99 0, others kept", l)
	}
}

func TestImportFioNumjobs(t *testing.T) {
	grouped, _ := importFioBytes(t, "grouped", fioFixture(t, "numjobs4-grouped.json"))
	sepData := fioFixture(t, "numjobs4-separate.json")
	separate, _ := importFioBytes(t, "separate", sepData)
	for _, doc := range []*results.Document{grouped, separate} {
		if len(doc.Results) != 1 || doc.Results[0].Pattern.Jobs != 4 {
			t.Fatalf("results %+v, want one with 4 jobs", doc.Results)
		}
	}

	jobs := fioRawJobs(fioRaw(t, sepData))
	if len(jobs) != 4 {
		t.Fatalf("fixture has %d entries, want 4", len(jobs))
	}
	res := separate.Results[0]
	var usr, sys, minLat, maxLat, runtime float64
	minLat = math.Inf(1)
	for _, j := range jobs {
		usr += fioRawNum(j, "usr_cpu")
		sys += fioRawNum(j, "sys_cpu")
		minLat = math.Min(minLat, fioRawNum(j, "read", "clat_ns", "min"))
		maxLat = math.Max(maxLat, fioRawNum(j, "read", "clat_ns", "max"))
		runtime = math.Max(runtime, fioRawNum(j, "read", "runtime"))
	}
	if !closeRel(res.CPU.UserPct, usr, 1e-9) || !closeRel(res.CPU.SysPct, sys, 1e-9) {
		t.Errorf("separate cpu %+v, want sum %.3f/%.3f", res.CPU, usr, sys)
	}
	if float64(res.Read.LatNS.Min) != minLat || float64(res.Read.LatNS.Max) != maxLat {
		t.Errorf("separate latency min/max %d/%d, want %v/%v", res.Read.LatNS.Min, res.Read.LatNS.Max, minLat, maxLat)
	}
	if res.Read.LatNS.Mean < minLat || res.Read.LatNS.Mean > maxLat {
		t.Errorf("mean %v outside min..max", res.Read.LatNS.Mean)
	}
	// Percentiles of separate threads cannot be combined without bins.
	if res.Read.LatNS.P50 != 0 || res.Read.LatNS.P99 != 0 {
		t.Errorf("percentiles %+v invented without bins", res.Read.LatNS)
	}
	if res.DurationNS != int64(runtime)*1e6 {
		t.Errorf("duration %d, want the longest thread %v ms", res.DurationNS, runtime)
	}

	// group_reporting averages CPU over threads; the import reports the
	// whole job's use like the separate case.
	g := fioRawJobs(fioRaw(t, fioFixture(t, "numjobs4-grouped.json")))[0]
	if !closeRel(grouped.Results[0].CPU.SysPct, 4*fioRawNum(g, "sys_cpu"), 1e-9) ||
		!closeRel(grouped.Results[0].CPU.UserPct, 4*fioRawNum(g, "usr_cpu"), 1e-9) {
		t.Errorf("grouped cpu %+v, want 4 × %v", grouped.Results[0].CPU, fioRawNum(g, "sys_cpu"))
	}
	// job_runtime of a group is the sum over its threads, not the duration.
	if grouped.Results[0].DurationNS != int64(fioRawNum(g, "read", "runtime"))*1e6 {
		t.Errorf("grouped duration %d, want read runtime %v ms", grouped.Results[0].DurationNS, fioRawNum(g, "read", "runtime"))
	}
}

func TestImportFioSeparateThreadsJSONPlusPercentiles(t *testing.T) {
	data := fioFixture(t, "numjobs4-separate-jsonplus.json")
	doc, _ := importFioBytes(t, "jsonplus", data)
	l := doc.Results[0].Read.LatNS
	if !(l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.P9999 && l.P50 > 0) {
		t.Fatalf("percentiles out of order: %+v", l)
	}
	// The combined percentile lies between the threads' own.
	lo, hi := math.Inf(1), 0.0
	for _, j := range fioRawJobs(fioRaw(t, data)) {
		v := fioRawNum(j, "read", "clat_ns", "percentile", "99.000000")
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if float64(l.P99) < lo || float64(l.P99) > hi {
		t.Errorf("p99 %d outside the threads' %v..%v", l.P99, lo, hi)
	}
}

// The bin arithmetic reproduces fio's own percentiles on a json+ file.
func TestFioMergedPercentilesMatchFio(t *testing.T) {
	for _, file := range []string{"randread-jsonplus.json", "numjobs4-separate-jsonplus.json"} {
		data := fioFixture(t, file)
		out, err := decodeFioOutput(data)
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range out.Jobs {
			c := j.Read.Clat
			if len(c.Bins) == 0 {
				t.Fatalf("%s: no bins", file)
			}
			got := fioMergedPercentiles([]*fioClat{c}, c.N)
			want := fioReportedPercentiles(c.Percentile)
			if len(got) != len(want) {
				t.Fatalf("%s job %d: %v, want %v", file, i, got, want)
			}
			for k := range want {
				if got[k] != want[k] || want[k] == 0 {
					t.Errorf("%s job %d: percentiles %v, fio says %v", file, i, got, want)
					break
				}
			}
		}
	}
}

// fio takes the first bin whose cumulative count reaches p % of the samples.
func TestFioMergedPercentilesBoundary(t *testing.T) {
	a := &fioClat{N: 1, Bins: map[string]uint64{"100": 1}}
	b := &fioClat{N: 1, Bins: map[string]uint64{"200": 1}}
	got := fioMergedPercentiles([]*fioClat{a, b}, 2)
	want := []uint64{100, 200, 200, 200, 200}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
	if got := fioMergedPercentiles([]*fioClat{a, {N: 1}}, 2); got != nil {
		t.Errorf("a thread without bins: %v, want nil", got)
	}
}

func TestImportFioStonewall(t *testing.T) {
	doc, problems := importFioBytes(t, "stonewall.json", fioFixture(t, "stonewall.json"))
	if len(doc.Results) != 3 || len(problems) != 0 {
		t.Fatalf("%d results, problems %v; want 3 results", len(doc.Results), problems)
	}
	// disk_util spans the whole run, not one pattern.
	for _, r := range doc.Results {
		if r.Device != (results.DevStats{}) {
			t.Errorf("%s: device %+v from a run of several patterns", r.Name, r.Device)
		}
	}
	if doc.Target.Disk != "vda" {
		t.Errorf("disk %q", doc.Target.Disk)
	}
}

func TestImportFioDevice(t *testing.T) {
	data := fioFixture(t, "randread.json")
	du := fioRaw(t, data)["disk_util"].([]any)[0].(map[string]any)
	doc, _ := importFioBytes(t, "randread.json", data)
	got := doc.Results[0].Device
	if float64(got.IOs) != du["read_ios"].(float64)+du["write_ios"].(float64) || got.UtilPct != du["util"].(float64) {
		t.Errorf("device %+v, disk_util %v", got, du)
	}
}

func TestImportFioTrim(t *testing.T) {
	doc, problems := importFioBytes(t, "trim.json", fioFixture(t, "trim.json"))
	if len(doc.Results) != 0 {
		t.Errorf("results %+v, want none", doc.Results)
	}
	if len(problems) != 1 || problems[0].Job != "trim" || !strings.Contains(problems[0].Reason, "randtrim") {
		t.Fatalf("problems %v, want one for job trim", problems)
	}
	if s := problems[0].String(); !strings.Contains(s, `"trim"`) || !strings.Contains(s, problems[0].Reason) {
		t.Errorf("String() = %q", s)
	}
	if doc.Target.Path != "/dev/loop1" || doc.Target.Kind != "block" {
		t.Errorf("target %+v, want block device /dev/loop1", doc.Target)
	}
}

func TestImportFioNoticePrefix(t *testing.T) {
	data := fioFixture(t, "notice-prefix.json")
	if !bytes.HasPrefix(data, []byte("note: ")) {
		t.Fatal("fixture lost its notice line")
	}
	// Several notices, one with a brace, and CRLF line ends.
	more := append([]byte("fio: pid=1, err=25/file:ioengines.c:399, func=td_io_queue, error=Inappropriate ioctl for device\r\nwarning: {not json}\r\n"), data...)
	for name, d := range map[string][]byte{"real": data, "more": more} {
		doc, problems, err := Import(name, bytes.NewReader(d))
		if err != nil || len(problems) != 0 || len(doc.Results) != 1 {
			t.Errorf("%s: err %v problems %v results %d", name, err, problems, len(doc.Results))
		}
	}
}

func TestImportFioNotFio(t *testing.T) {
	iomatrixDoc, _ := json.Marshal(results.Document{SchemaVersion: 1, Results: []results.Result{}})
	truncated := fioFixture(t, "randread.json")
	truncated = truncated[:len(truncated)/2]
	tests := map[string]string{
		"empty":            "",
		"blank":            " \n\n",
		"text":             "this is not JSON\nat all\n",
		"number":           "42\n",
		"other tool":       `{"tool": "elbencho", "jobs": []}`,
		"no jobs":          `{"fio version": "fio-3.33"}`,
		"iomatrix results": string(iomatrixDoc),
		"truncated fio":    string(truncated),
		"broken":           "{\n  \"fio version\": ",
		"wrong types":      `{"fio version": "fio-3.33", "jobs": "many"}`,
	}
	for name, input := range tests {
		doc, _, err := Import("run-"+strings.ReplaceAll(name, " ", "-")+".json", strings.NewReader(input))
		if !errors.Is(err, ErrNotFio) {
			t.Errorf("%s: err %v, want ErrNotFio", name, err)
			continue
		}
		if doc != nil || !strings.Contains(err.Error(), "run-") {
			t.Errorf("%s: doc %v, error %q should name the file", name, doc, err)
		}
	}
}

func TestImportFioMapping(t *testing.T) {
	setOpt := func(key, value string) func(map[string]any) {
		return func(m map[string]any) {
			for _, j := range fioRawJobs(m) {
				opts := j["job options"].(map[string]any)
				if value == "" {
					delete(opts, key)
				} else {
					opts[key] = value
				}
			}
		}
	}
	tests := []struct {
		name    string
		file    string
		edit    func(map[string]any)
		pattern results.Pattern // checked when problem is empty
		problem string          // substring of the one expected problem
	}{
		{"rwmixwrite", "randrw70.json", func(m map[string]any) {
			setOpt("rwmixread", "")(m)
			setOpt("rwmixwrite", "30")(m)
		}, results.Pattern{Access: results.Random, BlockSize: 8192, ReadPct: 70, QueueDepth: 16, Jobs: 1}, ""},
		{"default mix", "randrw70.json", setOpt("rwmixread", ""),
			results.Pattern{Access: results.Random, BlockSize: 8192, ReadPct: 50, QueueDepth: 16, Jobs: 1}, ""},
		{"mix disagrees", "randrw70.json", setOpt("rwmixwrite", "40"), results.Pattern{}, "disagree"},
		{"sequential mix", "randrw70.json", setOpt("rw", "readwrite"),
			results.Pattern{Access: results.Sequential, BlockSize: 8192, ReadPct: 70, QueueDepth: 16, Jobs: 1}, ""},
		{"default bs and depth", "randread-jsonplus.json", func(m map[string]any) {
			setOpt("bs", "")(m)
			setOpt("iodepth", "")(m)
		}, results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 1, Jobs: 1}, ""},
		{"bs in bytes", "randread.json", setOpt("bs", "4096"),
			results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 16, Jobs: 1}, ""},
		{"global options", "randread.json", func(m map[string]any) {
			opts := fioRawJobs(m)[0]["job options"].(map[string]any)
			m["global options"] = map[string]any{"iodepth": "64", "bs": "16k", "ioengine": "libaio"}
			delete(opts, "bs")
			delete(opts, "ioengine")
		}, results.Pattern{Access: results.Random, BlockSize: 16384, ReadPct: 100, QueueDepth: 16, Jobs: 1}, "do not match bs=16384"},
		{"bssplit", "randread.json", setOpt("bssplit", "16k/50:4k/50"),
			results.Pattern{Access: results.Random, BlockSize: 16384, ReadPct: 100, QueueDepth: 16, Jobs: 1, BSSplit: "4k/50:16k/50"}, ""},
		{"bssplit and zipf", "randread.json", func(m map[string]any) {
			setOpt("bssplit", "4k/60:16k/30:1m/10,4k/90:8k/10")(m)
			setOpt("random_distribution", "zipf:1.2")(m)
		}, results.Pattern{Access: results.Random, BlockSize: 1 << 20, ReadPct: 100, QueueDepth: 16, Jobs: 1, BSSplit: "4k/60:16k/30:1m/10", Distribution: "zipf:1.2"}, ""},
		{"uniform by fio's word", "randread.json", setOpt("random_distribution", "random"),
			results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 16, Jobs: 1}, ""},
		{"bssplit not summing", "randread.json", setOpt("bssplit", "4k/50:16k/40"), results.Pattern{}, "bssplit=4k/50:16k/40: "},
		{"zoned distribution", "randread.json", setOpt("random_distribution", "zoned:60/10:40/90"), results.Pattern{}, "random_distribution=zoned"},
		{"bs range", "randread.json", setOpt("bs", "4k-16k"), results.Pattern{}, "ranges"},
		{"bsrange", "randread.json", setOpt("bsrange", "4k-16k"), results.Pattern{}, "bsrange"},
		{"bs per direction", "randread.json", setOpt("bs", "4k,16k"), results.Pattern{}, "separate read/write"},
		{"zoned", "randread.json", setOpt("zonemode", "zbd"), results.Pattern{}, "zoned"},
		{"randtrim", "randread.json", setOpt("rw", "randtrim"), results.Pattern{}, "trim"},
		{"trimwrite", "randread.json", setOpt("rw", "trimwrite"), results.Pattern{}, "trim"},
		{"offset modifier", "randread.json", setOpt("rw", "randread:8"), results.Pattern{}, "offset modifiers"},
		{"buffered", "randread.json", setOpt("direct", ""), results.Pattern{}, "buffered"},
		// NVMe commands on a generic device are never buffered.
		{"io_uring_cmd without direct", "randread.json", func(m map[string]any) {
			setOpt("direct", "")(m)
			setOpt("ioengine", "io_uring_cmd")(m)
			setOpt("cmd_type", "nvme")(m)
		}, results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 16, Jobs: 1}, ""},
		{"rate limited", "randread.json", setOpt("rate_iops", "500"), results.Pattern{}, "rate"},
		{"fdatasync on reads", "randread.json", setOpt("fdatasync", "1"), results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 16, Jobs: 1}, ""},
		{"fdatasync at QD16", "randwrite.json", setOpt("fdatasync", "1"), results.Pattern{}, "fdatasync=1 with iodepth=8: iomatrix syncs after a stream's one write in flight (iodepth=1)"},
		{"fsync", "seqwrite.json", func(m map[string]any) { setOpt("fsync", "8")(m); setOpt("iodepth", "1")(m) }, results.Pattern{Access: results.Sequential, BlockSize: 1 << 20, QueueDepth: 1, Jobs: 1, Sync: "fsync:8:after"}, ""},
		{"O_DSYNC", "randwrite.json", setOpt("sync", "dsync"), results.Pattern{Access: results.Random, BlockSize: 4096, QueueDepth: 8, Jobs: 1, Sync: "dsync"}, ""},
		{"O_SYNC", "randwrite.json", setOpt("sync", "1"), results.Pattern{}, "sync=1: O_SYNC writes are not supported"},
		{"two modes", "randwrite.json", func(m map[string]any) { setOpt("sync", "dsync")(m); setOpt("fdatasync", "1")(m) }, results.Pattern{}, "sync=dsync with fdatasync=1: a pattern has one durable-write mode"},
		{"sync off", "randread.json", setOpt("sync", "none"), results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 16, Jobs: 1}, ""},
		// Data content is a pattern's; a job that only reads has none.
		{"compressible reads", "randread.json", setOpt("buffer_compress_percentage", "50"), results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 16, Jobs: 1}, ""},
		{"compressible", "randwrite.json", func(m map[string]any) {
			setOpt("buffer_compress_percentage", "50")(m)
			setOpt("dedupe_percentage", "20")(m)
			setOpt("buffer_compress_chunk", "512")(m)
		}, results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 0, QueueDepth: 8, Jobs: 1, Compress: 50, Dedupe: 20}, ""},
		{"compress chunk", "randread.json", setOpt("buffer_compress_chunk", "4096"), results.Pattern{}, "buffer_compress_chunk=4096"},
		{"dedupe working set", "randread.json", setOpt("dedupe_mode", "working_set"), results.Pattern{}, "dedupe_mode=working_set"},
		{"compress a pattern", "randwrite.json", func(m map[string]any) {
			setOpt("buffer_compress_percentage", "50")(m)
			setOpt("buffer_pattern", "0xdeadbeef")(m)
		}, results.Pattern{}, "buffer_pattern=0xdeadbeef"},
		{"compress 101", "randread.json", setOpt("buffer_compress_percentage", "101"), results.Pattern{}, "not a percentage"},
		{"bad iodepth", "randread.json", setOpt("iodepth", "$ncpus"), results.Pattern{}, "iodepth"},
		{"fio error", "randread.json", func(m map[string]any) { fioRawJobs(m)[0]["error"] = 25.0 }, results.Pattern{}, "error 25"},
		{"writes in a read job", "randread.json", func(m map[string]any) {
			fioRawJobs(m)[0]["write"].(map[string]any)["total_ios"] = 10.0
		}, results.Pattern{}, "writes reported"},
		{"unified mixed", "randread.json", func(m map[string]any) {
			j := fioRawJobs(m)[0]
			j["mixed"] = j["read"]
			delete(j, "read")
			delete(j, "write")
			delete(j, "trim")
		}, results.Pattern{}, "no read or write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, problems := importFioBytes(t, tt.name, editFioFixture(t, tt.file, tt.edit))
			if tt.problem != "" {
				if len(problems) != 1 || !strings.Contains(problems[0].Reason, tt.problem) || len(doc.Results) != 0 {
					t.Fatalf("problems %v results %d, want one problem with %q", problems, len(doc.Results), tt.problem)
				}
				return
			}
			if len(problems) != 0 || len(doc.Results) != 1 {
				t.Fatalf("problems %v results %d", problems, len(doc.Results))
			}
			if got := doc.Results[0].Pattern; got != tt.pattern {
				t.Errorf("pattern %+v, want %+v", got, tt.pattern)
			}
		})
	}
}

func TestImportFioGlobalOptionsDefaults(t *testing.T) {
	// stonewall.json sets ioengine and filename in [global] only.
	doc, _ := importFioBytes(t, "stonewall.json", fioFixture(t, "stonewall.json"))
	if doc.Settings.Engine != "io_uring" || doc.Results[2].Engine != "io_uring" {
		t.Errorf("engine %q/%q, want io_uring from global options", doc.Settings.Engine, doc.Results[2].Engine)
	}
	data := editFioFixture(t, "stonewall.json", func(m map[string]any) {
		delete(m["global options"].(map[string]any), "ioengine")
		fioRawJobs(m)[1]["job options"].(map[string]any)["filename"] = "/dev/loop7"
	})
	doc, _ = importFioBytes(t, "edited", data)
	if doc.Settings.Engine != "psync" || doc.Target.Path != "" {
		t.Errorf("engine %q target %q: want fio's default psync and no common path", doc.Settings.Engine, doc.Target.Path)
	}
}

func TestImportFioOldBandwidth(t *testing.T) {
	data := editFioFixture(t, "randread.json", func(m map[string]any) {
		delete(fioRawJobs(m)[0]["read"].(map[string]any), "bw_bytes")
	})
	raw := fioRaw(t, data)
	doc, _ := importFioBytes(t, "old", data)
	want := fioRawNum(fioRawJobs(raw)[0], "read", "bw") * 1024 / 1048576
	if got := doc.Results[0].Read.MiBPerS; !closeRel(got, want, 1e-12) {
		t.Errorf("MiB/s %v, want %v from bw in KiB/s", got, want)
	}
}

func TestImportFioUnclearEntries(t *testing.T) {
	// Three of four thread entries: not a whole job.
	data := editFioFixture(t, "numjobs4-separate.json", func(m map[string]any) {
		m["jobs"] = m["jobs"].([]any)[:3]
	})
	doc, problems := importFioBytes(t, "three", data)
	if len(doc.Results) != 0 || len(problems) != 1 || !strings.Contains(problems[0].Reason, "3 report entries") {
		t.Errorf("results %d problems %v", len(doc.Results), problems)
	}

	// Without stonewall the jobs share a group and ran at the same time.
	data = editFioFixture(t, "stonewall.json", func(m map[string]any) {
		for _, j := range fioRawJobs(m) {
			j["groupid"] = 0.0
		}
	})
	doc, problems = importFioBytes(t, "concurrent", data)
	if len(doc.Results) != 0 || len(problems) != 3 || !strings.Contains(problems[0].Reason, "concurrently") {
		t.Errorf("results %d problems %v", len(doc.Results), problems)
	}

	// The same pattern twice in one file is imported once.
	data = editFioFixture(t, "stonewall.json", func(m map[string]any) {
		fioRawJobs(m)[1]["job options"].(map[string]any)["iodepth"] = "1"
	})
	doc, problems = importFioBytes(t, "twice", data)
	if len(doc.Results) != 2 || len(problems) != 1 || problems[0].Job != "randread-4k-qd32" {
		t.Errorf("results %d problems %v", len(doc.Results), problems)
	}
}

func TestMergeImports(t *testing.T) {
	a, _ := importFioBytes(t, "a", fioFixture(t, "randread.json"))
	b, _ := importFioBytes(t, "b", fioFixture(t, "stonewall.json"))
	c, _ := importFioBytes(t, "c", fioFixture(t, "randwrite.json"))
	merged, err := Merge([]*results.Document{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range merged.Results {
		names = append(names, r.Name)
	}
	want := "rand-4k-r100-qd16 rand-4k-r100-qd1 rand-4k-r100-qd32 rand-16k-r0-qd8 rand-4k-r0-qd8"
	if strings.Join(names, " ") != want {
		t.Errorf("merged %v, want %s", names, want)
	}
	if merged.Target.Path != a.Target.Path || merged.Settings.Profile != "fio-import" || merged.SchemaVersion != 1 {
		t.Errorf("merged header %+v %+v", merged.Target, merged.Settings)
	}
	if merged.StartedAt > a.StartedAt || merged.FinishedAt < c.FinishedAt {
		t.Errorf("merged span %s..%s", merged.StartedAt, merged.FinishedAt)
	}

	if _, err := Merge([]*results.Document{a, c, a}); err == nil ||
		!strings.Contains(err.Error(), "rand-4k-r100-qd16") || !strings.Contains(err.Error(), "document 1") || !strings.Contains(err.Error(), "document 3") {
		t.Errorf("duplicate: err %v, want one naming the pattern and both documents", err)
	}
	if _, err := Merge(nil); err == nil {
		t.Error("no documents: no error")
	}
}

// A problem with one I/O says so in the singular.
func TestFioCheckEntryPlurals(t *testing.T) {
	reads := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 1, Jobs: 1}
	writes := reads
	writes.ReadPct = 0
	for _, c := range []struct {
		job     fioJob
		pattern results.Pattern
		want    string
	}{
		{fioJob{Read: &fioDir{}, Trim: &fioDir{TotalIOs: 1}}, reads, "1 trim reported"},
		{fioJob{Read: &fioDir{}, Trim: &fioDir{TotalIOs: 2}}, reads, "2 trims reported"},
		{fioJob{Read: &fioDir{TotalIOs: 1}}, writes, "1 read reported for a write-only job"},
		{fioJob{Write: &fioDir{TotalIOs: 1}}, reads, "1 write reported for a read-only job"},
		{fioJob{Read: &fioDir{TotalIOs: 1, IOBytes: 512}}, reads, "1 read of 512 bytes does not match bs=4096"},
		{fioJob{Read: &fioDir{TotalIOs: 2, IOBytes: 512}}, reads, "2 reads of 512 bytes do not match bs=4096"},
	} {
		if got := fioCheckEntry(&c.job, c.pattern, 0); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// A figure fio never reports (a negative rate, latency, CPU share or
// time) is refused naming the file, the job and the figure: it would
// become a results document's figure. NaN and infinities are not JSON,
// and a negative count does not fit fio's unsigned fields.
func TestImportFioRefusesImpossibleFigures(t *testing.T) {
	base := fioFixture(t, "randread.json")
	for _, c := range []struct {
		name string
		edit func(job, top map[string]any)
		says string
	}{
		{"negative iops", func(j, _ map[string]any) { j["read"].(map[string]any)["iops"] = -5000.0 }, `fio job "randread": read iops is -5000`},
		{"negative latency", func(j, _ map[string]any) { j["read"].(map[string]any)["clat_ns"].(map[string]any)["mean"] = -3.0 },
			`fio job "randread": read clat_ns mean is -3`},
		{"negative runtime", func(j, _ map[string]any) { j["read"].(map[string]any)["runtime"] = -1 }, `fio job "randread": read runtime is -1`},
		{"negative cpu", func(j, _ map[string]any) { j["usr_cpu"] = -3.0 }, `fio job "randread": usr_cpu is -3`},
		{"negative util", func(_, top map[string]any) {
			top["disk_util"] = []any{map[string]any{"name": "vda", "util": -1.0}}
		}, `disk_util "vda": util is -1`},
		{"negative count", func(j, _ map[string]any) { j["read"].(map[string]any)["total_ios"] = -1 }, "cannot unmarshal number -1"},
		{"negative minimum", func(j, _ map[string]any) { j["read"].(map[string]any)["clat_ns"].(map[string]any)["min"] = -1 }, "cannot unmarshal number -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var top map[string]any
			if err := json.Unmarshal(base, &top); err != nil {
				t.Fatal(err)
			}
			c.edit(top["jobs"].([]any)[0].(map[string]any), top)
			data, err := json.Marshal(top)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = ImportFiles([]string{path}, func(string, Problem) {})
			if !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%v, want bad input naming %s and saying %q", err, path, c.says)
			}
		})
	}
}

// json+ bins become the cell's histogram, whose percentiles fall in the
// bucket of fio's own: per thread, and over separate threads merged.
func TestImportFioHistogram(t *testing.T) {
	for _, file := range []string{"randread-jsonplus.json", "numjobs4-separate-jsonplus.json"} {
		data := fioFixture(t, file)
		doc, _ := importFioBytes(t, file, data)
		l := doc.Results[0].Read.LatNS
		h, err := l.Histogram()
		if err != nil || h == nil || h.Count() != l.Count {
			t.Fatalf("%s: histogram %v (%v)", file, h, err)
		}
		for _, p := range []struct {
			q    float64
			fios uint64
		}{{50, l.P50}, {90, l.P90}, {99, l.P99}, {99.9, l.P999}, {99.99, l.P9999}} {
			if got := h.Percentile(p.q); hist.Index(got) != hist.Index(p.fios) {
				t.Errorf("%s: p%v of the histogram %d, fio's %d: not one bucket", file, p.q, got, p.fios)
			}
		}
	}
	// Without bins in every thread there is no histogram.
	doc, _ := importFioBytes(t, "plain", fioFixture(t, "randread.json"))
	if doc.Results[0].Read.LatNS.Hist != nil {
		t.Error("a histogram without json+ bins")
	}
}
