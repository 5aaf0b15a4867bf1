package iotest

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// The engine's side of an auto window, with a scripted rule so that the
// device's noise cannot decide the outcome: rounds are sealed by every
// stream and read while the run goes on, a restart moves the window's
// start to a later round and drops what came before, a converged window
// ends at once, and the result records all of it consistently.

// scriptedRule shifts once, after the first two rounds of the first
// window, then is steady with a 0.5 % interval.
func scriptedRule(t *testing.T, rule func(s *stopper) judgement) {
	saved := roundRule
	roundRule = rule
	t.Cleanup(func() { roundRule = saved })
}

func TestRunAutoWindow(t *testing.T) {
	testenv.Root(t)
	dir := testenv.DirectIODir(t)
	scriptedRule(t, func(s *stopper) judgement {
		if len(s.rounds) == 2 && s.restarts == 0 {
			return judgement{shift: true, ci: 0.005}
		}
		return judgement{steady: true, ci: 0.005}
	})
	for _, eng := range engines(t) {
		t.Run(eng, func(t *testing.T) {
			t.Parallel()
			checkAutoWindow(t, dir, eng)
		})
	}
}

func checkAutoWindow(t *testing.T, dir, eng string) {
	{
		path := filepath.Join(dir, eng+".dat")
		tg := openPlan(t, path, target.Options{Size: 64 << 20, Writes: true})
		p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 4, Jobs: 2}
		auto := &Auto{MaxRuntime: 20 * time.Second, Precision: 0.02}
		ramp := 300 * time.Millisecond
		began := time.Now()
		r, err := Run(context.Background(), tg, p, Options{Auto: auto, Ramp: ramp, Seed: 1, Engine: eng})
		took := time.Since(began)
		if err != nil {
			t.Fatalf("%s: %v", eng, err)
		}
		// 2 rounds, then the round in progress, then 5 rounds.
		t.Logf("%s: %s, %d rounds, %d restarts, ramp %s, window %s, wall %s", eng, r.Stop, r.Rounds, r.Restarts,
			time.Duration(r.RampNS), time.Duration(r.DurationNS), took)
		if r.Stop != results.StopConverged || r.Rounds != SteadyWindow || r.Restarts != 1 {
			t.Fatalf("%s: stop %q after %d rounds, %d restarts; want converged after %d, 1 restart", eng, r.Stop, r.Rounds, r.Restarts, SteadyWindow)
		}
		if r.CIPct == nil || *r.CIPct != 0.5 {
			t.Errorf("%s: ci_pct %v, want the rule's 0.5", eng, r.CIPct)
		}
		if want := ramp + 3*time.Second; time.Duration(r.RampNS) != want {
			t.Errorf("%s: ramp %s, want %s: the two rounds before the restart and the one in progress are ramp", eng, time.Duration(r.RampNS), want)
		}
		if d := time.Duration(r.DurationNS); d < 5*time.Second || d > 5*time.Second+500*time.Millisecond {
			t.Errorf("%s: window %s, want just over the 5 rounds it converged on", eng, d)
		}
		// Only the new window is counted: its whole rounds and what came
		// after the last one until the end.
		var sum float64
		for _, v := range r.TimelineIOPS[:r.Rounds] {
			if v <= 0 {
				t.Fatalf("%s: timeline %v has an empty round", eng, r.TimelineIOPS)
			}
			sum += v
		}
		if float64(r.Total.IOs) < sum || float64(r.Total.IOs) > sum*1.07 {
			t.Errorf("%s: %d I/Os in the window, its 5 rounds hold %.0f", eng, r.Total.IOs, sum)
		}
		if r.Total.LatNS == nil || r.Total.LatNS.Count != r.Total.IOs {
			t.Errorf("%s: latency rests on %v I/Os, the window has %d", eng, r.Total.LatNS, r.Total.IOs)
		}
		// What came before the window is dropped from its figures, not from
		// the I/Os completed: 3.3 s of them against the window's 5 s (at
		// whatever rate a shared disk gave then, hence the wide margin),
		// and every I/O submitted was completed.
		n := r.Completed.Reads + r.Completed.Writes
		if n < r.Total.IOs+r.Total.IOs/10 || r.Completed != r.Submitted {
			t.Errorf("%s: %d completed in all (%+v submitted), %d in the window: the dropped rounds went missing from the completed count",
				eng, n, r.Submitted, r.Total.IOs)
		}
	}
}

func TestRunAutoMaxRuntime(t *testing.T) {
	testenv.Root(t)
	dir := testenv.DirectIODir(t)
	scriptedRule(t, func(*stopper) judgement { return judgement{ci: math.Inf(1)} })
	tg := openPlan(t, filepath.Join(dir, "max.dat"), target.Options{Size: 64 << 20})
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 2, Jobs: 1}
	r, err := Run(context.Background(), tg, p, Options{Auto: &Auto{MaxRuntime: 5 * time.Second, Precision: 0.02}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != results.StopMaxRuntime || r.Rounds != 5 || time.Duration(r.DurationNS) != 5*time.Second {
		t.Fatalf("stop %q after %d rounds in %s; want max-runtime after 5 in 5s", r.Stop, r.Rounds, time.Duration(r.DurationNS))
	}
	// Its precision is still stated: the real rule's, on its rounds.
	want := ciPct(judge(r.TimelineIOPS[:5]).ci)
	if (want == nil) != (r.CIPct == nil) || (want != nil && *r.CIPct != *want) {
		t.Errorf("ci_pct %v, want %v from its timeline", r.CIPct, want)
	}
}

// An Until window ends after the first whole round its condition holds
// on, is never restarted by the stopping rule (here scripted to shift at
// every round) and hands its condition every round so far.
func TestRunAutoUntil(t *testing.T) {
	testenv.Root(t)
	dir := testenv.DirectIODir(t)
	scriptedRule(t, func(*stopper) judgement { return judgement{shift: true, ci: 0.005} })
	tg := openPlan(t, filepath.Join(dir, "until.dat"), target.Options{Size: 64 << 20})
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 2, Jobs: 1}
	var seen []int
	var sum float64
	until := func(rounds []float64) bool {
		seen = append(seen, len(rounds))
		sum = 0
		for _, r := range rounds {
			sum += r
		}
		return len(rounds) == 3
	}
	r, err := Run(context.Background(), tg, p, Options{Auto: &Auto{MaxRuntime: 20 * time.Second, Precision: 0.02, Until: until}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != results.StopUntil || r.Rounds != 3 || r.Restarts != 0 || r.CIPct != nil {
		t.Fatalf("stop %q after %d rounds, %d restarts, ci %v; want until after 3, none, none", r.Stop, r.Rounds, r.Restarts, r.CIPct)
	}
	if d := time.Duration(r.DurationNS); d < 3*time.Second || d > 4*time.Second {
		t.Errorf("window %s; want the 3 rounds and the moment it took to stop", d)
	}
	if len(seen) != 3 || seen[0] != 1 || seen[2] != 3 {
		t.Errorf("the condition saw %v rounds; want 1, 2, 3", seen)
	}
	var want float64
	for _, v := range r.TimelineIOPS[:3] {
		want += v
	}
	if sum != want || sum == 0 {
		t.Errorf("the condition's rounds sum to %g IOPS, the timeline's first 3 to %g", sum, want)
	}
}
