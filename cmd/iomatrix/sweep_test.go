package main

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

func TestSweepBadInput(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	badYAML := filepath.Join(dir, "bad.yaml")
	testenv.Must(t, os.WriteFile(badYAML, []byte("name: x\npatterns:\n  - {block_size: 4k, read_pct: 50, queue_depth: 0}\n"), 0o644))
	notYAML := filepath.Join(dir, "broken.yaml")
	testenv.Must(t, os.WriteFile(notYAML, []byte("name: [\n"), 0o644))
	existing := filepath.Join(dir, "exists.json")
	testenv.Must(t, os.WriteFile(existing, []byte("{}"), 0o644))
	loads := filepath.Join(dir, "loads.yaml")
	testenv.Must(t, os.WriteFile(loads, []byte("name: x\npatterns:\n  - {block_size: 4k, read_pct: 100, queue_depth: 1, loads: 50%}\n"), 0o644))
	twoDocs := filepath.Join(dir, "two.yaml")
	testenv.Must(t, os.WriteFile(twoDocs, []byte("name: x\npatterns:\n  - {block_size: 4k, read_pct: 100, queue_depth: 1}\n---\nname: y\n"), 0o644))
	base := []string{"sweep", target, "--size", "16MiB", "--runtime", "100ms", "--ramp", "0s"}
	cases := []struct {
		name    string
		args    []string
		mention []string
	}{
		{"unknown profile", []string{"--profile", "fulll"}, []string{"fulll", "full", "quick", "cdm", "cdm-nvme", "jobs"}},
		{"missing profile file", []string{"--profile", filepath.Join(dir, "none.yaml")}, []string{"none.yaml"}},
		{"malformed profile", []string{"--profile", badYAML}, []string{"bad.yaml:3", "queue_depth"}},
		{"not YAML", []string{"--profile", notYAML}, []string{"broken.yaml"}},
		{"out in a missing directory", []string{"--out", filepath.Join(dir, "no", "r.json")}, []string{"--out", filepath.Join(dir, "no")}},
		{"out exists", []string{"--out", existing}, []string{"--out", "--resume"}},
		{"resume missing file", []string{"--resume", filepath.Join(dir, "gone.json")}, []string{"--resume", "gone.json"}},
		{"resume not a results file", []string{"--resume", existing}, []string{"--resume", "exists.json"}},
		{"bad format", []string{"--format", "yaml"}, []string{"--format"}},
		{"bad runtime", []string{"--runtime", "0s"}, []string{"--runtime"}},
		{"negative precondition", []string{"--precondition", "-1s"}, []string{"--precondition"}},
		// A load–latency sweep measures one shape: the full profile has
		// 137, and the refusal says how to give one.
		{"rates of many shapes", []string{"--rates", "10%,50%"}, []string{"--rates", "one shape, not 137 (profile full)", "--pattern"}},
		{"bad rates", []string{"--rates", "10%,fast", "--pattern", "randread:4k:8"}, []string{"--rates", `"fast"`}},
		{"rates over 100 %", []string{"--rates", "150%", "--pattern", "randread:4k:8"}, []string{"--rates", "150%"}},
		{"bad arrival", []string{"--rates", "10%", "--pattern", "randread:4k:8", "--arrival", "bursty"}, []string{"--arrival", "bursty", "poisson, uniform"}},
		{"arrival without rates", []string{"--arrival", "uniform"}, []string{"--arrival: only applies with --rates"}},
		{"pattern without rates", []string{"--pattern", "randread:4k:8"}, []string{"--pattern: only applies with --rates"}},
		{"bad pattern", []string{"--rates", "10%", "--pattern", "randread:4k"}, []string{"--pattern", "RW:BS:QD"}},
		{"NaN rate", []string{"--rates", "10%,NaN%", "--pattern", "randread:4k:8"}, []string{"--rates: NaN%"}},
		// An open loop's engine and window are judged from the plan, before
		// the target is laid out.
		{"rates and auto", []string{"--rates", "10%", "--pattern", "randread:4k:8", "--runtime", "auto"}, []string{"--runtime: an open-loop run has a fixed window"}},
		{"rates and psync", []string{"--rates", "10%", "--pattern", "randread:4k:8", "--engine", "psync"}, []string{"--engine: an open-loop run needs the uring engine"}},
		{"loads and psync", []string{"--profile", loads, "--engine", "psync"}, []string{"--engine: an open-loop run needs the uring engine"}},
		{"loads and auto", []string{"--profile", loads, "--runtime", "auto"}, []string{"--runtime: an open-loop run has a fixed window"}},
		{"two profiles in a file", []string{"--profile", twoDocs}, []string{"--profile: " + twoDocs + ":4: a second YAML document"}},
		// The profile's patterns are checked against the target: the one at
		// fault is named, with its field (the size is not the flag's fault).
		{"target too small for a pattern", []string{"--profile", "quick", "--size", "64k"},
			[]string{target + ": pattern seq-read-1m-qd8: block_size: target of 64KiB is smaller than 1MiB needed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runInProcess(append(append([]string{}, base...), c.args...)...)
			for _, m := range c.mention {
				checkRefused(t, r, m)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatal("target created")
			}
		})
	}
}

