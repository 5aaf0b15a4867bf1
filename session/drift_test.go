package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// sentinelResult is a run that started at the given second after t0 with
// these one-second rounds.
func sentinelResult(at float64, rounds ...float64) results.Result {
	var sum float64
	for _, r := range rounds {
		sum += r
	}
	start := t0.Add(time.Duration(at * float64(time.Second)))
	return results.Result{Name: "rand-4k-r100-qd32", StartedAt: start.Format(time.RFC3339Nano), DurationNS: int64(len(rounds)) * int64(time.Second),
		TimelineIOPS: rounds, Rounds: len(rounds), Total: results.Total{IOPS: sum / float64(len(rounds))}}
}

// cellAt is a cell named name that started at the given second after t0.
func cellAt(name string, at float64) results.Result {
	return results.Result{Name: name, StartedAt: t0.Add(time.Duration(at * float64(time.Second))).Format(time.RFC3339Nano),
		DurationNS: int64(time.Second), Total: results.Total{IOPS: 1}}
}

func TestDriftRuleCompare(t *testing.T) {
	flat := func(v float64) results.Result { return sentinelResult(0, v, v, v, v, v) }
	for _, c := range []struct {
		name    string
		a, b    results.Result
		changed bool
	}{
		// A capped device gives the same count every second: no scatter,
		// and the floor alone decides.
		{"capped, equal", flat(1000), flat(1000), false},
		{"capped, within the floor", flat(1000), flat(810), false},
		{"capped, a fifth down", flat(1000), flat(800), true},
		{"capped, halved", flat(1000), flat(500), true},
		{"capped, doubled", flat(1000), flat(2000), true},
		// Rounds scattering by about 10 %: a 30 % drop is beyond the floor
		// but within 6 standard errors of the difference of two 5-round
		// means (se ≈ 0.1·√(2/5) ≈ 6 %), so not a change; a halving is.
		{"noisy, 30 % down", sentinelResult(0, 900, 1100, 1000, 880, 1120), sentinelResult(0, 630, 770, 700, 616, 784), false},
		{"noisy, halved", sentinelResult(0, 900, 1100, 1000, 880, 1120), sentinelResult(0, 450, 550, 500, 440, 560), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := DefaultDriftRule.compare(c.a, c.b)
			if got.changed != c.changed {
				t.Errorf("changed %v, want %v (%+.1f %%, threshold %.1f %%)", got.changed, c.changed, got.pct, got.threshold)
			}
			if want := 100 * (c.b.Total.IOPS/c.a.Total.IOPS - 1); math.Abs(got.pct-want) > 1e-9 {
				t.Errorf("change %.3f %%, want %.3f", got.pct, want)
			}
		})
	}
}

// watched is a document of cells and sentinel runs (by start second).
func watched(runs []results.Result, cells ...results.Result) *results.Document {
	s := &results.Sentinels{Pattern: results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 32, Jobs: 1}}
	for _, r := range runs {
		s.Runs = append(s.Runs, results.SentinelRun{Result: r})
	}
	return &results.Document{Results: cells, Sentinels: s}
}

func marks(doc *results.Document) string {
	var b strings.Builder
	for _, r := range doc.Results {
		switch m := r.DeviceChanged; {
		case m == nil:
			b.WriteString(".")
		case m.InShift:
			b.WriteString("?")
		default:
			b.WriteString("!")
		}
	}
	return b.String()
}

func levels(doc *results.Document) string {
	var l []string
	for _, r := range doc.Sentinels.Runs {
		l = append(l, r.Level)
	}
	return strings.Join(l, " ")
}

