package rehearse

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

func workload(t *testing.T, yaml string) fit.Workload {
	t.Helper()
	w, err := fit.ParseWorkload("w.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Each system is a stream of its own: its rates per direction, its block
// size, its concurrency (or the default) as the most in flight, and a
// read share that says whether it reads and writes at all.
func TestPatterns(t *testing.T) {
	w := workload(t, `systems:
  - {name: erp, reads: 4000, writes: 1000, block_size: 8k, concurrency: 16}
  - {name: log, writes: 500, block_size: 4k}
  - {name: olap, reads: 999, writes: 1, block_size: 16k}
`)
	ps := Patterns(w, results.ArrivalUniform)
	want := []results.Pattern{
		{Access: results.Random, BlockSize: 8192, ReadPct: 80, QueueDepth: 16, Jobs: 1, Rate: results.Rate{ReadIOPS: 4000, WriteIOPS: 1000, Arrival: "uniform"}},
		{Access: results.Random, BlockSize: 4096, ReadPct: 0, QueueDepth: DefaultQueueDepth, Jobs: 1, Rate: results.Rate{WriteIOPS: 500, Arrival: "uniform"}},
		{Access: results.Random, BlockSize: 16384, ReadPct: 99, QueueDepth: DefaultQueueDepth, Jobs: 1, Rate: results.Rate{ReadIOPS: 999, WriteIOPS: 1, Arrival: "uniform"}},
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("system %d: %+v, want %+v", i, ps[i], want[i])
		}
	}
}

// The default window lets every percentile bound rest on enough I/Os: a
// p99.9 needs 10,000, which at 100 IOPS takes 100 s; never under the
// minimum, never over the maximum.
func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want time.Duration
	}{
		{"systems:\n  - {name: a, reads: 100, block_size: 4k}\n", MinWindow},
		{"systems:\n  - {name: a, reads: 100000, block_size: 4k, latency: \"p99<1ms\"}\n", MinWindow},
		{"systems:\n  - {name: a, reads: 100000, block_size: 4k}\n  - {name: b, reads: 60, writes: 40, block_size: 4k, latency: \"p99.9<1ms\"}\n", 100 * time.Second},
		{"systems:\n  - {name: a, reads: 10, block_size: 4k, latency: \"p99.9<1ms\"}\n", MaxWindow},
		{"systems:\n  - {name: a, reads: 10, block_size: 4k, latency: \"mean<1ms\"}\n", MinWindow},
	} {
		if got := Window(workload(t, tc.yaml)); got != tc.want {
			t.Errorf("%s: window %s, want %s", tc.yaml, got, tc.want)
		}
	}
}

// The caps are sizing's shares: each direction its need and a quarter
// of the 500 IOPS of room, a direction a system does not use included.
func TestLimits(t *testing.T) {
	w := workload(t, "systems:\n  - {name: a, reads: 300, writes: 100, block_size: 4k}\n  - {name: b, reads: 100, block_size: 4k}\n")
	ls := Limits(w, fit.Verdict{IOPS: 1000, Fits: true})
	if ls[0].ReadIOPS != 425 || ls[0].WriteIOPS != 225 || ls[1].ReadIOPS != 225 || ls[1].WriteIOPS != 125 {
		t.Errorf("limits %+v", ls)
	}
}

// rated is a rehearsed system's result: its schedule and what it
// achieved, and a response time whose p99 is p99us over ios I/Os.
func rated(scheduled, achieved float64, sustained bool, ios uint64, p99us uint64) results.Result {
	lat := &results.Latency{P50: 100_000, P99: p99us * 1000, Count: ios}
	r := results.Result{Name: "erp", Total: results.Total{IOs: ios, IOPS: achieved, ResponseLatNS: lat,
		LatNS: &results.Latency{P99: 50_000, Count: ios}}}
	r.Rate = &results.RateStats{Arrival: "uniform", TargetIOPS: scheduled, ScheduledIOPS: scheduled, AchievedIOPS: achieved, Sustained: sustained, MaxBacklog: 7}
	return r
}