func TestSweepResumeRefusesOtherSettings(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	out := filepath.Join(dir, "r.json")
	r := runIomatrix(t, iomatrixCmd(t, "sweep", target, "--profile", "cdm", "--size", "32MiB", "--runtime", "100ms", "--ramp", "0s", "--out", out))
	if r.code != 0 {
		t.Fatalf("sweep: exit %d: %s", r.code, r.stderr)
	}
	before, _ := os.ReadFile(out)
	// The same sweep, as if it had run with --runtime auto and stopped
	// after two patterns.
	auto := filepath.Join(dir, "auto.json")
	ad := readDoc(t, out)
	ad.Settings.Auto = &results.AutoSettings{MinRuntimeNS: int64(3 * time.Second), MaxRuntimeNS: int64(20 * time.Second), PrecisionPct: 2}
	ad.Settings.RuntimeNS, ad.Results, ad.FinishedAt = int64(20*time.Second), ad.Results[:2], ""
	testenv.Must(t, results.WriteFileAtomic(auto, ad))
	autoBefore, _ := os.ReadFile(auto)
	other := filepath.Join(dir, "other.dat")
	for name, c := range map[string]struct {
		args    []string
		mention string
	}{
		"target":            {[]string{"sweep", other, "--resume", out}, "--resume: target " + other + " differs from the file's target " + target},
		"profile":           {[]string{"sweep", "--resume", out, "--profile", "quick"}, "--resume: profile quick differs from the file's profile cdm"},
		"size":              {[]string{"sweep", "--resume", out, "--size", "64MiB"}, "--resume: --size 64MiB differs from the file's size 32MiB"},
		"runtime":           {[]string{"sweep", "--resume", out, "--runtime", "1s"}, "--resume: --runtime 1s differs from the file's runtime 100ms"},
		"ramp":              {[]string{"sweep", "--resume", out, "--ramp", "1s"}, "--resume: --ramp 1s differs from the file's ramp 0s"},
		"auto for fixed":    {[]string{"sweep", "--resume", out, "--runtime", "auto"}, "--resume: --runtime auto differs from the file's runtime 100ms"},
		"fixed for auto":    {[]string{"sweep", "--resume", auto, "--runtime", "20s"}, "--resume: --runtime 20s differs from the file's runtime auto"},
		"other maximum":     {[]string{"sweep", "--resume", auto, "--max-runtime", "30s"}, "--resume: --max-runtime differs from the file's 20s"},
		"other precision":   {[]string{"sweep", "--resume", auto, "--runtime", "auto", "--precision", "1%"}, "--resume: --precision differs from the file's 2%"},
		"auto flags, fixed": {[]string{"sweep", "--resume", out, "--min-runtime", "5s"}, "--min-runtime: only applies with --runtime auto"},
	} {
		t.Run(name, func(t *testing.T) {
			checkRefused(t, runInProcess(c.args...), c.mention)
		})
	}
	after, _ := os.ReadFile(out)
	autoAfter, _ := os.ReadFile(auto)
	if string(before) != string(after) || string(autoBefore) != string(autoAfter) {
		t.Fatal("a refused resume changed the results file")
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatal("a refused resume created a target")
	}
	// A resume of a finished sweep runs nothing and keeps every result.
	r = runIomatrix(t, iomatrixCmd(t, "sweep", "--resume", out))
	doc := readDoc(t, out)
	if r.code != 0 || len(doc.Results) != 8 || doc.FinishedAt == "" {
		t.Fatalf("resume of a complete sweep: exit %d, %d results: %s", r.code, len(doc.Results), r.stderr)
	}
}

