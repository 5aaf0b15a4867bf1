package isolate

import (
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

const mib = 1 << 20

func victim(iops float64, dev results.DevStats) results.Result {
	return results.Result{Name: "rand-4k-r100-qd1", DurationNS: 1e9, Pattern: results.Pattern{BlockSize: 4096},
		Total: results.Total{IOs: uint64(iops), Bytes: uint64(iops) * 4096, IOPS: iops}, Device: dev}
}

func aggressor(iops float64) *results.Result {
	return &results.Result{Name: "rand-16k-r0-qd32", DurationNS: 1e9, Pattern: results.Pattern{BlockSize: 16 << 10},
		Total: results.Total{IOs: uint64(iops), Bytes: uint64(iops) * 16 << 10, IOPS: iops}}
}

// quiet: the disk saw the victim's and the aggressor's requests only.
func quiet(v, a float64) results.DevStats {
	return results.DevStats{IOs: uint64(v + a), OtherIOs: uint64(a), Bytes: uint64(v)*4096 + uint64(a)*16<<10, OtherBytes: uint64(a) * 16 << 10}
}

// storm: and 300 requests of somebody else's writeback, 280 MiB.
func storm(v, a float64) results.DevStats {
	d := quiet(v, a)
	d.IOs, d.OtherIOs, d.Bytes, d.OtherBytes = d.IOs+300, d.OtherIOs+300, d.Bytes+280*mib, d.OtherBytes+280*mib
	return d
}

// recorded are four recorded phases: the victim's IOPS alone, beside the
// uncapped aggressor (40,000 IOPS) and beside the capped one (500), and
// alone again.
func recorded(alone, uncapped, capped, again float64, uncappedDev, cappedDev results.DevStats) []results.IsolatePhase {
	return []results.IsolatePhase{
		{Name: "alone", Victim: victim(alone, quiet(alone, 0))},
		{Name: "uncapped", Victim: victim(uncapped, uncappedDev), Aggressor: aggressor(40000)},
		{Name: "capped", Victim: victim(capped, cappedDev), Aggressor: aggressor(500)},
		{Name: "alone again", Victim: victim(again, quiet(again, 0))},
	}
}

// waited sets the victim's wait for a CPU in phases, percent by phase
// (a 1 s window): the victim's own threads, the kernel's none.
func waited(phases []results.IsolatePhase, pct ...float64) []results.IsolatePhase {
	for i, p := range pct {
		phases[i].Victim.CPUWait = &results.CPUWait{IOThreadsNS: int64(p * 1e7), IOThreads: 1, Pct: p}
	}
	return phases
}

// The verdict over recorded phases, without root or a device:
//   - the isolation against the pass mark decides PROTECTED or NOT
//     PROTECTED, and an aggressor that does not slow the victim uncapped
//     either is noted as a test that cannot show what the cap does;
//   - another process loading the device during a phase the verdict rests
//     on makes it INCONCLUSIVE, during the uncapped phase only a note; the
//     aggressor's own requests and bytes are not somebody else's;
//   - so does a victim alone that moved more than the verdict's margin,
//     or that ran far faster beside the capped aggressor than alone. The
//     case "alone moved" is a buffered loop device over /dev/shm: 17,120
//     IOPS alone, 35,973 alone again, an isolation of 172.9 %, once called
//     PROTECTED;
//   - so does a victim whose waits for a CPU could turn the verdict: short
//     beside the capped aggressor, where over the rest of the phase it
//     would have kept enough; or protected, where its IOPS alone without
//     their wait would leave it too little.
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name          string
		phases        []results.IsolatePhase
		word          string
		otherLoad     []string
		unsteady      bool
		starved       bool
		noContention  bool
		uncappedNoted bool
		isolation     float64
	}{
		{name: "protected", phases: recorded(13866, 3000, 13000, 13866, quiet(3000, 40000), quiet(13000, 500)),
			word: "PROTECTED", isolation: 13000.0 / 13866},
		{name: "not protected", phases: recorded(13866, 3000, 6781, 13866, quiet(3000, 40000), quiet(6781, 500)),
			word: "NOT PROTECTED", isolation: 6781.0 / 13866},
		{name: "no contention", phases: recorded(13866, 13500, 13600, 13866, quiet(13500, 40000), quiet(13600, 500)),
			word: "PROTECTED", noContention: true, isolation: 13600.0 / 13866},
		{name: "a neighbour beside the capped aggressor", phases: recorded(13866, 3000, 6781, 13866, quiet(3000, 40000), storm(6781, 500)),
			word: "INCONCLUSIVE (another process loaded the device during capped)", otherLoad: []string{"capped"}, isolation: 6781.0 / 13866},
		{name: "a neighbour beside the uncapped aggressor", phases: recorded(13866, 3000, 6781, 13866, storm(3000, 40000), quiet(6781, 500)),
			word: "NOT PROTECTED", uncappedNoted: true, isolation: 6781.0 / 13866},
		{name: "alone moved", phases: recorded(17120, 9000, 45899, 35973, quiet(9000, 40000), quiet(45899, 500)),
			word: "INCONCLUSIVE (beside the capped aggressor the victim did 172.9 % of its IOPS alone", unsteady: true, isolation: 45899 / ((17120 + 35973) / 2.0)},
		{name: "alone drifted past the margin", phases: recorded(10000, 3000, 9000, 11000, quiet(3000, 40000), quiet(9000, 500)),
			word: "INCONCLUSIVE (the victim alone moved +10.0 %", unsteady: true, isolation: 9000 / 10500.0},
		{name: "drift within the margin", phases: recorded(10000, 3000, 4000, 11000, quiet(3000, 40000), quiet(4000, 500)),
			word: "NOT PROTECTED", isolation: 4000 / 10500.0},
		{name: "far above alone", phases: recorded(10000, 3000, 12500, 10000, quiet(3000, 40000), quiet(12500, 500)),
			word: "INCONCLUSIVE (beside the capped aggressor the victim did 125.0 % of its IOPS alone", unsteady: true, isolation: 1.25},
		{name: "a little above alone", phases: recorded(10000, 3000, 10500, 10000, quiet(3000, 40000), quiet(10500, 500)),
			word: "PROTECTED", isolation: 1.05},
		// 6,781 over the 45 % of the phase the victim did not wait is
		// 15,069: 108.7 % of alone.
		{name: "starved beside the capped aggressor", phases: waited(recorded(13866, 3000, 6781, 13866, quiet(3000, 40000), quiet(6781, 500)), 0, 0, 55, 0),
			word: "INCONCLUSIVE (CPU wait: the victim waited 55 % of the capped phase for a CPU, and over the rest of it kept 108.7 % of its IOPS alone", starved: true, isolation: 6781.0 / 13866},
		// 2 % gives back 138 IOPS of the 5,700 missing.
		{name: "short beside the capped aggressor, on quiet CPUs", phases: waited(recorded(13866, 3000, 6781, 13866, quiet(3000, 40000), quiet(6781, 500)), 2, 2, 2, 2),
			word: "NOT PROTECTED", isolation: 6781.0 / 13866},
		// Alone without its 10 % wait: 15,407, and 13,000 is 84.4 % of it.
		{name: "protected on starved alone phases", phases: waited(recorded(13866, 3000, 13000, 13866, quiet(3000, 40000), quiet(13000, 500)), 10, 0, 0, 10),
			word: "INCONCLUSIVE (CPU wait: the victim waited 10 % and 10 % of the alone phases for a CPU, and without that wait alone would have kept only 84.4 %", starved: true, isolation: 13000.0 / 13866},
		{name: "protected, alone waited a little", phases: waited(recorded(13866, 3000, 13000, 13866, quiet(3000, 40000), quiet(13000, 500)), 2, 0, 30, 2),
			word: "PROTECTED", isolation: 13000.0 / 13866},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &results.IsolateReport{MinIsolation: 0.9, Cap: &results.Cap{WriteIOPS: 500},
				Target: results.TargetInfo{MaxSectorsKB: 1280, MaxSegments: 128}, Phases: tc.phases}
			Judge(rep, results.Pattern{BlockSize: 16 << 10, ReadPct: 0})
			notes := strings.Join(rep.Notes, "\n")
			if !strings.HasPrefix(rep.Verdict, tc.word) {
				t.Errorf("verdict %q, want it to start %q (notes: %s)", rep.Verdict, tc.word, notes)
			}
			inconclusive := len(tc.otherLoad) > 0 || tc.unsteady || tc.starved
			if rep.Inconclusive != inconclusive || strings.Join(rep.OtherLoad, ",") != strings.Join(tc.otherLoad, ",") || (rep.Unsteady != "") != tc.unsteady ||
				(rep.Starved != "") != tc.starved {
				t.Errorf("inconclusive %v, other load %v, unsteady %q, starved %q; want %v, %v, %v, %v",
					rep.Inconclusive, rep.OtherLoad, rep.Unsteady, rep.Starved, inconclusive, tc.otherLoad, tc.unsteady, tc.starved)
			}
			if rep.Protected != (tc.isolation >= 0.9) || abs(rep.Isolation-tc.isolation) > 1e-9 {
				t.Errorf("isolation %.4f, protected %v; want %.4f", rep.Isolation, rep.Protected, tc.isolation)
			}
			if rep.NoContention != tc.noContention || strings.Contains(notes, "cannot show what the control does") != tc.noContention {
				t.Errorf("no contention %v, want %v (notes: %s)", rep.NoContention, tc.noContention, notes)
			}
			if got := strings.Contains(notes, "during the uncapped phase"); got != tc.uncappedNoted {
				t.Errorf("uncapped phase noted %v, want %v", got, tc.uncappedNoted)
			}
			if rep.CapIOPS != 500 || abs(rep.AggCappedPct) > 1e-9 {
				t.Errorf("cap model %.0f IOPS, capped aggressor %+.1f %% of it; want 500, 0", rep.CapIOPS, rep.AggCappedPct)
			}
		})
	}
}

