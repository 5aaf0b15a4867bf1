package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

const fixture = "../../report/testdata/capped.json"

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		testenv.Must(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	notJSON := write("notjson.json", "iops: lots\n")
	fio := write("fio.json", `{"fio version": "fio-3.33", "jobs": []}`)
	other := write("other.json", `{"name": "something else", "results": [1, 2]}`)
	future := write("future.json", `{"schema_version": 2, "tool": {"name": "iomatrix", "version": "9.0"}, "results": []}`)
	empty := write("empty.json", `{"schema_version": 1, "tool": {"name": "iomatrix", "version": "0.1.0"}, "results": []}`)
	cases := []struct {
		name    string
		args    []string
		mention string
	}{
		{"not JSON", []string{"report", notJSON}, notJSON},
		{"fio output", []string{"report", fio}, "iomatrix import"},
		{"another tool", []string{"report", other}, other},
		{"future schema", []string{"report", future}, "schema_version 2"},
		{"empty results", []string{"report", empty}, empty},
		{"missing file", []string{"report", filepath.Join(dir, "none.json")}, "none.json"},
		{"unknown format", []string{"report", fixture, "--format", "pdf"}, "--format"},
		{"unknown metric", []string{"report", fixture, "--metric", "lat-p42"}, "--metric"},
		{"openmetrics bound metric", []string{"report", fixture, "--format", "openmetrics", "--metric", "iops@p99<2ms"}, "--metric: iops@p99<2ms"},
		{"prom bound metric", []string{"report", fixture, "-o", filepath.Join(dir, "x.prom"), "--metric", "iops@p99<2ms"}, "--metric: iops@p99<2ms"},
		{"outlier not a number", []string{"report", fixture, "--outlier", "NaN"}, `--outlier: "NaN" is not a percentage between 0 and 100`},
		{"unknown extension", []string{"report", fixture, "-o", filepath.Join(dir, "x.pdf")}, "x.pdf"},
		{"out dir missing", []string{"report", fixture, "-o", filepath.Join(dir, "no", "x.md")}, "--out"},
		{"compare future", []string{"compare", fixture, future}, "schema_version 2"},
		{"compare metric", []string{"compare", fixture, fixture, "--metric", "x"}, "--metric"},
		{"compare format", []string{"compare", fixture, fixture, "--format", "html"}, "--format"},
		{"compare one file", []string{"compare", fixture}, "compare"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, runInProcess(c.args...), c.mention)
		})
	}
}

func TestReportFormats(t *testing.T) {
	dir := t.TempDir()
	for _, ext := range []string{"txt", "md", "csv", "json", "html", "xlsx"} {
		out := filepath.Join(dir, "r."+ext)
		r := runInProcess("report", fixture, "-o", out)
		if r.code != 0 || r.stdout != "" {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", ext, r.code, r.stdout, r.stderr)
		}
		fi, err := os.Stat(out)
		if err != nil || fi.Size() == 0 || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v %v", ext, fi, err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if _, err := results.ReadDocument(strings.NewReader(string(data))); err != nil {
		t.Errorf("json report is not a results document: %v", err)
	}
	r := runInProcess("report", fixture, "--format", "csv", "--wide", "--metric", "lat-p99")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "random 4KiB p99 latency (µs),QD1,QD32\n") {
		t.Errorf("wide csv: %q", r.stdout)
	}
	r = runInProcess("compare", fixture, fixture)
	if r.code != 0 || !strings.Contains(r.stdout, "geometric-mean ratio 1.000") {
		t.Errorf("compare with itself: %q %q", r.stdout, r.stderr)
	}
}