// A system fits when its stream kept its schedule (sustained, within 1 %)
// and its response time, not its service time, holds each bound on
// enough I/Os; each failure says why.
func TestJudge(t *testing.T) {
	w := workload(t, `systems:
  - {name: erp, reads: 4000, writes: 1000, block_size: 8k, latency: "p99<2ms"}
  - {name: web, reads: 4000, writes: 1000, block_size: 8k}
`)
	erp, web := w.Systems[0], w.Systems[1]
	for _, tc := range []struct {
		name string
		sys  fit.Need
		res  results.Result
		fits bool
		why  string
	}{
		{"kept", erp, rated(5000, 4990, true, 200_000, 1500), true, ""},
		{"not sustained", erp, rated(5000, 3000, false, 200_000, 1500), false, "rate not sustained: 3,000 IOPS achieved of 5,000 scheduled, a backlog of up to 7"},
		{"sustained but 2 % short", erp, rated(5000, 4900, true, 200_000, 1500), false, "-2.00 % from its schedule's 5,000"},
		// The service p99 is 50 µs: only the response time shows the wait.
		{"response over the bound", erp, rated(5000, 5000, true, 200_000, 2500), false, "p99 response 2,500 µs, not below 2ms"},
		{"too few I/Os to prove it", erp, rated(5000, 5000, true, 500, 1500), false, "p99 response rests on too few I/Os (500) to prove p99<2ms"},
		{"too few I/Os, no bound", web, rated(5000, 5000, true, 500, 9000), true, ""},
		{"closed loop", erp, results.Result{Name: "erp", Total: results.Total{IOs: 1, IOPS: 5000}}, false, "no schedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Judge(tc.sys, tc.res)
			if s.Fits != tc.fits || !strings.Contains(s.Why, tc.why) {
				t.Errorf("fits %v, why %q; want %v, %q", s.Fits, s.Why, tc.fits, tc.why)
			}
			if tc.res.Rate != nil && s.ResponseP99US != float64(tc.res.Total.ResponseLatNS.P99)/1000 {
				t.Errorf("p99 response %v µs, want the response time's", s.ResponseP99US)
			}
		})
	}
	// A system that does not fit while its I/O waited for a CPU, others
	// holding them, for 5 % of the window or more, long enough to explain
	// every failure, is inconclusive: the CPUs may have held it back.
	// Below that, or when it fits, the wait is only recorded. In a window
	// of 10 s: 45 % is 4.5 s, and 3,000 I/Os a second in 5.5 s are 5,455
	// in the whole window; 5 % is 0.5 s, 3,158 a second.
	starved := func(r results.Result, pct float64) results.Result {
		r.CPUWait, r.DurationNS = &results.CPUWait{Pct: pct}, int64(10*time.Second)
		return r
	}
	for _, tc := range []struct {
		res                results.Result
		fits, inconclusive bool
	}{
		{starved(rated(5000, 5000, true, 200_000, 2500), 12), false, true},
		{starved(rated(5000, 3000, false, 200_000, 1500), 45), false, true},
		{starved(rated(5000, 3000, false, 200_000, 1500), 5), false, false},      // the wait explains 3,158 a second
		{starved(rated(5000, 5000, true, 200_000, 1_500_000), 12), false, false}, // 1.5 s over the bound, 1.2 s of wait
		{starved(rated(5000, 5000, true, 500, 1500), 50), false, false},          // too few I/Os: not the CPU's
		{starved(rated(5000, 5000, true, 200_000, 2500), 4.9), false, false},
		{starved(rated(5000, 4990, true, 200_000, 1500), 30), true, false},
	} {
		s := Judge(erp, tc.res)
		if s.Fits != tc.fits || s.Inconclusive != tc.inconclusive || s.CPUWaitPct != tc.res.CPUWait.Pct ||
			tc.inconclusive != strings.HasPrefix(s.Why, "its I/O waited for a CPU") {
			t.Errorf("CPU wait %v %%: fits %v, inconclusive %v, why %q", tc.res.CPUWait.Pct, s.Fits, s.Inconclusive, s.Why)
		}
	}
	// A lookup's cell that waited for a CPU as long does not confirm a
	// starved rehearsal: its own figures are the busy machine's too. The
	// wait is its threads' sum, at most the CPU time others took.
	cell := func(ioNS, othersNS int64) results.Result {
		return results.Result{DurationNS: int64(2 * time.Second), CPUWait: &results.CPUWait{IOThreadsNS: ioNS, OthersNS: &othersNS}}
	}
	for _, c := range []struct {
		r       results.Result
		starved bool
	}{
		{results.Result{DurationNS: int64(2 * time.Second)}, false},
		{cell(int64(50*time.Millisecond), int64(time.Second)), false},
		{cell(int64(100*time.Millisecond), int64(time.Second)), true},
		{cell(int64(time.Second), int64(90*time.Millisecond)), false}, // others ran 90 ms: the rest was the I/O's own path
	} {
		if got := cellStarved(c.r); got != c.starved {
			t.Errorf("cell waiting %+v: starved %v, want %v", c.r.CPUWait, got, c.starved)
		}
	}
}

