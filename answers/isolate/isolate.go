// Package isolate tests what a per-system cap is for: that one system
// cannot take the I/O the others need. A victim pattern runs alone,
// beside an aggressor, beside the aggressor capped in a cgroup of its
// own, and alone again (Run); Judge turns those phases into a verdict, a
// pure function of the recorded figures. Under the kernel's proportional
// controller, the pair runs at its weights on a disk whose iocost
// FindIOCost found enabled, against the uncontrolled pair and an io.max
// (RunIOCost, JudgeIOCost). Check takes the test as asked, refuses what
// cannot run before any I/O, and returns the Test that runs either
// control on a session.
package isolate

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/iomatrix/iomatrix/answers/capverify"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// phases are the phases, in the order they run.
var phases = []string{"alone", "uncapped", "capped", "alone again"}

// Config is what either control measures: the pair, its window and the
// pass mark.
type Config struct {
	Victim, Aggressor results.Pattern
	// Options are the victim's; the aggressor runs with the same window
	// and its own seed.
	Options iotest.Options
	// MinIsolation is the isolation that passes (0.9 for 90 %).
	MinIsolation float64
	// Notice is told of each phase as it starts.
	Notice func(string)
}

// Run measures the four phases on s, each over the same window, and
// judges them (Judge). s runs the victim in this process, uncapped, in
// every phase, the aggressor uncapped beside it and then under its cap;
// it must have been started under the cap.
func Run(ctx context.Context, s *session.Session, c Config) (*results.IsolateReport, error) {
	o := c.Options
	rep := frame(s, o)
	rep.Cap, rep.MinIsolation = s.Cap(), c.MinIsolation
	aggOpts := o
	aggOpts.Seed = o.Seed + 1                                       // its own offsets
	aggressors := []session.Runner{nil, s.Local(), s.Runner(), nil} // nil: the victim alone
	for i, name := range phases {
		beside := " alone"
		if aggressors[i] != nil {
			beside = " beside " + c.Aggressor.Name()
		}
		c.Notice(fmt.Sprintf("phase %d of %d, %s: %s%s for %s + %s ramp", i+1, len(phases), name, c.Victim.Name(), beside, o.Runtime, o.Ramp))
		p, err := runPhase(ctx, s.Local(), c.Victim, o, aggressors[i], c.Aggressor, aggOpts)
		if err != nil {
			return nil, fmt.Errorf("phase %s: %w", name, err)
		}
		p.Name = name
		rep.Phases = append(rep.Phases, p)
	}
	rep.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	Judge(&rep, c.Aggressor)
	return &rep, nil
}

// frame is a report of phases on s with options o before they run: the
// tool, the host, the target, the window, the engine, the seed and when
// it started.
func frame(s *session.Session, o iotest.Options) results.IsolateReport {
	return results.IsolateReport{Tool: results.Tool{Name: "iomatrix", Version: results.Version}, Host: results.HostInfo(),
		Target: s.Target().Info, RuntimeNS: int64(o.Runtime), RampNS: int64(o.Ramp), Engine: o.Engine,
		Seed: o.Seed, StartedAt: time.Now().UTC().Format(time.RFC3339)}
}

// runPhase runs the victim, and beside it the aggressor when there is
// one, both started together over windows of the same length.
func runPhase(ctx context.Context, vr session.Runner, victim results.Pattern, vo iotest.Options,
	ar session.Runner, aggressor results.Pattern, ao iotest.Options) (results.IsolatePhase, error) {
	var (
		wg        sync.WaitGroup
		agg       results.Result
		aggErr    error
		phase     results.IsolatePhase
		victimErr error
	)
	if ar != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agg, aggErr = ar.Run(ctx, aggressor, ao)
		}()
	}
	phase.Victim, victimErr = vr.Run(ctx, victim, vo)
	wg.Wait()
	if victimErr != nil {
		return phase, fmt.Errorf("victim %s: %w", victim.Name(), victimErr)
	}
	if ar != nil {
		if aggErr != nil {
			return phase, fmt.Errorf("aggressor %s: %w", aggressor.Name(), aggErr)
		}
		phase.Aggressor = &agg
	}
	return phase, nil
}