func TestJudgeDrift(t *testing.T) {
	flat := func(at, v float64) results.Result { return sentinelResult(at, v, v, v) }
	cells := func(at ...float64) []results.Result {
		var out []results.Result
		for i, a := range at {
			out = append(out, cellAt(fmt.Sprintf("c%d", i), a))
		}
		return out
	}
	t.Run("steady", func(t *testing.T) {
		doc := watched([]results.Result{flat(0, 1000), flat(10, 1010), flat(20, 990)}, cells(4, 6, 14, 16, 24)...)
		JudgeDrift(doc, DefaultDriftRule)
		// The last cell has no run after it: not judged.
		if m, l := marks(doc), levels(doc); m != "....." || l != "reference same same" || len(doc.Sentinels.Changes) != 0 {
			t.Errorf("marks %q, levels %q, changes %v", m, l, doc.Sentinels.Changes)
		}
	})
	t.Run("halved", func(t *testing.T) {
		doc := watched([]results.Result{flat(0, 1000), flat(10, 1000), flat(20, 500), flat(30, 500)}, cells(4, 6, 14, 16, 24, 26)...)
		JudgeDrift(doc, DefaultDriftRule)
		if m, l := marks(doc), levels(doc); m != "..??!!" || l != "reference same changed changed" {
			t.Errorf("marks %q, levels %q", m, l)
		}
		ch := doc.Sentinels.Changes
		if len(ch) != 1 || ch[0].FromRun != 1 || ch[0].ToRun != 2 || ch[0].Back || ch[0].ChangePct != -50 {
			t.Fatalf("changes %+v, want one from run 1 to 2, -50 %%", ch)
		}
		// The move lies between the start of run 1's window and the end
		// of run 2's.
		if ch[0].After != t0.Add(10*time.Second).Format(time.RFC3339Nano) || ch[0].Before != t0.Add(23*time.Second).Format(time.RFC3339Nano) {
			t.Errorf("between %s and %s", ch[0].After, ch[0].Before)
		}
		m := doc.Results[4].DeviceChanged
		if m.SentinelBefore != 2 || m.SentinelAfter != 3 || m.SentinelIOPS != [2]float64{500, 500} || m.ReferenceIOPS != 1000 {
			t.Errorf("mark %+v", m)
		}
	})
	t.Run("back", func(t *testing.T) {
		doc := watched([]results.Result{flat(0, 1000), flat(10, 500), flat(20, 500), flat(30, 980)}, cells(4, 14, 24, 34)...)
		JudgeDrift(doc, DefaultDriftRule)
		ch := doc.Sentinels.Changes
		if m := marks(doc); m != "?!?." || len(ch) != 2 || !ch[1].Back || ch[1].FromRun != 2 || ch[1].ToRun != 3 {
			t.Errorf("marks %q, changes %+v", m, ch)
		}
	})
	t.Run("changed twice", func(t *testing.T) {
		// From one changed rate to another: a move, and the cells in
		// between may be at either.
		doc := watched([]results.Result{flat(0, 1000), flat(10, 500), flat(20, 250)}, cells(4, 14)...)
		JudgeDrift(doc, DefaultDriftRule)
		if m := marks(doc); m != "??" || len(doc.Sentinels.Changes) != 2 {
			t.Errorf("marks %q, changes %+v", m, doc.Sentinels.Changes)
		}
	})
	t.Run("slow drift", func(t *testing.T) {
		// Each run within the floor of the one before, the third beyond
		// it from the reference: the level is held to the reference.
		doc := watched([]results.Result{flat(0, 1000), flat(10, 900), flat(20, 790)}, cells(4, 14)...)
		JudgeDrift(doc, DefaultDriftRule)
		if m, l := marks(doc), levels(doc); m != ".?" || l != "reference same changed" {
			t.Errorf("marks %q, levels %q", m, l)
		}
	})
	t.Run("unknown runs", func(t *testing.T) {
		failed := flat(10, 1000)
		failed.Error = &results.IOError{Errno: 5}
		short := sentinelResult(30, 500, 500) // two rounds: no scatter to judge
		loaded := flat(40, 1000)
		loaded.Device = results.DevStats{IOs: 10000, OtherIOs: 5000}
		doc := watched([]results.Result{flat(0, 0), flat(5, 1000), failed, flat(20, 500), short, loaded}, cells(2, 7, 15, 25, 35, 45)...)
		JudgeDrift(doc, DefaultDriftRule)
		// The first run did no I/O: the reference is the second. A cell
		// beside an unknown run is marked only where the other run
		// changed, and then as one that may precede the move.
		if m, l := marks(doc), levels(doc); m != "..??.." || l != "unknown reference unknown changed unknown unknown" {
			t.Errorf("marks %q, levels %q", m, l)
		}
	})
	t.Run("starved for a CPU", func(t *testing.T) {
		// A run whose I/O waited for a CPU 45 % of its window more than
		// the reference's: at its rate over the rest, 600 IOPS would be
		// 1,091, no change from 1,000; 500 with 10 % more would be 556, a
		// change however it waited; 1,000 after waiting 90 % is no change
		// to explain.
		starved := func(at, v, wait float64) results.Result {
			r := flat(at, v)
			r.CPUWait = &results.CPUWait{IOThreadsNS: int64(wait * float64(r.DurationNS))}
			return r
		}
		doc := watched([]results.Result{flat(0, 1000), starved(10, 600, 0.45), starved(20, 500, 0.1), starved(30, 1000, 0.9)}, cells(4, 14, 24)...)
		JudgeDrift(doc, DefaultDriftRule)
		if m, l := marks(doc), levels(doc); m != ".??" || l != "reference unknown changed same" {
			t.Errorf("marks %q, levels %q", m, l)
		}
		if why := doc.Sentinels.Runs[1].Unjudged; !strings.Contains(why, "waited for a CPU") {
			t.Errorf("unjudged %q", why)
		}
		// A reference that waited: the later runs faster than it are not
		// changes it can be trusted with.
		doc = watched([]results.Result{starved(0, 600, 0.5), flat(10, 1000), flat(20, 1000)}, cells(4, 14)...)
		JudgeDrift(doc, DefaultDriftRule)
		if m, l := marks(doc), levels(doc); m != ".." || l != "reference unknown unknown" {
			t.Errorf("starved reference: marks %q, levels %q", m, l)
		}
		// A machine as busy in every run: the wait explains nothing, and
		// a halving is a change.
		doc = watched([]results.Result{starved(0, 1000, 1), starved(10, 500, 1)}, cells(4)...)
		JudgeDrift(doc, DefaultDriftRule)
		if m, l := marks(doc), levels(doc); m != "?" || l != "reference changed" {
			t.Errorf("busy throughout: marks %q, levels %q", m, l)
		}
		// The whole machine's wait at its bound in both, iomatrix's own
		// threads waiting 45 % of the window more in the slower.
		own := func(at, v, wait float64) results.Result {
			r := flat(at, v)
			others := r.DurationNS
			r.CPUWait = &results.CPUWait{IOThreadsNS: int64(wait * float64(r.DurationNS)), TargetThreadsNS: 10 * r.DurationNS, OthersNS: &others}
			return r
		}
		doc = watched([]results.Result{own(0, 1000, 0.05), own(10, 600, 0.5), own(20, 500, 0.05)}, cells(4, 14)...)
		JudgeDrift(doc, DefaultDriftRule)
		if l := levels(doc); l != "reference unknown changed" {
			t.Errorf("own threads starved: levels %q", l)
		}
	})
	t.Run("judged again", func(t *testing.T) {
		doc := watched([]results.Result{flat(0, 1000), flat(10, 500)}, cells(4)...)
		JudgeDrift(doc, DefaultDriftRule)
		doc.Sentinels.Runs[1] = results.SentinelRun{Result: flat(10, 1000)}
		JudgeDrift(doc, DefaultDriftRule)
		if m := marks(doc); m != "." || len(doc.Sentinels.Changes) != 0 {
			t.Errorf("a mark or a change left from an earlier judgement: %q %v", m, doc.Sentinels.Changes)
		}
	})
}

