package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

func TestSweepSentinelsBadInput(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	base := []string{"sweep", target, "--size", "16MiB", "--runtime", "100ms", "--ramp", "0s", "--profile", "cdm"}
	for _, c := range []struct {
		name    string
		args    []string
		mention string
	}{
		{"bad sentinel", []string{"--sentinel", "randread:4k"}, "--sentinel: \"randread:4k\""},
		{"zero interval", []string{"--sentinel-every", "0s"}, "--sentinel-every: 0s must be positive"},
		{"negative interval", []string{"--sentinel-every", "-1m"}, "--sentinel-every: -1m0s must be positive"},
		{"bad action", []string{"--on-drift", "panic"}, "--on-drift"},
		{"off and asked", []string{"--no-sentinels", "--on-drift", "stop"}, "--on-drift: not with --no-sentinels"},
		{"off and a pattern", []string{"--no-sentinels", "--sentinel", "randread:4k:32"}, "--sentinel: not with --no-sentinels"},
		// The sentinel is held to the target as the profile's patterns are.
		{"sentinel larger than the target", []string{"--sentinel", "randread:32m:1"}, "pattern rand-32m-r100-qd1: block_size: target of 16MiB is smaller than 32MiB needed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, runInProcess(append(append([]string{}, base...), c.args...)...), c.mention)
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatal("target created")
			}
		})
	}
}

// A sweep whose device halves its rate midway (a volume of 1,000 IOPS
// that the test turns into one of 500 once seven cells are saved; cells
// of 1 s after a ramp of 250 ms, which keeps each run's first second
// from the ring's start, a sentinel every 4 s): with
// --on-drift stop the sweep stops at the first sentinel run after the
// change, exit status 3, resumable; resumed with --on-drift rerun, the
// cells of the interval in which the device changed are measured again
// once two runs agree, so that every cell measured after the change is
// marked and none measured before it, and the change is reported between
// two consecutive runs: within one sentinel interval. A run whose I/O
// waited for a CPU long enough to explain a difference is not judged
// (the machine, not the device, may have slowed it), and runs whose
// seconds scatter so that a change must exceed 40 % cannot see a halving
// (with busy loops on both CPUs and the race detector, a volume of 2,000
// IOPS served from this process gave 1,486, a change then needing 68 %;
// beside the capped sweep of TestSweepSentinelsNoFalseAlarm, one run in
// five or so asks 40 to 70 %): the sweep is then tried again, three
// times at most, as the cap tests do.
func TestSweepDriftMarked(t *testing.T) {
	testenv.Root(t)
	t.Parallel()
	for try := 1; ; try++ {
		why := driftSweep(t)
		if why == "" {
			return
		}
		t.Logf("try %d: not judged: %s", try, why)
		if try == 3 {
			return // judged so each time, as the rule wants
		}
	}
}

// starvedRun is why the runs of doc's sentinels could not see a halving:
// one was not judged for a wait for a CPU, or one's scatter asked more
// than 40 % of a change; "" when none.
func starvedRun(doc *results.Document) string {
	for i, r := range doc.Sentinels.Runs {
		switch {
		case strings.Contains(r.Unjudged, "CPU"):
			return fmt.Sprintf("run %d (%s IOPS, %s): %s", i+1, report.FormatValue(report.IOPS, r.Total.IOPS), cpuWaitPct(r.Result), r.Unjudged)
		case r.ThresholdPct > 40:
			return fmt.Sprintf("run %d (%s IOPS, rounds %v): a change would need %.1f %%", i+1, report.FormatValue(report.IOPS, r.Total.IOPS), r.TimelineIOPS, r.ThresholdPct)
		}
	}
	return ""
}

// cpuWaitPct is the share of a run's window its I/O may have waited for
// a CPU, and its own I/O threads did, in words.
func cpuWaitPct(r results.Result) string {
	w := time.Duration(r.DurationNS)
	own := 0.0
	if r.CPUWait != nil {
		own = float64(r.CPUWait.IOThreadsNS) / float64(w)
	}
	return fmt.Sprintf("waited %.0f %% of its window for a CPU (its own threads %.0f %%)", 100*float64(r.CPUWait.Wait(w))/float64(w), 100*own)
}

