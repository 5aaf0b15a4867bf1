package isolate

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// The io.max search halves from the weighted aggressor's IOPS until a cap
// protects the victim as well, then bisects geometrically between the
// highest cap that did and the lowest that did not, within its tries.
func TestSearchCap(t *testing.T) {
	w := results.IsolatePhase{Aggressor: aggressor(10000)}
	agg := results.Pattern{ReadPct: 0}
	for _, tc := range []struct {
		name    string
		protect float64 // the highest cap that protects
		tries   int
		want    []uint64
	}{
		{"halved, then bisected", 3000, 5, []uint64{10000, 5000, 2500, 3536, 2973}},
		{"as well at the weighted rate", 20000, 5, []uint64{10000}},
		{"never within the tries", 100, 3, []uint64{10000, 5000, 2500}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tried []uint64
			err := searchCap(w, agg, tc.tries, func(l cgroup.Limit) (bool, error) {
				if l.ReadIOPS != 0 {
					t.Errorf("a write aggressor capped on reads: %+v", l)
				}
				tried = append(tried, l.WriteIOPS)
				return float64(l.WriteIOPS) <= tc.protect, nil
			})
			if err != nil || !equal(tried, tc.want) {
				t.Errorf("tried %v (%v), want %v", tried, err, tc.want)
			}
		})
	}
	if l := aggressorCap(results.Pattern{ReadPct: 70}, 1000); l.ReadIOPS != 700 || l.WriteIOPS != 300 {
		t.Errorf("a 70 %% read aggressor at 1000 IOPS: %+v", l)
	}
	if l := aggressorCap(results.Pattern{ReadPct: 99}, 10); l.ReadIOPS != 10 || l.WriteIOPS != 1 {
		t.Errorf("a share that rounds to nothing must still be capped: %+v", l)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// iocost's figures over recorded phases: the gain over the uncontrolled
// pair, the work conservation, and the pair against the highest io.max
// that protected the victim as well (within SameProtection).
func TestJudgeIOCost(t *testing.T) {
	capped := func(name string, v, a float64, wiops uint64) results.IsolatePhase {
		return results.IsolatePhase{Name: name, Victim: victim(v, quiet(v, a)), Aggressor: aggressor(a),
			AggressorCap: cgroup.Limit{WriteIOPS: wiops}.Record(2, "")}
	}
	phases := func(weighted float64, iomax ...results.IsolatePhase) []results.IsolatePhase {
		ps := []results.IsolatePhase{
			{Name: "alone", Victim: victim(4000, quiet(4000, 0))},
			{Name: "uncontrolled", Victim: victim(800, quiet(800, 12000)), Aggressor: aggressor(12000)},
			{Name: "weighted", Victim: victim(weighted, quiet(weighted, 9000)), Aggressor: aggressor(9000)},
		}
		ps = append(ps, iomax...)
		return append(ps, results.IsolatePhase{Name: "alone again", Victim: victim(4000, quiet(4000, 0))})
	}
	rep := &results.IsolateReport{Control: "iocost", MinIsolation: 0.5, IOCost: &results.IsolateIOCost{SameProtection: SameProtection},
		Phases: phases(2400, capped("io.max wiops=9000", 1500, 9000, 9000), capped("io.max wiops=4500", 2300, 4500, 4500), capped("io.max wiops=2250", 3000, 2250, 2250),
			results.IsolatePhase{Name: "idle victim, io.max wiops=4500", VictimIdle: true, Aggressor: aggressor(4500), AggressorCap: cgroup.Limit{WriteIOPS: 4500}.Record(2, "")},
			results.IsolatePhase{Name: "idle victim, weighted", VictimIdle: true, Aggressor: aggressor(13500)})}
	if l := equivalentCap(rep.Phases, rep.Phases[2], nil); l.WriteIOPS != 4500 {
		t.Errorf("the io.max for the idle phase: %+v, want wiops=4500", l)
	}
	JudgeIOCost(rep, results.Pattern{})
	if ic := rep.IOCost; ic.IdleWeighted != 13500 || ic.IdleIOMax != 4500 || math.Abs(ic.IdleGain-3) > 1e-9 {
		t.Errorf("idle victim: weighted %.0f, io.max %.0f, ×%.2f; want 13500, 4500, ×3", ic.IdleWeighted, ic.IdleIOMax, ic.IdleGain)
	}
	ic := rep.IOCost
	if math.Abs(ic.Gain-3) > 1e-9 || math.Abs(ic.Conservation-11400.0/12800) > 1e-9 {
		t.Errorf("gain %.3f, conservation %.3f; want 3 and %.3f", ic.Gain, ic.Conservation, 11400.0/12800)
	}
	// 2300 ≥ 95 % of 2400: wiops=4500 protects as well, the highest that does.
	if ic.IOMaxPhase != "io.max wiops=4500" || math.Abs(ic.PairVsIOMax-11400.0/6800) > 1e-9 {
		t.Errorf("io.max phase %q, pair ×%.3f; want wiops=4500 and ×%.3f", ic.IOMaxPhase, ic.PairVsIOMax, 11400.0/6800)
	}
	if !rep.Protected || !strings.Contains(rep.Verdict, "weighted aggressor") || !strings.Contains(rep.Verdict, "×3.00") {
		t.Errorf("verdict %q", rep.Verdict)
	}
	// No cap protected as well: said so, and no ratio.
	rep = &results.IsolateReport{Control: "iocost", MinIsolation: 0.5, IOCost: &results.IsolateIOCost{SameProtection: SameProtection},
		Phases: phases(3500, capped("io.max wiops=9000", 1500, 9000, 9000), capped("io.max wiops=4500", 2300, 4500, 4500))}
	JudgeIOCost(rep, results.Pattern{})
	if rep.IOCost.IOMaxPhase != "" || rep.IOCost.PairVsIOMax != 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "no io.max tried protected the victim as well") {
		t.Errorf("no cap as good: phase %q, ×%.2f, notes %q", rep.IOCost.IOMaxPhase, rep.IOCost.PairVsIOMax, rep.Notes)
	}
	// Another process during an io.max phase makes it suspect, not the
	// verdict inconclusive.
	rep = &results.IsolateReport{Control: "iocost", MinIsolation: 0.5, IOCost: &results.IsolateIOCost{SameProtection: SameProtection},
		Phases: phases(2400, capped("io.max wiops=4500", 2300, 4500, 4500))}
	rep.Phases[3].Victim.Device = storm(2300, 4500)
	JudgeIOCost(rep, results.Pattern{})
	if rep.Inconclusive || !strings.Contains(strings.Join(rep.Notes, "\n"), "during the io.max wiops=4500 phase") {
		t.Errorf("other load in an io.max phase: inconclusive %v, notes %q", rep.Inconclusive, rep.Notes)
	}
	// A victim short beside the weighted aggressor, which waited for a CPU
	// long enough to explain it (1,500 over the 40 % of the phase it did
	// not wait is 3,750: 94 % of alone), is not judged NOT PROTECTED.
	rep = &results.IsolateReport{Control: "iocost", MinIsolation: 0.5, IOCost: &results.IsolateIOCost{SameProtection: SameProtection},
		Phases: waited(phases(1500), 0, 0, 60)}
	JudgeIOCost(rep, results.Pattern{})
	if !rep.Inconclusive || !strings.HasPrefix(rep.Verdict, "INCONCLUSIVE (CPU wait: the victim waited 60 % of the weighted phase") {
		t.Errorf("a starved weighted phase: %q", rep.Verdict)
	}
}