func TestRerunsDue(t *testing.T) {
	flat := func(at, v float64) results.Result { return sentinelResult(at, v, v, v) }
	cells := []results.Result{cellAt("a", 4), cellAt("b", 14), cellAt("c", 24)}
	due := func(doc *results.Document) string {
		JudgeDrift(doc, DefaultDriftRule)
		var names []string
		for _, p := range RerunsDue(doc) {
			names = append(names, p.Name())
		}
		return strings.Join(names, ",")
	}
	pat := func(name string) results.Pattern {
		return results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: map[string]int{"a": 1, "b": 2, "c": 3}[name], Jobs: 1}
	}
	for i := range cells {
		cells[i].Pattern = pat(cells[i].Name)
		cells[i].Name = cells[i].Pattern.Name()
	}
	// Steady at the new rate: the cell in the interval of the move.
	if got := due(watched([]results.Result{flat(0, 1000), flat(10, 1000), flat(20, 500), flat(30, 500)}, cells...)); got != "rand-4k-r100-qd2" {
		t.Errorf("steady at half: due %q", got)
	}
	// Not yet steady: nothing.
	if got := due(watched([]results.Result{flat(0, 1000), flat(10, 1000), flat(20, 500)}, cells...)); got != "" {
		t.Errorf("just moved: due %q", got)
	}
	// Back at the reference, steady: every marked cell.
	back := watched([]results.Result{flat(0, 1000), flat(10, 500), flat(20, 500), flat(30, 1000), flat(31, 1000)}, cells...)
	if got := due(back); got != "rand-4k-r100-qd1,rand-4k-r100-qd2,rand-4k-r100-qd3" {
		t.Errorf("back: due %q", got)
	}
	// A cell measured again once is not again.
	back.Sentinels.Replaced = []results.Result{cells[1]}
	if got := due(back); got != "rand-4k-r100-qd1,rand-4k-r100-qd3" {
		t.Errorf("back, one replaced: due %q", got)
	}
}