// Judge computes the ratios and the verdict of rep's four phases, for
// the aggressor pattern, against rep.MinIsolation.
//
// The baseline is the mean of both alone phases, so that a device whose
// rate drifts during the test does not decide the verdict by itself. The
// verdict is INCONCLUSIVE, never a pass or a failure, when the phases
// cannot carry it:
//   - another process loaded the device during a phase the verdict rests
//     on (judgeOtherLoad);
//   - the victim alone moved between the first phase and the last by
//     more than the verdict's margin: half the drift is how far the
//     baseline may be from the victim's rate alone during the capped
//     phase, and it could turn the verdict;
//   - the isolation is above 100 % by more than the pass mark allows
//     below it: the victim ran much faster beside the capped aggressor
//     than alone, so the alone phases did not measure its rate alone (a
//     cache warming, a device changing state);
//   - the victim's waits for a CPU could turn the verdict (judgeCPUWait).
func Judge(rep *results.IsolateReport, aggressor results.Pattern) {
	before, uncapped, capped, after := rep.Phases[0].Victim, rep.Phases[1].Victim, rep.Phases[2].Victim, rep.Phases[len(rep.Phases)-1].Victim
	alone := (before.Total.IOPS + after.Total.IOPS) / 2
	rep.Drift = after.Total.IOPS/before.Total.IOPS - 1
	rep.Isolation = capped.Total.IOPS / alone
	rep.Unprotected = uncapped.Total.IOPS / alone
	rep.P99Inflation = p99Inflation(before, after, capped)
	rep.Protected = rep.Isolation >= rep.MinIsolation
	rep.NoContention = rep.Unprotected >= rep.MinIsolation
	if rep.Cap != nil {
		judgeCap(rep, aggressor)
	}
	judgeSteadiness(rep)
	judgeOtherLoad(rep)
	judgeCPUWait(rep)
	if rep.NoContention {
		_, free := words(rep)
		rep.Notes = append(rep.Notes, fmt.Sprintf("the %s aggressor left the victim %.0f %% of its IOPS alone: "+
			"this target has room for both, so this test cannot show what the control does; try a heavier aggressor", free, 100*rep.Unprotected))
	}
	var why []string
	if len(rep.OtherLoad) > 0 {
		why = append(why, "another process loaded the device during "+strings.Join(rep.OtherLoad, ", "))
	}
	if rep.Unsteady != "" {
		why = append(why, rep.Unsteady)
	}
	if rep.Starved != "" {
		why = append(why, rep.Starved)
	}
	rep.Inconclusive = len(why) > 0
	word := "PROTECTED"
	switch {
	case rep.Inconclusive:
		word = "INCONCLUSIVE (" + strings.Join(why, "; ") + ")"
	case !rep.Protected:
		word = "NOT PROTECTED"
	}
	held, free := words(rep)
	inflation := "p99 unknown (a phase did no I/O)"
	if rep.P99Inflation != nil {
		inflation = fmt.Sprintf("p99 ×%.2f", *rep.P99Inflation)
	}
	rep.Verdict = fmt.Sprintf("%s: beside the %s aggressor the victim kept %.1f %% of its IOPS alone (%.1f %% %s), "+
		"%s; %.0f %% needed", word, held, 100*rep.Isolation, 100*rep.Unprotected, free, inflation, 100*rep.MinIsolation)
}

// p99Inflation is the victim's p99 beside the capped aggressor over its
// mean p99 alone, or nil when one of those phases has no p99: a phase
// without I/O has no latency, and 0 µs would read as one.
func p99Inflation(before, after, capped results.Result) *float64 {
	var p [3]float64
	for i, r := range []results.Result{before, after, capped} {
		if report.LatP99.Absent(r) {
			return nil
		}
		p[i], _ = report.LatP99.Measure(r)
	}
	alone := (p[0] + p[1]) / 2
	if alone <= 0 {
		return nil
	}
	v := p[2] / alone
	return &v
}

// words name the aggressor held and not, as the report's control does.
func words(rep *results.IsolateReport) (held, free string) {
	if rep.Control == "iocost" {
		return "weighted", "uncontrolled"
	}
	return "capped", "uncapped"
}

// judgeCap compares the capped aggressor with what the cap allows it (the
// cap model, one request per I/O).
func judgeCap(rep *results.IsolateReport, aggressor results.Pattern) {
	model, _ := capverify.Expected(cgroup.LimitOf(rep.Cap), aggressor.ReadPct, aggressor.BlockSize, 1, 0)
	if math.IsInf(model, 1) {
		rep.Notes = append(rep.Notes, "the cap limits nothing the aggressor does (e.g. a read cap on a write aggressor)")
		return
	}
	rep.CapIOPS = model
	agg := rep.Phases[2].Aggressor.Total.IOPS
	rep.AggCappedPct = 100 * (agg/model - 1)
	if agg < 0.9*model {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the capped aggressor did %s IOPS, %.0f %% under the cap's %s: the device or the CPU held it back, "+
			"not the cap, so the capped phase was lighter than the cap allows", units.Thousands(agg, 0), -rep.AggCappedPct, units.Thousands(model, 0)))
	}
	if u := rep.Phases[1].Aggressor.Total.IOPS; u < model {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the uncapped aggressor did %s IOPS, under the cap's %s: the cap never bound it",
			units.Thousands(u, 0), units.Thousands(model, 0)))
	}
}