// driftSweep is one sweep of TestSweepDriftMarked; it returns why its
// runs could not be judged, "" when they were (and held to the test).
func driftSweep(t *testing.T) string {
	disk, dev := testenv.CapacityLoop(t, testenv.CapacityOptions{IOPS: 1000, Size: 256 << 20})
	out := filepath.Join(t.TempDir(), "drift.json")
	cmd := iomatrixCmd(t, "sweep", dev, "--allow-destructive", "--profile", "quick", "--runtime", "1s", "--ramp", "250ms",
		"--sentinel-every", "4s", "--on-drift", "stop", "--out", out)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	testenv.Must(t, cmd.Start())
	waitForResults(t, out, 7)
	disk.SetLimit(500, 0)
	change := time.Now()
	err := cmd.Wait()
	if why := starvedRun(readDoc(t, out)); why != "" {
		return why
	}
	if code := cmd.ProcessState.ExitCode(); code != exitInconclusive || !strings.Contains(stderr.String(), "the device changed") ||
		!strings.Contains(stderr.String(), "--resume "+out) {
		t.Fatalf("stop: exit %d (%v), want 3 naming the change and the resume:\n%s", code, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "DEVICE CHANGED") || !strings.Contains(stdout.String(), "partial") {
		t.Errorf("the progress or the report does not say so:\n%s\n%s", stderr.String(), stdout.String())
	}
	stopped := readDoc(t, out)
	if stopped.FinishedAt != "" || len(stopped.Results) >= 14 {
		t.Fatalf("stopped with %d results, finished %q", len(stopped.Results), stopped.FinishedAt)
	}
	// As marked then (as --on-drift mark leaves them): every cell after
	// the change, and the cells of its interval measured before it, which
	// the runs cannot tell from the others.
	early := 0
	for _, res := range stopped.Results {
		switch m, end := res.DeviceChanged, windowEndOf(t, res); {
		case end.Before(change) && m != nil && m.InShift:
			early++
		case end.Before(change) && m != nil, !end.Before(change) && m == nil:
			t.Errorf("stopped: %s (ended %s, change %s) marked %+v", res.Name, end, change, m)
		}
	}
	t.Logf("stopped after %d cells; %d measured before the change marked in_shift", len(stopped.Results), early)
	r := runIomatrix(t, iomatrixCmd(t, "sweep", "--resume", out, "--allow-destructive", "--on-drift", "rerun"))
	if r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	doc := readDoc(t, out)
	if why := starvedRun(doc); why != "" {
		return why
	}
	s := doc.Sentinels
	if doc.FinishedAt == "" || len(doc.Results) != 14 || s == nil || s.OnDrift != results.DriftRerun || len(s.Replaced) == 0 {
		t.Fatalf("resumed: %d results, finished %q, sentinels %v", len(doc.Results), doc.FinishedAt, s != nil)
	}
	for _, run := range s.Runs {
		t.Logf("run at %s: %s IOPS, %s, %s", run.StartedAt, report.FormatValue(report.IOPS, run.Total.IOPS), cpuWaitPct(run.Result), run.Level)
	}
	// Every cell of the matrix, measured before the change or after it.
	for _, res := range doc.Results {
		end := windowEndOf(t, res)
		start := end.Add(-time.Duration(res.DurationNS + res.RampNS))
		m := res.DeviceChanged
		switch {
		case m != nil && m.InShift:
			t.Errorf("%s left marked in the interval of the change", res.Name)
		case end.Before(change) && m != nil:
			t.Errorf("%s measured before the change (ended %s, change %s), marked", res.Name, end, change)
		case !end.Before(change) && m == nil:
			t.Errorf("%s measured after the change (%s to %s, change %s), not marked", res.Name, start, end, change)
		}
	}
	if len(s.Changes) != 1 {
		t.Fatalf("changes %+v, want one", s.Changes)
	}
	sh := s.Changes[0]
	after, _ := time.Parse(time.RFC3339Nano, sh.After)
	before, _ := time.Parse(time.RFC3339Nano, sh.Before)
	if sh.Back || sh.ToRun != sh.FromRun+1 || change.Before(after) || change.After(before) || sh.ChangePct > -40 || sh.ChangePct < -60 {
		t.Errorf("change at %s reported as %+v", change, sh)
	}
	t.Logf("changed at %s; reported between %s and %s (%s), %+.1f %%; %d cells measured again",
		change.UTC().Format("15:04:05.000"), after.Format("15:04:05.000"), before.Format("15:04:05.000"), before.Sub(after).Round(time.Millisecond),
		sh.ChangePct, len(s.Replaced))
	if !strings.Contains(r.stdout, report.ChangedNote) || !strings.Contains(r.stdout, "device changed between") {
		t.Errorf("the report does not mark the cells:\n%s", r.stdout)
	}
	return ""
}

// windowEndOf is when a result's window ended.
func windowEndOf(t *testing.T, r results.Result) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, r.StartedAt)
	testenv.Must(t, err)
	return at.Add(time.Duration(r.DurationNS))
}