func TestPlanSentinels(t *testing.T) {
	o := iotest.Options{Runtime: 60 * time.Second, Ramp: 5 * time.Second}
	quick := 14 * 65 * time.Second
	p, err := PlanSentinels(SentinelRequest{Options: o, OnDrift: results.DriftMark, Planned: quick})
	if err != nil {
		t.Fatal(err)
	}
	// 5 s + 1 s ramp; at the start, after 5 and 10 minutes, at the end.
	if s := p.Settings; s == nil || s.RuntimeNS != int64(5*time.Second) || s.RampNS != int64(time.Second) || p.Runs != 5 ||
		s.EveryNS != int64(DefaultSentinelEvery) || math.Abs(p.Share-30.0/910) > 1e-9 {
		t.Errorf("quick at 60 s: %+v", p)
	}
	// A short sweep runs without, unless they are asked for.
	short := iotest.Options{Runtime: time.Second}
	p, _ = PlanSentinels(SentinelRequest{Options: short, OnDrift: results.DriftMark, Planned: 14 * time.Second})
	if p.Settings != nil || p.Window != 3*time.Second || p.Ramp != 0 {
		t.Errorf("quick at 1 s: %+v", p)
	}
	p, _ = PlanSentinels(SentinelRequest{Options: short, OnDrift: results.DriftRerun, Planned: 14 * time.Second, Asked: true, Every: 4 * time.Second})
	if p.Settings == nil || p.Settings.OnDrift != results.DriftRerun || p.Runs != 5 {
		t.Errorf("asked: %+v", p)
	}
	// An auto window's maximum sets the run's; a resumed file's window
	// is kept.
	auto := iotest.Options{Auto: &iotest.Auto{MaxRuntime: 4 * time.Second}, Ramp: 500 * time.Millisecond}
	p, _ = PlanSentinels(SentinelRequest{Options: auto, OnDrift: results.DriftMark, Planned: time.Hour})
	if p.Window != 4*time.Second || p.Ramp != 500*time.Millisecond {
		t.Errorf("auto: %+v", p)
	}
	p, _ = PlanSentinels(SentinelRequest{Options: o, OnDrift: results.DriftMark, Planned: time.Hour, Window: &SentinelWindow{Runtime: 3 * time.Second}})
	if p.Window != 3*time.Second || p.Ramp != 0 {
		t.Errorf("resumed: %+v", p)
	}
	if _, err := PlanSentinels(SentinelRequest{Options: o, OnDrift: "panic", Planned: time.Hour}); err == nil || !strings.Contains(err.Error(), "mark, rerun, stop") {
		t.Errorf("bad action: %v", err)
	}
	if _, err := PlanSentinels(SentinelRequest{Options: o, OnDrift: results.DriftMark, Every: -time.Second}); err == nil {
		t.Error("a negative interval planned")
	}
}

