package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// The test binary doubles as the iomatrix binary: with IOMATRIX_TEST_MAIN
// set it runs main, so integration tests exec a real process (signals,
// cgroups, rusage) without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("IOMATRIX_TEST_MAIN") == "1" {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	// Children that in-process runs start re-execute this binary: make them
	// run main too.
	if err := os.Setenv("IOMATRIX_TEST_MAIN", "1"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// iomatrixCmd returns a command that runs iomatrix with args.
func iomatrixCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "IOMATRIX_TEST_MAIN=1")
	return cmd
}

type cmdResult struct {
	code           int
	stdout, stderr string
}

func runIomatrix(t *testing.T, cmd *exec.Cmd) cmdResult {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cmdResult{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else {
			t.Fatalf("run %v: %v", cmd.Args, err)
		}
	}
	return r
}

// waitForResults waits until the results file at path holds at least n
// results (n = 0: until it exists) and fails the test after a minute. A
// test that interrupts a run once it has saved something waits for that
// instead of guessing how long a loaded machine takes to get there (a
// race-built binary under the suite's load once took more than 1.5 s to
// start, lay out 64 MiB and save its first document).
func waitForResults(t *testing.T, path string, n int) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, fmt.Sprintf("%s holding %d results", path, n), func() error {
		d, err := results.ReadDocumentFile(path)
		if err == nil && len(d.Results) < n {
			err = fmt.Errorf("%d results", len(d.Results))
		}
		return err
	})
}

func runInProcess(args ...string) cmdResult {
	var out, errb bytes.Buffer
	code := runMain(args, &out, &errb)
	return cmdResult{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	base := []string{"run", target, "--size", "64MiB", "--runtime", "1s", "--ramp", "0s"}
	cases := []struct {
		name  string
		args  []string
		names string // what the one line must mention
	}{
		{"qd 0", []string{"--qd", "0"}, "--qd"},
		{"qd 257", []string{"--qd", "257"}, "--qd"},
		{"bs 3000", []string{"--bs", "3000"}, "--bs"},
		{"bs 0", []string{"--bs", "0"}, "--bs"},
		{"bs junk", []string{"--bs", "4q"}, "--bs"},
		{"rwmix 101", []string{"--rw", "randrw", "--rwmix", "101"}, "--rwmix"},
		{"rwmix -1", []string{"--rw", "randrw", "--rwmix", "-1"}, "--rwmix"},
		{"rwmix without randrw", []string{"--rw", "randread", "--rwmix", "70"}, "--rwmix"},
		{"runtime 0", []string{"--runtime", "0"}, "--runtime"},
		{"ramp negative", []string{"--ramp", "-1s"}, "--ramp"},
		{"jobs 0", []string{"--jobs", "0"}, "--jobs"},
		{"jobs 65", []string{"--jobs", "65"}, "--jobs"},
		{"size 1EiB", []string{"--size", "1EiB"}, target},
		{"size junk", []string{"--size", "lots"}, "--size"},
		{"unknown engine", []string{"--engine", "libaio"}, "--engine"},
		{"unknown rw", []string{"--rw", "trim"}, "--rw"},
		{"unknown format", []string{"--format", "yaml"}, "--format"},
		{"unknown flag", []string{"--no-such-flag", "4"}, "--no-such-flag"},
		{"qd not a number", []string{"--qd", "many"}, "--qd"},
		{"rate 0", []string{"--rate", "0"}, "--rate"},
		{"rate junk", []string{"--rate", "fast"}, "--rate"},
		{"rate share above 100", []string{"--rate", "120%"}, "--rate"},
		{"rate per direction twice", []string{"--rate", "riops=5,riops=6"}, "--rate"},
		{"rate riops with randwrite", []string{"--rw", "randwrite", "--rate", "riops=500"}, "--rate"},
		{"rate both directions without randrw", []string{"--rate", "riops=500,wiops=500"}, "--rate"},
		{"rate per direction with rwmix", []string{"--rw", "randrw", "--rwmix", "70", "--rate", "riops=500,wiops=500"}, "--rwmix"},
		{"rate with psync", []string{"--rate", "500", "--engine", "psync"}, "--engine"},
		{"rate with auto runtime", []string{"--rate", "500", "--runtime", "auto"}, "--runtime"},
		{"arrival without rate", []string{"--arrival", "uniform"}, "--arrival"},
		{"unknown arrival", []string{"--rate", "500", "--arrival", "bursty"}, "--arrival"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runInProcess(append(append([]string{}, base...), c.args...)...)
			checkRefused(t, r, c.names)
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatalf("%s was created", target)
			}
		})
	}
	t.Run("missing parent", func(t *testing.T) {
		p := filepath.Join(dir, "nope", "t.dat")
		checkRefused(t, runInProcess("run", p, "--size", "1MiB"), filepath.Join(dir, "nope"))
	})
	t.Run("a file in the path", func(t *testing.T) {
		file := filepath.Join(dir, "file")
		testenv.Must(t, os.WriteFile(file, nil, 0o644))
		checkRefused(t, runInProcess("run", filepath.Join(file, "t.dat"), "--size", "1MiB"), "not a directory")
	})
	t.Run("tmpfs", func(t *testing.T) {
		fi, err := os.Stat("/dev/shm")
		testenv.Need(t, err == nil && fi.IsDir(), "no /dev/shm")
		p := filepath.Join("/dev/shm", "iomatrix-bad-input.dat")
		checkRefused(t, runInProcess("run", p, "--size", "1MiB"), p)
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			os.Remove(p)
			t.Fatalf("%s was created", p)
		}
	})
	t.Run("too many args", func(t *testing.T) {
		checkRefused(t, runInProcess("run", "a", "b"), "")
	})
}