// fakeMember runs nothing: it returns a result at its IOPS, and charges
// the controller's usage while iocost is on.
type fakeMember struct {
	iops  float64
	usage *uint64
	on    *bool
	cost  uint64 // µs charged per run with iocost on
}

func (m *fakeMember) RunAt(_ context.Context, _ time.Time, p results.Pattern, _ iotest.Options) (results.Result, error) {
	if *m.on {
		*m.usage += m.cost
	}
	return results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOPS: m.iops}}, nil
}
func (m *fakeMember) SetLimit(cgroup.Limit) error { return nil }
func (m *fakeMember) SetWeight(int) error         { return nil }

// A phase with iocost on records the controller's vrate and the device
// time it charged each member over the phase; a phase with it off
// records none; a failure to read them is said and the run goes on.
func TestRunIOCostController(t *testing.T) {
	var on bool
	var vu, au uint64
	var notices []string
	fail := 0 // the phase whose second read fails
	reads := 0
	c := IOCostConfig{
		Config: Config{
			Victim:    results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 1, Jobs: 1},
			Aggressor: results.Pattern{Access: results.Random, BlockSize: 16384, ReadPct: 0, QueueDepth: 32, Jobs: 1},
			Notice:    func(s string) { notices = append(notices, s) },
		},
		VictimM:      &fakeMember{iops: 1000, usage: &vu, on: &on, cost: 1500},
		AggressorM:   &fakeMember{iops: 5000, usage: &au, on: &on, cost: 8000},
		VictimWeight: 500, AggressorWeight: 100, Searches: 1,
		Enable: func(v bool) error { on = v; return nil },
		Controller: func() (float64, uint64, uint64, bool, error) {
			reads++
			if reads == fail {
				return 0, 0, 0, false, errors.New("read io.stat: gone")
			}
			return 62.5, vu, au, on, nil
		},
	}
	rep, err := RunIOCost(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Phases {
		on := strings.HasPrefix(p.Control, "iocost on")
		switch {
		case !on && p.Controller != nil:
			t.Errorf("%s (%s): controller figures %+v with iocost off", p.Name, p.Control, p.Controller)
		case on && p.Controller == nil:
			t.Errorf("%s (%s): no controller figures", p.Name, p.Control)
		case on:
			wantV, wantA := 1.5, 8.0
			if p.VictimIdle {
				wantV = 0
			}
			if p.Aggressor == nil {
				wantA = 0
			}
			if *p.Controller != (results.PhaseController{VRatePct: 62.5, VictimUsageMS: wantV, AggressorUsageMS: wantA}) {
				t.Errorf("%s: %+v, want vrate 62.5, victim %.1f ms, aggressor %.1f ms", p.Name, *p.Controller, wantV, wantA)
			}
		}
	}
	if rep.Phases[2].Name != "weighted" || rep.Phases[2].Controller == nil {
		t.Fatalf("phase 3: %s, %+v", rep.Phases[2].Name, rep.Phases[2].Controller)
	}
	// The weighted phase's second read fails.
	on, vu, au, reads, fail, notices = false, 0, 0, 0, 4, nil
	if rep, err = RunIOCost(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if rep.Phases[2].Controller != nil || len(notices) == 0 || !strings.Contains(strings.Join(notices, "\n"), "warning: phase weighted: read io.stat: gone") {
		t.Errorf("a failed read: weighted %+v, notices %q", rep.Phases[2].Controller, notices)
	}
}