func readDoc(t *testing.T, path string) *results.Document {
	t.Helper()
	d, err := results.ReadDocumentFile(path)
	if err != nil {
		t.Fatalf("results file: %v", err)
	}
	return d
}

var controlSeq = regexp.MustCompile("[\x1b\r\b]")

func TestSweepInterruptAndResume(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	quick, err := profiles.Builtin("quick")
	if err != nil {
		t.Fatal(err)
	}
	// Lay the target out once so that the interruptions hit the sweep.
	if r := runIomatrix(t, iomatrixCmd(t, "run", target, "--size", "64MiB", "--runtime", "100ms", "--ramp", "0s")); r.code != 0 {
		t.Fatalf("layout: %s", r.stderr)
	}
	// Interrupted at once, in the middle and near the end of the sweep's
	// 14 patterns: once its file holds none, 6 and 11 results.
	for i, at := range []int{0, 6, 11} {
		out := filepath.Join(dir, "r"+strconv.Itoa(i)+".json")
		cmd := iomatrixCmd(t, "sweep", target, "--profile", "quick", "--runtime", "200ms", "--ramp", "0s", "--out", out)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitForResults(t, out, at)
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		if code != 130 {
			t.Fatalf("interrupt %d: exit %d (%v), want 130; stderr %s", i, code, err, stderr.String())
		}
		if controlSeq.MatchString(stdout.String() + stderr.String()) {
			t.Errorf("interrupt %d: control characters in piped output", i)
		}
		doc := readDoc(t, out)
		if doc.FinishedAt != "" || len(doc.Results) >= len(quick.Patterns) {
			t.Errorf("interrupt %d: finished_at %q with %d results", i, doc.FinishedAt, len(doc.Results))
		}
		if !strings.Contains(stdout.String(), "partial") {
			t.Errorf("interrupt %d: no partial matrix on stdout: %q", i, stdout.String())
		}
		t.Logf("interrupt %d after %d results: %d results saved", i, at, len(doc.Results))
		r := runIomatrix(t, iomatrixCmd(t, "sweep", "--resume", out))
		if r.code != 0 {
			t.Fatalf("resume %d: exit %d: %s", i, r.code, r.stderr)
		}
		doc = readDoc(t, out)
		seen := map[string]int{}
		for _, res := range doc.Results {
			seen[res.Name]++
		}
		for _, p := range quick.Patterns {
			if seen[p.Name()] != 1 {
				t.Errorf("resume %d: %s present %d times", i, p.Name(), seen[p.Name()])
			}
		}
		if len(doc.Results) != len(quick.Patterns) || doc.FinishedAt == "" {
			t.Errorf("resume %d: %d results, finished_at %q", i, len(doc.Results), doc.FinishedAt)
		}
	}
}

// kill -9 at any moment leaves the last good results file.
func TestSweepSurvivesSIGKILL(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	if r := runIomatrix(t, iomatrixCmd(t, "run", target, "--size", "32MiB", "--runtime", "100ms", "--ramp", "0s")); r.code != 0 {
		t.Fatalf("layout: %s", r.stderr)
	}
	finished := regexp.MustCompile(`^\[(\d+)/\d+\]`)
	for trial := range 8 {
		out := filepath.Join(dir, "k"+strconv.Itoa(trial)+".json")
		// Patterns of 20 ms: the file is rewritten every few tens of ms.
		cmd := iomatrixCmd(t, "sweep", target, "--profile", "full", "--runtime", "20ms", "--ramp", "0s", "--out", out)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan int, 1000)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if m := finished.FindStringSubmatch(sc.Text()); m != nil {
					n, _ := strconv.Atoi(m[1])
					lines <- n
				}
			}
			close(lines)
		}()
		waitForResults(t, out, 0)
		// sleep: kills at moments spread over the sweep's saves, wherever
		// they fall, are the test: none may leave a bad file.
		time.Sleep(time.Duration(trial*97) * time.Millisecond)
		cmd.Process.Kill()
		_ = cmd.Wait() // the exit status is read from ProcessState
		last := 0
		for n := range lines {
			last = n
		}
		doc := readDoc(t, out)
		// A save precedes its progress line, so the file holds every
		// reported pattern and at most the one whose line was cut off.
		if n := len(doc.Results); n < last || n > last+1 {
			t.Errorf("trial %d: %d results in the file, %d reported finished", trial, n, last)
		}
		t.Logf("trial %d: killed after %d patterns, file has %d", trial, last, len(doc.Results))
		// A resume of a killed sweep cleans its leftovers and carries on.
		if trial == 0 {
			r := runIomatrix(t, iomatrixCmd(t, "sweep", "--resume", out, "--format", "json"))
			if r.code != 0 {
				t.Fatalf("resume after kill: exit %d: %s", r.code, r.stderr)
			}
			if d, err := results.ReadDocument(strings.NewReader(r.stdout)); err != nil || len(d.Results) != 137 {
				t.Fatalf("resume after kill: %v", err)
			}
			if tmps, _ := filepath.Glob(filepath.Join(dir, ".k0.json.tmp-*")); len(tmps) != 0 {
				t.Errorf("temp files left: %v", tmps)
			}
		}
	}
}