// device is a stand-in for a device measured through a loop: each run
// takes its ramp and window on a clock of its own, and the device serves
// rate I/Os a second, scaled by each step's factor from its time on.
type device struct {
	clock time.Time
	rate  float64
	steps []step
	ran   []string
}

type step struct {
	at     time.Time
	factor float64
}

func (d *device) rateAt(at time.Time) float64 {
	r := d.rate
	for _, s := range d.steps {
		if !at.Before(s.at) {
			r = d.rate * s.factor
		}
	}
	return r
}

func (d *device) Run(_ context.Context, p results.Pattern, o iotest.Options) (results.Result, error) {
	d.ran = append(d.ran, p.Name())
	start := d.clock.Add(o.Ramp)
	n := int(o.Runtime / time.Second)
	var tl []float64
	var sum float64
	for i := range n {
		r := d.rateAt(start.Add(time.Duration(i) * time.Second))
		tl, sum = append(tl, r), sum+r
	}
	d.clock = start.Add(o.Runtime + 100*time.Millisecond)
	return results.Result{Name: p.Name(), Pattern: p, StartedAt: start.Format(time.RFC3339Nano), DurationNS: int64(o.Runtime),
		RampNS: int64(o.Ramp), TimelineIOPS: tl, Rounds: n, Total: results.Total{IOs: uint64(sum), IOPS: sum / float64(n)}}, nil
}

// cellsOf are n patterns of one block size, named by their depth.
func cellsOf(n int) []results.Pattern {
	var pats []results.Pattern
	for i := range n {
		pats = append(pats, results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 0, QueueDepth: i + 1, Jobs: 1})
	}
	return pats
}

// watchedSweep measures 14 one-second cells on d with a sentinel of 3 s
// every 4 s, on-drift as asked.
func watchedSweep(t *testing.T, d *device, onDrift string) (*results.Document, error) {
	t.Helper()
	p, err := PlanSentinels(SentinelRequest{Pattern: results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 32, Jobs: 1},
		Options: iotest.Options{Runtime: time.Second}, Every: 4 * time.Second, Asked: true, OnDrift: onDrift})
	if err != nil {
		t.Fatal(err)
	}
	doc := &results.Document{Sentinels: p.Settings}
	l := &Loop{Runner: d, Options: iotest.Options{Runtime: time.Second}, Display: &nullDisplay{}, Doc: doc,
		Watch: &Watch{now: func() time.Time { return d.clock }}}
	_, err = Sweep{Profile: &profiles.Profile{Name: "t", Patterns: cellsOf(14)}, Doc: doc}.Run(context.Background(), l)
	return doc, err
}

// checkMarks holds every cell of doc to the truth of d: a cell whose run
// (ramp included) ended before the first step is unmarked, a cell that
// ran after it is marked; a cell during it, either.
func checkMarks(t *testing.T, doc *results.Document, change time.Time, inShiftAllowed bool) {
	t.Helper()
	for _, r := range doc.Results {
		start := startOf(r).Add(-time.Duration(r.RampNS))
		end := windowEnd(r)
		m := r.DeviceChanged
		switch {
		case end.Before(change) && m != nil && !(inShiftAllowed && m.InShift):
			t.Errorf("%s measured before the change (%s to %s), marked %+v", r.Name, start.Format("15:04:05.0"), end.Format("15:04:05.0"), m)
		case !start.Before(change) && m == nil:
			t.Errorf("%s measured after the change (%s), not marked", r.Name, start.Format("15:04:05.0"))
		}
	}
}