// Plan touches nothing and decides what was left open: the window from
// the workload, a random seed, a results file named from the time, no
// caps when the lookup proposes none; a stream the target cannot hold
// is bad input of the target, a window given as 0 is the engine's
// runtime field at fault, and a results file that could not be saved is
// bad input of the out option.
func TestPlan(t *testing.T) {
	w := workload(t, `systems:
  - {name: erp, reads: 4000, writes: 1000, block_size: 8k, latency: "p99.9<2ms"}
  - {name: web, reads: 100, block_size: 64k}
`)
	path := filepath.Join(t.TempDir(), "t.dat")
	var notices []string
	r := Request{Sys: sysfs.Default(), Target: path, Size: 1 << 20, Workload: w, Arrival: results.ArrivalPoisson, WithCaps: true,
		Lookup: fit.Verdict{Fits: false}, Options: iotest.Options{Ramp: time.Second, Seed: 7, Engine: iotest.EngineUring}, DefaultWindow: true,
		Notice: func(s string) { notices = append(notices, s) }}
	if os.Geteuid() != 0 {
		// Caps need root, whatever the lookup proposes.
		var pe *fault.PrivilegeError
		if _, err := Plan(r); !errors.As(err, &pe) || !strings.Contains(err.Error(), "with-caps needs root") {
			t.Errorf("caps without root: %v", err)
		}
		r.WithCaps = false
	}
	c, err := Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	plan := c.TargetPlan
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s was created", path)
	}
	if plan.Path != path || plan.Size != 1<<20 || c.Options.Runtime != Window(w) || c.Options.Seed != 7 || c.Caps != nil ||
		!strings.HasPrefix(c.Out, "iomatrix-rehearsal-") || len(c.Patterns) != 2 || c.Patterns[0].Rate.Arrival != results.ArrivalPoisson {
		t.Errorf("plan %+v, config %+v", plan, c)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	r.Options.Runtime, r.DefaultWindow, r.RandomSeed, r.Out = 3*time.Second, false, true, out
	if c, err = Plan(r); err != nil || c.Options.Runtime != 3*time.Second || c.Options.Seed == 7 || c.Out != out {
		t.Errorf("runtime, seed and out given: %+v, %v", c, err)
	}
	r.Size = 32 << 10
	_, err = Plan(r)
	var ie *fault.InputError
	if !errors.As(err, &ie) || ie.Option != "target" || !pattern.IsField(err, "block_size") || !strings.Contains(err.Error(), "pattern rand-64k") {
		t.Errorf("a target smaller than a block: %v", err)
	}
	r.Size, r.Options.Engine = 1<<20, "aio"
	if _, err = Plan(r); !pattern.IsField(err, "engine") || errors.As(err, &ie) {
		t.Errorf("engine aio: %v", err)
	}
	// The open loop's engine is the engine's fault, not the target's.
	r.Options.Engine = iotest.EnginePsync
	if _, err = Plan(r); !pattern.IsField(err, "engine") || errors.As(err, &ie) {
		t.Errorf("engine psync: %v", err)
	}
	r.Options.Engine, r.Options.Runtime = iotest.EngineUring, 0
	if _, err = Plan(r); !pattern.IsField(err, "runtime") || err.Error() != "runtime: 0s must be positive" {
		t.Errorf("runtime 0: %v", err)
	}
	r.Options.Runtime, r.Out = time.Second, filepath.Join(t.TempDir(), "no", "r.json")
	if _, err = Plan(r); !errors.As(err, &ie) || ie.Option != "out" || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("out in a directory that does not exist: %v", err)
	}
	if len(notices) != 0 {
		t.Errorf("notices %q", notices)
	}
}