func TestJSONErrors(t *testing.T) {
	r := runInProcess("run", filepath.Join(t.TempDir(), "x.dat"), "--qd", "0", "--format", "json")
	if r.code != exitUsage || r.stdout != "" {
		t.Fatalf("exit %d stdout %q", r.code, r.stdout)
	}
	var e struct {
		Error      string `json:"error"`
		ExitStatus int    `json:"exit_status"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &e); err != nil || e.ExitStatus != 2 || e.Kind != "usage" || !strings.Contains(e.Error, "--qd") {
		t.Errorf("stderr %q: %v %+v", r.stderr, err, e)
	}
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Errorf("want one JSON object on one line, got %q", r.stderr)
	}
}

// compare of two runs with no pattern in common lists what each has, says
// there is no ratio, and exits 1.
func TestCompareNothingInCommon(t *testing.T) {
	jobs := "../../report/testdata/jobs.json"
	r := runInProcess("compare", fixture, jobs)
	if r.code != exitFailure {
		t.Errorf("exit %d, want 1", r.code)
	}
	if !strings.Contains(r.stdout, "no pattern in common") || strings.Contains(r.stdout, "ratio 0.000") {
		t.Errorf("stdout %q", r.stdout)
	}
	if !strings.Contains(r.stdout, "only in base capped.json (8)") || !strings.Contains(r.stdout, "only in new jobs.json (7)") {
		t.Errorf("stdout does not list each run's patterns: %q", r.stdout)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(r.stderr, "no pattern in common") {
		t.Errorf("stderr %q: want one line saying why", r.stderr)
	}
	r = runInProcess("compare", fixture, jobs, "--format", "json")
	var c map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil || r.code != exitFailure {
		t.Fatalf("json: exit %d, %v: %q", r.code, err, r.stdout)
	}
	if g := c["geomean_ratio"]; g != nil {
		t.Errorf("json geomean_ratio %v", g)
	}
}

// compare --format csv keeps its output to cells; what differs between
// the runs is a note on stderr.
func TestCompareCSVNotesDifferences(t *testing.T) {
	r := runInProcess("compare", "../../report/testdata/full-missing.json", fixture, "--format", "csv")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "name,base,new,") || strings.Contains(r.stdout, "profile") {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
	want := "iomatrix: note: the runs differ (base → new): profile: full → cdm; runtime: 1s → 500ms; cap: none → riops=2000,wiops=1000 on 254:0 (cgroup v1)\n"
	if r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	// Text carries them in its header: nothing on stderr.
	if r := runInProcess("compare", "../../report/testdata/full-missing.json", fixture); r.code != 0 || r.stderr != "" {
		t.Errorf("text: exit %d, stderr %q", r.code, r.stderr)
	}
}

// tinyObservation is an observation of one device and one system for a
// minute and its last two seconds: 600 reads of 4 KiB a second, their
// ticks 300 ms, on vda.
const tinyObservation = `{"schema_version": 1, "kind": "observation", "tool": {"name": "iomatrix", "version": "0.1.0"},
 "host": {"hostname": "db1", "kernel": "6.1.0", "cpus": 2},
 "started_at": "2024-05-01T08:00:00Z", "finished_at": "2024-05-01T08:01:00Z", "saved_at": "2024-05-01T08:01:00Z", "stop": "duration",
 "settings": {"interval_ns": 1000000000, "duration_ns": 60000000000, "seconds_window_ns": 2000000000, "save_every_ns": 10000000000,
  "devices": ["vda"], "cgroups": ["/erp.slice=erp"]},
 "accounting": {"cgroup_version": 2, "cgroup_mode": "unified", "writeback": "root", "notes": []},
 "devices": [{"name": "vda", "device": "254:0", "kind": "device",
  "seconds": {"step_ns": 1000000000, "end_ms": [59000, 60000], "elapsed_us": [1000000, 1000000],
   "counters": {"rios": [600, 600], "rbytes": [2457600, 2457600], "rticks_ms": [300, 300], "io_ticks_ms": [500, 500], "queue_ms": [700, 700]}},
  "minutes": {"step_ns": 60000000000, "end_ms": [60000], "elapsed_us": [60000000],
   "counters": {"rios": [36000], "rbytes": [147456000], "rticks_ms": [18000], "io_ticks_ms": [30000], "queue_ms": [42000]}},
  "totals": {"rios": 36000}}],
 "systems": [{"name": "erp", "cgroup": "/erp.slice", "writeback": "root",
  "io": {"name": "erp", "kind": "cgroup",
   "seconds": {"step_ns": 1000000000, "end_ms": [59000, 60000], "elapsed_us": [1000000, 1000000], "counters": {"rios": [600, 600], "rbytes": [2457600, 2457600]}},
   "minutes": {"step_ns": 60000000000, "end_ms": [60000], "elapsed_us": [60000000], "counters": {"rios": [36000], "rbytes": [147456000]}},
   "totals": {"rios": 36000},
   "summary": {"observed_ns": 60000000000, "intervals": 60, "minutes": 1, "mean": {"reads": 600, "writes": 0, "ios": 600, "rkb": 2400, "wkb": 0},
    "per_second": {"reads": {"p50": 600, "p95": 600, "p99": 600, "max": 600}}, "per_minute": {"reads": {"p50": 600, "p95": 600, "p99": 600, "max": 600}}}}}],
 "events": []}
`

// report renders an observation in each of its formats, from --format
// and from -o's extension, and refuses the formats and flags it has no
// use for in one line.
func TestReportObservation(t *testing.T) {
	dir := t.TempDir()
	obs := filepath.Join(dir, "obs.json")
	testenv.Must(t, os.WriteFile(obs, []byte(tinyObservation), 0o644))
	for _, c := range []struct {
		format string
		want   string
	}{
		{"text", "| whole observation (1m0s) | 600 | 0.00 | 2,400 |"},
		{"markdown", "## iomatrix observation of db1"},
		{"csv", "vda,device,interval,2024-05-01T08:01:00Z,1,600,0,2400,0,0.5,,0.7,50,0,,\n"},
		{"html", "<h2>device vda (254:0)</h2>"},
		{"json", `"kind": "observation"`},
	} {
		r := runInProcess("report", obs, "--format", c.format)
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, c.want) {
			t.Errorf("%s: exit %d, stderr %q, no %q in\n%s", c.format, r.code, r.stderr, c.want, r.stdout)
		}
	}
	for _, ext := range []string{"txt", "md", "csv", "html", "json"} {
		out := filepath.Join(dir, "r."+ext)
		if r := runInProcess("report", obs, "-o", out); r.code != 0 || r.stdout != "" {
			t.Errorf("-o r.%s: exit %d, stdout %q, stderr %q", ext, r.code, r.stdout, r.stderr)
		}
		if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
			t.Errorf("r.%s: %v %v", ext, fi, err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if o, err := results.ReadObservation(strings.NewReader(string(data))); err != nil || o.Devices[0].Minutes.Counters["rios"][0] != 36000 {
		t.Errorf("json report is not the observation: %v", err)
	}
	for _, c := range []struct {
		name    string
		args    []string
		mention string
	}{
		{"xlsx", []string{"--format", "xlsx"}, "--format xlsx: an observation renders as text, markdown, csv, html, json"},
		{"openmetrics", []string{"--format", "openmetrics"}, "--format openmetrics"},
		{"xlsx file", []string{"-o", filepath.Join(dir, "r.xlsx")}, "r.xlsx: an observation renders as"},
		{"metric", []string{"--metric", "lat-p99"}, "--metric: " + obs + " is an observation"},
		{"wide", []string{"--format", "csv", "--wide"}, "--wide"},
		{"outlier", []string{"--outlier", "5%"}, "--outlier"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, runInProcess(append([]string{"report", obs}, c.args...)...), c.mention)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "r.xlsx")); !os.IsNotExist(err) {
		t.Error("a refused report wrote r.xlsx")
	}
}