func checkRefused(t *testing.T, r cmdResult, mention string) {
	t.Helper()
	if r.code != exitUsage {
		t.Fatalf("exit %d, want 2; stderr %q", r.code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout not empty: %q", r.stdout)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], mention) {
		t.Errorf("stderr %q: want one line naming %q", r.stderr, mention)
	}
}

func TestHelpDocumentsExitStatus(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}} {
		r := runInProcess(args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Exit status:") || !strings.Contains(r.stdout, "130") {
			t.Errorf("%v: exit %d, help lacks the exit statuses:\n%s", args, r.code, r.stdout)
		}
	}
}

func TestRunJSON(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	out := filepath.Join(dir, "res.json")
	r := runIomatrix(t, iomatrixCmd(t, "run", target, "--size", "32MiB", "--rw", "randrw", "--rwmix", "70",
		"--bs", "8k", "--qd", "4", "--runtime", "1s", "--ramp", "100ms", "--seed", "5", "--format", "json", "-o", out))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	doc, err := results.ReadDocument(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatalf("stdout is not one results document: %v\n%s", err, r.stdout)
	}
	if len(doc.Results) != 1 || doc.Settings.Seed != 5 || doc.Target.Kind != "file" || doc.Target.SizeBytes != 32<<20 {
		t.Fatalf("document %+v", doc)
	}
	res := doc.Results[0]
	if res.Name != "rand-8k-r70-qd4" || res.Total.IOs == 0 || res.Pattern.ReadPct != 70 {
		t.Errorf("result %+v", res)
	}
	saved, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	if json.Unmarshal(saved, &a) != nil || json.Unmarshal([]byte(r.stdout), &b) != nil {
		t.Fatal("bad JSON")
	}
	if _, ok := a["results"]; !ok {
		t.Error("-o file lacks results")
	}
	// The contract's field names.
	for _, k := range []string{"schema_version", "tool", "started_at", "finished_at", "host", "target", "settings", "cap", "results"} {
		if _, ok := b[k]; !ok {
			t.Errorf("document lacks %q", k)
		}
	}
	r0 := b["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "pattern", "started_at", "duration_ns", "read", "write", "total", "cpu", "device", "timeline_iops"} {
		if _, ok := r0[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
	lat := r0["read"].(map[string]any)["lat_ns"].(map[string]any)
	for _, k := range []string{"min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max"} {
		if _, ok := lat[k]; !ok {
			t.Errorf("lat_ns lacks %q", k)
		}
	}
	// A second run, without --size, reuses the laid-out file at its size.
	r = runIomatrix(t, iomatrixCmd(t, "run", target, "--runtime", "200ms", "--ramp", "0s"))
	if r.code != 0 || strings.Contains(r.stderr, "laying out") || !strings.Contains(r.stdout, "32MiB") {
		t.Errorf("second run: exit %d stderr %q stdout %q", r.code, r.stderr, r.stdout)
	}
}

// An open-loop run: --rate N% measures the closed-loop maximum first and
// keeps it in the document; the JSON names response and service time
// apart; the text leads with response time.
func TestRunRate(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	r := runIomatrix(t, iomatrixCmd(t, "run", target, "--size", "32MiB", "--rw", "randrw", "--qd", "8",
		"--rate", "riops=300,wiops=100", "--arrival", "uniform", "--runtime", "1s", "--ramp", "0s", "--format", "json"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	doc, err := results.ReadDocument(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	res := doc.Results[0]
	rs := res.Rate
	if res.Name != "rand-4k-r75-qd8-rate300r100w-uniform" || rs == nil || rs.TargetIOPS != 400 || rs.ScheduledIOs != 400 ||
		res.Read.ResponseLatNS == nil || res.Write.ServiceLatNS == nil || res.Total.ResponseLatNS == nil {
		t.Fatalf("result %s: rate %+v", res.Name, rs)
	}
	if res.Read.IOs < 290 || res.Read.IOs > 310 || res.Write.IOs < 90 || res.Write.IOs > 110 {
		t.Errorf("%d reads and %d writes in 1 s at riops=300,wiops=100", res.Read.IOs, res.Write.IOs)
	}
	r = runIomatrix(t, iomatrixCmd(t, "run", target, "--qd", "4", "--rate", "50%", "--runtime", "300ms", "--ramp", "0s"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "closed-loop maximum") || !strings.Contains(r.stdout, "response time, from each I/O's intended start") ||
		!strings.Contains(r.stdout, "service time, from each I/O's submission") || !strings.Contains(r.stdout, "rate: target") {
		t.Errorf("--rate 50%%: stderr %q\nstdout:\n%s", r.stderr, r.stdout)
	}
}