func TestSweepPipedOutputIsPlain(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	r := runIomatrix(t, iomatrixCmd(t, "sweep", filepath.Join(dir, "t.dat"), "--profile", "cdm", "--size", "32MiB",
		"--runtime", "100ms", "--ramp", "0s", "--out", filepath.Join(dir, "r.json")))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if controlSeq.MatchString(r.stdout) || controlSeq.MatchString(r.stderr) {
		t.Errorf("control characters in piped output:\nstdout %q\nstderr %q", r.stdout, r.stderr)
	}
	if n := len(regexp.MustCompile(`(?m)^\[\d/8\] `).FindAllString(r.stderr, -1)); n != 8 {
		t.Errorf("want one line per finished pattern, stderr:\n%s", r.stderr)
	}
	for _, want := range []string{"random 4KiB IOPS", "QD1", "QD32", "sequential IOPS", "1M QD8", "1M QD1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("matrix lacks %q:\n%s", want, r.stdout)
		}
	}
	doc := readDoc(t, filepath.Join(dir, "r.json"))
	if len(doc.Results) != 8 || doc.Settings.Profile != "cdm" || doc.FinishedAt == "" {
		t.Errorf("results file: %d results, profile %q", len(doc.Results), doc.Settings.Profile)
	}
}

// sweep --rates measures its shape's maximum first, then each load as an
// open-loop result at a share of it; resumed, it keeps that maximum and
// refuses other loads.
func TestSweepRates(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	out := filepath.Join(dir, "r.json")
	r := runIomatrix(t, iomatrixCmd(t, "sweep", target, "--size", "32MiB", "--runtime", "300ms", "--ramp", "0s", "--out", out,
		"--pattern", "randread:4k:4", "--rates", "25%,50%,500", "--arrival", "uniform"))
	if r.code != 0 {
		t.Fatalf("sweep: exit %d: %s", r.code, r.stderr)
	}
	doc := readDoc(t, out)
	rs := doc.Settings.RateSweep
	if rs == nil || rs.Rates != "25%,50%,500" || rs.Arrival != "uniform" || rs.Shape.Name() != "rand-4k-r100-qd4" || doc.Settings.Profile != "rates" {
		t.Fatalf("settings %+v", doc.Settings)
	}
	if len(doc.Results) != 4 || doc.Results[0].Name != "rand-4k-r100-qd4" || doc.Results[0].Rate != nil {
		t.Fatalf("%d results, first %s: want the closed-loop maximum first, then 3 loads", len(doc.Results), doc.Results[0].Name)
	}
	max := doc.Results[0].Total.IOPS
	for i, want := range []float64{math.Round(max / 4), math.Round(max / 2), 500} {
		res := doc.Results[i+1]
		if res.Pattern.Rate.IOPS != want || res.Pattern.Rate.Arrival != "uniform" || res.Rate == nil || res.Rate.TargetIOPS != want {
			t.Errorf("load %d: %s, rate %+v, stats %+v: want %v IOPS offered, uniform", i, res.Name, res.Pattern.Rate, res.Rate, want)
		}
	}
	if !strings.Contains(r.stdout, "load–latency rand-4k-r100-qd4, uniform arrivals") || !strings.Contains(r.stdout, "knee") {
		t.Errorf("no load–latency table on stdout:\n%s", r.stdout)
	}
	before, _ := os.ReadFile(out)
	for _, c := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--rates", "10%"}, "--resume: --rates 10% differs from the file's rates 25%,50%,500"},
		{[]string{"--arrival", "poisson"}, "--resume: --arrival poisson differs from the file's arrival uniform"},
		{[]string{"--pattern", "randread:4k:8"}, "--resume: --pattern rand-4k-r100-qd8 differs from the file's pattern rand-4k-r100-qd4"},
	} {
		checkRefused(t, runInProcess(append([]string{"sweep", "--resume", out}, c.args...)...), c.mention)
	}
	if after, _ := os.ReadFile(out); string(after) != string(before) {
		t.Fatal("a refused resume changed the results file")
	}
	// Cut after the first load: the resumed sweep measures the other two
	// at the shares of the maximum on file.
	doc.Results, doc.FinishedAt = doc.Results[:2], ""
	testenv.Must(t, results.WriteFileAtomic(out, doc))
	if r := runIomatrix(t, iomatrixCmd(t, "sweep", "--resume", out, "--rates", "25%,50%,500")); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	doc = readDoc(t, out)
	if len(doc.Results) != 4 || doc.Results[2].Pattern.Rate.IOPS != math.Round(max/2) || doc.FinishedAt == "" {
		t.Errorf("resumed: %d results, third %s", len(doc.Results), doc.Results[2].Name)
	}
	// And a profile sweep's file is no load–latency sweep.
	plain := filepath.Join(dir, "plain.json")
	if r := runIomatrix(t, iomatrixCmd(t, "sweep", target, "--profile", "cdm", "--runtime", "100ms", "--ramp", "0s", "--out", plain)); r.code != 0 {
		t.Fatalf("cdm sweep: %s", r.stderr)
	}
	checkRefused(t, runInProcess("sweep", "--resume", plain, "--rates", "10%"), "--resume: --rates differs from the file's sweep of a profile")
}