// The cap model of the aggressor: a read cap limits nothing a write
// aggressor does; a bandwidth cap counts the aggressor's block size.
func TestJudgeCapModel(t *testing.T) {
	for _, tc := range []struct {
		cap   results.Cap
		model float64
		note  string
	}{
		{results.Cap{ReadIOPS: 500}, 0, "the cap limits nothing the aggressor does"},
		{results.Cap{WriteBPS: 8 * mib}, 512, ""}, // the aggressor at 97.7 % of it: no note
		{results.Cap{WriteIOPS: 2000}, 2000, "the capped aggressor did 500 IOPS, 75 % under the cap's 2,000"},
	} {
		rep := &results.IsolateReport{MinIsolation: 0.9, Cap: &tc.cap,
			Phases: recorded(13866, 3000, 13000, 13866, quiet(3000, 40000), quiet(13000, 500))}
		Judge(rep, results.Pattern{BlockSize: 16 << 10, ReadPct: 0})
		notes := strings.Join(rep.Notes, "\n")
		if rep.CapIOPS != tc.model || (tc.note == "" && notes != "") || !strings.Contains(notes, tc.note) {
			t.Errorf("cap %+v: model %.0f, notes %q; want %.0f and a note %q", tc.cap, rep.CapIOPS, notes, tc.model, tc.note)
		}
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// The victim's p99 beside the capped aggressor over its p99 alone: none
// where a phase it rests on did no I/O (no latency, never 0 µs and a
// ratio of 0).
func TestJudgeP99Inflation(t *testing.T) {
	withP99 := func(r results.Result, p99us uint64) results.Result {
		r.Read = results.DirStats{IOs: r.Total.IOs, LatNS: results.Latency{P99: p99us * 1000, Count: r.Total.IOs}}
		return r
	}
	for _, tc := range []struct {
		name      string
		capped    float64 // the victim's IOPS beside the capped aggressor; 0: no I/O
		want      float64 // 0: none
		inVerdict string
	}{
		{"measured", 6000, 3, "p99 ×3.00"},
		{"no I/O beside the capped aggressor", 0, 0, "p99 unknown (a phase did no I/O)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			phases := recorded(13866, 3000, tc.capped, 13866, quiet(3000, 40000), quiet(tc.capped, 500))
			phases[0].Victim, phases[3].Victim = withP99(phases[0].Victim, 200), withP99(phases[3].Victim, 400)
			if tc.capped > 0 {
				phases[2].Victim = withP99(phases[2].Victim, 900)
			}
			rep := &results.IsolateReport{MinIsolation: 0.9, Phases: phases}
			Judge(rep, results.Pattern{BlockSize: 16 << 10})
			switch {
			case tc.want == 0 && rep.P99Inflation != nil:
				t.Errorf("p99 inflation %v, want none", *rep.P99Inflation)
			case tc.want > 0 && (rep.P99Inflation == nil || abs(*rep.P99Inflation-tc.want) > 1e-9):
				t.Errorf("p99 inflation %v, want %v", rep.P99Inflation, tc.want)
			}
			if !strings.Contains(rep.Verdict, tc.inVerdict) {
				t.Errorf("verdict %q lacks %q", rep.Verdict, tc.inVerdict)
			}
		})
	}
}