// No false alarm: sweeps of the quick profile on a capped RAM disk, whose
// every second is the cap's, find no change (IOMATRIX_SENTINEL_SWEEPS sets
// how many, one in CI; a run every 8 s: three a sweep).
func TestSweepSentinelsNoFalseAlarm(t *testing.T) {
	c := capController(t)
	t.Parallel()
	n := 1
	if v := os.Getenv("IOMATRIX_SENTINEL_SWEEPS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		testenv.Must(t, err)
	}
	loop := testenv.RAMDisk(t, 256<<20)
	dir := t.TempDir()
	lo, hi, runs, starved := 0.0, 0.0, 0, 0
	for i := range n {
		out := filepath.Join(dir, fmt.Sprintf("steady%d.json", i))
		r := runCounted(t, c, "sweep", loop, "--allow-destructive", "--profile", "quick", "--runtime", "1s", "--ramp", "0s",
			"--cap", "riops=2000,wiops=2000", "--sentinel-every", "8s", "--out", out)
		if r.code != 0 {
			t.Fatalf("sweep %d: exit %d: %s", i, r.code, r.stderr)
		}
		doc := readDoc(t, out)
		s := doc.Sentinels
		if s == nil || len(s.Runs) < 3 {
			t.Fatalf("sweep %d: too few sentinel runs to judge: %v", i, s)
		}
		for _, run := range s.Runs[1:] {
			switch {
			case run.Level == results.LevelUnknown && strings.Contains(run.Unjudged, "CPU"):
				// The machine, not the device, may have slowed it: no
				// verdict, which is no false alarm.
				t.Logf("sweep %d: run at %s not judged (%+.2f %%): %s", i, run.StartedAt, run.ChangePct, run.Unjudged)
				starved++
			case run.Level != results.LevelSame:
				t.Errorf("sweep %d: run at %s: %s (%+.2f %%, threshold %.1f %%) %s", i, run.StartedAt, run.Level, run.ChangePct, run.ThresholdPct, run.Unjudged)
			default:
				lo, hi, runs = min(lo, run.ChangePct), max(hi, run.ChangePct), runs+1
			}
			if math.Abs(run.ChangePct) >= 10 {
				t.Logf("sweep %d: run at %s %+.2f %% (threshold %.1f %%), rounds %v against %v, %s; the reference %s", i, run.StartedAt, run.ChangePct,
					run.ThresholdPct, run.TimelineIOPS, s.Runs[0].TimelineIOPS, cpuWaitPct(run.Result), cpuWaitPct(s.Runs[0].Result))
			}
		}
		for _, res := range doc.Results {
			if res.DeviceChanged != nil {
				t.Errorf("sweep %d: %s marked device_changed", i, res.Name)
			}
		}
		if len(s.Changes) != 0 || strings.Contains(r.stdout, report.ChangedMark+" device changed") {
			t.Errorf("sweep %d: changes %+v", i, s.Changes)
		}
	}
	t.Logf("%d sweeps, %d runs judged against their reference: %+.2f %% to %+.2f %%; %d not judged, their I/O starved of a CPU", n, runs, lo, hi, starved)
}