// A profile's open-loop loads (loads: on a pattern): each measured after
// the sweep's closed-loop cells, at its share of the IOPS its own cell
// measured in the same sweep; a resume of the finished file has nothing
// left to do.
func TestSweepProfileLoads(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.yaml")
	testenv.Must(t, os.WriteFile(prof, []byte(`name: loaded
patterns:
  - {access: random, block_size: 4k, read_pct: 100, queue_depth: 4, loads: "50%,80%"}
  - {access: sequential, block_size: 64k, read_pct: 100, queue_depth: 2}
`), 0o644))
	target, out := filepath.Join(dir, "t.dat"), filepath.Join(dir, "r.json")
	r := runIomatrix(t, iomatrixCmd(t, "sweep", target, "--profile", prof, "--size", "32MiB", "--runtime", "300ms", "--ramp", "0s", "--out", out))
	if r.code != 0 {
		t.Fatalf("sweep: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "4 of 4 patterns to run") {
		t.Errorf("the plan does not count the loads: %s", r.stderr)
	}
	if !strings.Contains(r.stdout, "load–latency rand-4k-r100-qd4, poisson arrivals") {
		t.Errorf("no load–latency table for the loads:\n%s", r.stdout)
	}
	doc := readDoc(t, out)
	if len(doc.Results) != 4 || doc.Results[0].Name != "rand-4k-r100-qd4" || doc.Results[1].Name != "seq-read-64k-qd2" {
		t.Fatalf("%d results (%v): want both closed-loop cells, then two loads", len(doc.Results), names(doc))
	}
	max := doc.Results[0].Total.IOPS
	for i, share := range []float64{0.5, 0.8} {
		res := doc.Results[2+i]
		if want := math.Round(max * share); res.Pattern.Rate.IOPS != want || res.Pattern.Rate.Arrival != "poisson" || res.Rate == nil {
			t.Errorf("load %d: %s at %v IOPS (%+v), want %v of %v, poisson", i, res.Name, res.Pattern.Rate.IOPS, res.Rate, want, max)
		}
	}
	r = runIomatrix(t, iomatrixCmd(t, "sweep", "--resume", out))
	if r.code != 0 || len(readDoc(t, out).Results) != 4 || !strings.Contains(r.stderr, "0 of 4 patterns to run") {
		t.Errorf("resume of a finished sweep: exit %d, %d results: %s", r.code, len(readDoc(t, out).Results), r.stderr)
	}
	// Its cells ran without a ring mode: a resume may not add one.
	if r := runInProcess("sweep", "--resume", out, "--sqpoll"); r.code != exitUsage || !strings.Contains(r.stderr, "engine options") {
		t.Errorf("resume with --sqpoll: exit %d, %s", r.code, r.stderr)
	}
}

func names(d *results.Document) []string {
	var out []string
	for _, r := range d.Results {
		out = append(out, r.Name)
	}
	return out
}