// judgeSteadiness sets rep.Unsteady when the alone phases cannot be the
// victim's baseline (see Judge).
func judgeSteadiness(rep *results.IsolateReport) {
	margin := math.Abs(rep.Isolation - rep.MinIsolation)
	var why []string
	if math.Abs(rep.Drift)/2 > margin {
		why = append(why, fmt.Sprintf("the victim alone moved %+.1f %% from the first phase to the last, "+
			"more than the verdict's margin of %.1f points", 100*rep.Drift, 100*margin))
	}
	if rep.Isolation-1 > 1-rep.MinIsolation {
		held, _ := words(rep)
		why = append(why, fmt.Sprintf("beside the %s aggressor the victim did %.1f %% of its IOPS alone, "+
			"more than the %.0f %% the alone phases allow", held, 100*rep.Isolation, 100*(2-rep.MinIsolation)))
	}
	if len(why) == 0 {
		return
	}
	rep.Unsteady = strings.Join(why, "; ")
	rep.Notes = append(rep.Notes, "the victim alone was not steady enough to judge the cap by: "+
		"run again with a longer ramp and runtime, on a quieter device")
}

// judgeOtherLoad finds the phases in which the disk carried load that was
// neither the victim's nor the aggressor's (results.DevStats.OtherLoad,
// the aggressor's requests and bytes scaled to the victim's window): the
// victim's figures there are the device shared with somebody else. In a
// phase the verdict rests on, that makes it inconclusive: a neighbour
// slows the victim beside the capped aggressor into NOT PROTECTED, or the
// victim alone into PROTECTED. In the uncapped phase it only makes the
// unprotected figure suspect.
func judgeOtherLoad(rep *results.IsolateReport) {
	disk := sysfs.BlockDevice{MaxSectorsKB: rep.Target.MaxSectorsKB, MaxSegments: rep.Target.MaxSegments}
	for i, p := range rep.Phases {
		if p.VictimIdle {
			continue // the victim's window is the device's only by the aggressor's figures
		}
		var knownIOs, knownBytes uint64
		if a := p.Aggressor; a != nil && a.DurationNS > 0 {
			scale := float64(p.Victim.DurationNS) / float64(a.DurationNS)
			knownIOs = uint64(scale * float64(uint64(disk.RequestsPerIO(a.Pattern.BlockSize))*a.Total.IOs))
			knownBytes = uint64(scale * float64(a.Total.Bytes))
		}
		if !p.Victim.Device.OtherLoad(knownIOs, knownBytes) {
			continue
		}
		if i == 1 || p.AggressorCap != nil {
			rep.Notes = append(rep.Notes, "another process loaded the device during the "+p.Name+" phase: its figures are suspect")
			continue
		}
		rep.OtherLoad = append(rep.OtherLoad, p.Name)
	}
	if len(rep.OtherLoad) > 0 {
		rep.Notes = append(rep.Notes, "the disk completed requests that were neither the victim's nor the aggressor's during "+
			strings.Join(rep.OtherLoad, ", ")+": the verdict would rest on a device shared with somebody else; run again on a quiet device")
	}
}

// judgeCPUWait sets rep.Starved when the victim's waits for a CPU
// (results.CPUWait) could turn the verdict: on a RAM-backed device the
// victim and the aggressor compete for the CPUs more than for the device,
// and a victim that waited for a CPU measures that, not what the control
// does. Over each phase less its wait (capverify.UnstarvedIOPS), the
// victim beside the held aggressor could have kept as much as its IOPS
// there without the wait over its IOPS alone, and as little as its IOPS
// there over its IOPS alone without the wait; a verdict holds only when
// both sides of the pass mark agree with it.
func judgeCPUWait(rep *results.IsolateReport) {
	before, held, after := rep.Phases[0].Victim, rep.Phases[2].Victim, rep.Phases[len(rep.Phases)-1].Victim
	unstarved := func(r results.Result) float64 {
		window := time.Duration(r.DurationNS)
		return capverify.UnstarvedIOPS(r.Total.IOPS, window, r.CPUWait.Wait(window))
	}
	pct := func(r results.Result) float64 {
		if r.CPUWait == nil {
			return 0
		}
		return r.CPUWait.Pct
	}
	alone := (before.Total.IOPS + after.Total.IOPS) / 2
	word, _ := words(rep)
	switch {
	case !rep.Protected:
		if most := unstarved(held) / alone; most >= rep.MinIsolation {
			rep.Starved = fmt.Sprintf("CPU wait: the victim waited %.0f %% of the %s phase for a CPU, and over the rest of it kept %.1f %% of its IOPS alone: "+
				"a busy CPU, not the device, may have held it back", pct(held), word, 100*most)
		}
	default:
		if least := held.Total.IOPS / ((unstarved(before) + unstarved(after)) / 2); least < rep.MinIsolation {
			rep.Starved = fmt.Sprintf("CPU wait: the victim waited %.0f %% and %.0f %% of the alone phases for a CPU, and without that wait alone would have kept only %.1f %% beside the %s aggressor: "+
				"a busy CPU may have slowed it alone", pct(before), pct(after), 100*least, word)
		}
	}
	if rep.Starved != "" {
		rep.Notes = append(rep.Notes, "the victim's waits for a CPU could turn the verdict: run again with idle CPUs, or on a device that is not served by the CPUs (a RAM-backed one is)")
	}
}