func TestWatchedLoop(t *testing.T) {
	// Runs of 3 s and cells of 1 s (and 0.1 s between): the second run
	// ends at 10.6 s, two cells follow before the change at 13.5 s, the
	// third straddles it.
	change := t0.Add(13500 * time.Millisecond)
	t.Run("steady", func(t *testing.T) {
		d := &device{clock: t0, rate: 1000}
		doc, err := watchedSweep(t, d, results.DriftMark)
		if err != nil {
			t.Fatal(err)
		}
		if m := marks(doc); m != strings.Repeat(".", 14) || len(doc.Sentinels.Changes) != 0 {
			t.Errorf("marks %q, changes %v", m, doc.Sentinels.Changes)
		}
		// At the start, after every 4 s of cells, at the end.
		if n := len(doc.Sentinels.Runs); n != 5 {
			t.Errorf("%d runs: %v", n, d.ran)
		}
	})
	t.Run("mark", func(t *testing.T) {
		d := &device{clock: t0, rate: 1000, steps: []step{{change, 0.5}}}
		doc, err := watchedSweep(t, d, results.DriftMark)
		if err != nil {
			t.Fatal(err)
		}
		checkMarks(t, doc, change, true)
		// The cells between the last run before the change and the
		// change: marked, as they may follow it.
		before := 0
		for _, r := range doc.Results {
			if windowEnd(r).Before(change) && r.DeviceChanged != nil {
				before++
			}
		}
		if before != 2 {
			t.Errorf("%d cells measured before the change marked in its interval, want 2: %s", before, marks(doc))
		}
		ch := doc.Sentinels.Changes
		if len(ch) != 1 || ch[0].ToRun != ch[0].FromRun+1 {
			t.Fatalf("changes %+v", ch)
		}
		if after, before := startOf(results.Result{StartedAt: ch[0].After}), startOf(results.Result{StartedAt: ch[0].Before}); change.Before(after) || change.After(before) {
			t.Errorf("the change at %s reported between %s and %s", change, after, before)
		}
		if len(doc.Results) != 14 || len(doc.Sentinels.Replaced) != 0 {
			t.Errorf("%d results, %d replaced", len(doc.Results), len(doc.Sentinels.Replaced))
		}
	})
	t.Run("rerun", func(t *testing.T) {
		d := &device{clock: t0, rate: 1000, steps: []step{{change, 0.5}}}
		doc, err := watchedSweep(t, d, results.DriftRerun)
		if err != nil {
			t.Fatal(err)
		}
		// Every cell measured before the change and marked was measured
		// again once the device was steady: no mark is uncertain.
		checkMarks(t, doc, change, false)
		if len(doc.Results) != 14 || len(doc.Sentinels.Replaced) == 0 {
			t.Errorf("%d results, %d replaced: ran %v", len(doc.Results), len(doc.Sentinels.Replaced), d.ran)
		}
		for _, r := range doc.Results {
			if m := r.DeviceChanged; m != nil && m.InShift {
				t.Errorf("%s left in the interval of the move", r.Name)
			}
		}
	})
	t.Run("rerun, back", func(t *testing.T) {
		// A dip the device comes back from: every cell it touched is
		// measured again at the reference's rate, and none stays marked.
		d := &device{clock: t0, rate: 1000, steps: []step{{change, 0.5}, {change.Add(6 * time.Second), 1}}}
		doc, err := watchedSweep(t, d, results.DriftRerun)
		if err != nil {
			t.Fatal(err)
		}
		if m := marks(doc); m != strings.Repeat(".", 14) || len(doc.Sentinels.Replaced) == 0 {
			t.Errorf("marks %q, %d replaced; ran %v", m, len(doc.Sentinels.Replaced), d.ran)
		}
	})
	t.Run("stop", func(t *testing.T) {
		d := &device{clock: t0, rate: 1000, steps: []step{{change, 0.5}}}
		doc, err := watchedSweep(t, d, results.DriftStop)
		var stopped *DriftStopped
		if !errors.As(err, &stopped) || !errors.Is(err, ErrDeviceChanged) || stopped.Run.ChangePct != -50 {
			t.Fatalf("err %v, want the device changed by -50 %%", err)
		}
		last := doc.Sentinels.Runs[len(doc.Sentinels.Runs)-1]
		if last.Level != results.LevelChanged || len(doc.Results) == 14 {
			t.Errorf("stopped with %d results, last run %s", len(doc.Results), last.Level)
		}
		for _, r := range doc.Results {
			if startOf(r).After(startOf(last.Result)) {
				t.Errorf("%s measured after the run that stopped the sweep", r.Name)
			}
		}
	})
}
