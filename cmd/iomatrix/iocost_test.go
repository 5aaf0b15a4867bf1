package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/answers/iocost"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// iocostCell is a closed-loop result of one direction.
func iocostCell(access results.Access, bs int64, read, qd int, iops float64) results.Result {
	p := results.Pattern{Access: access, BlockSize: bs, ReadPct: read, QueueDepth: qd, Jobs: 1}
	d := results.DirStats{IOPS: iops, MiBPerS: iops * float64(bs) / (1 << 20)}
	r := results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOPS: iops, MiBPerS: d.MiBPerS}}
	if read == 100 {
		r.Read = d
	} else {
		r.Write = d
	}
	return r
}

func TestIOCostModel(t *testing.T) {
	dir := t.TempDir()
	doc := results.NewDocument(results.TargetInfo{Device: "259:0", SizeBytes: 1 << 30}, results.Settings{Profile: "iocost"}, "")
	doc.Results = []results.Result{
		iocostCell(results.Sequential, 64<<20, 100, 1, 32),
		iocostCell(results.Sequential, 4096, 100, 64, 400000),
		iocostCell(results.Random, 4096, 100, 64, 300000),
		iocostCell(results.Sequential, 64<<20, 0, 1, 16),
		iocostCell(results.Sequential, 4096, 0, 64, 200000),
		iocostCell(results.Random, 4096, 0, 64, 100000),
		iocostCell(results.Random, 16384, 100, 32, 60000),
	}
	good := filepath.Join(dir, "sweep.json")
	testenv.Must(t, results.WriteFileAtomic(good, doc))
	r := runIomatrix(t, iomatrixCmd(t, "iocost", "model", good))
	want := "259:0 ctrl=user model=linear rbps=2147483648 rseqiops=400000 rrandiops=300000 wbps=1073741824 wseqiops=200000 wrandiops=100000"
	if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "honest vrate") {
		t.Errorf("exit %d, stdout:\n%s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	r = runIomatrix(t, iomatrixCmd(t, "iocost", "model", good, "--format", "json"))
	var rep iocost.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.ModelLine != want || len(rep.Check.Cells) != 7 || rep.Check.Worst[0].Name != "rand-16k-r100-qd32" {
		t.Errorf("json: %v %+v", err, rep.Check.Worst)
	}

	page := filepath.Join(dir, "model.html")
	if r := runIomatrix(t, iomatrixCmd(t, "iocost", "model", good, "--format", "html", "-o", page)); r.code != 0 {
		t.Errorf("html: exit %d: %s", r.code, r.stderr)
	}
	html, err := os.ReadFile(page)
	testenv.Must(t, err)
	for _, want := range []string{"<svg", want, "rand-16k-r100-qd32", "honest vrate"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(string(html), "http"); n != strings.Count(string(html), "http://www.w3.org/") {
		t.Errorf("the page names resources outside it")
	}

	doc.Results = doc.Results[:2]
	short := filepath.Join(dir, "short.json")
	testenv.Must(t, results.WriteFileAtomic(short, doc))
	r = runIomatrix(t, iomatrixCmd(t, "iocost", "model", short))
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], "rrandiops") || !strings.Contains(lines[0], "--profile iocost") {
		t.Errorf("missing cells: exit %d, stderr %q", r.code, r.stderr)
	}
	other := results.NewDocument(results.TargetInfo{Device: "254:0"}, results.Settings{}, "")
	other.Results = doc.Results
	otherPath := filepath.Join(dir, "other.json")
	testenv.Must(t, results.WriteFileAtomic(otherPath, other))
	if r := runIomatrix(t, iomatrixCmd(t, "iocost", "model", good, otherPath)); r.code != exitUsage || !strings.Contains(r.stderr, "one device") {
		t.Errorf("two devices: exit %d, %q", r.code, r.stderr)
	}
}

// On a host that is not pure cgroup v2, apply, show and reset refuse
// with the reason, before reading anything else, and write nothing.
func TestIOCostRefusedOffV2(t *testing.T) {
	testenv.Integration(t)
	ctrl, _ := cgroup.Detect(sysfs.Default(), cgroup.DefaultRoot)
	testenv.Require(t, ctrl.Mode == cgroup.Hybrid || ctrl.Mode == cgroup.Legacy, "the host is "+ctrl.Mode.String()+", not v1 or hybrid")
	state := filepath.Join(t.TempDir(), "state.json")
	for _, args := range [][]string{
		{"apply", "/tmp", "--from", "/nonexistent.json", "--state", state},
		{"show", "/tmp", "--state", state},
		{"reset", "/tmp", "--state", state},
	} {
		r := runIomatrix(t, iomatrixCmd(t, append([]string{"iocost"}, args...)...))
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], ctrl.Mode.String()) || !strings.Contains(lines[0], "cgroup v2") {
			t.Errorf("iocost %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("a state file was written")
	}
}

// --vrate: face, honest or MIN-MAX as the kernel takes it; anything else
// is refused before the host or the files are looked at.
func TestIOCostApplyVrate(t *testing.T) {
	for _, v := range []string{"fast", "90-80", "0-100", "1-20000", "50", "NaN-100", "1-NaN", "1-Inf", "1e1-1e2"} {
		r := runInProcess("iocost", "apply", "/tmp", "--from", "/nonexistent.json", "--vrate", v)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--vrate") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("--vrate %s: exit %d, stderr %q; want exit 2 naming --vrate", v, r.code, r.stderr)
		}
	}
}

// A --sysfs or --cgroupfs root that is not one is refused naming the
// flag, before the device is looked for (it was blamed on DEVICE).
func TestIOCostRoots(t *testing.T) {
	for _, args := range [][]string{
		{"iocost", "show", "/tmp", "--sysfs", "/nonexistent"},
		{"iocost", "reset", "/tmp", "--sysfs", "/proc"},
		{"iocost", "apply", "/tmp", "--from", "/nonexistent.json", "--dry-run", "--sysfs", "/nonexistent"},
		{"iocost", "show", "/tmp", "--cgroupfs", "/nonexistent"},
	} {
		flag := args[len(args)-2]
		checkRefused(t, runInProcess(args...), flag+": ")
	}
}
