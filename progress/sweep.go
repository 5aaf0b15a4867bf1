package progress

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// Sweep shows where a sweep is. With a terminal: a bar over the
// patterns with the current one, its live IOPS, elapsed time and ETA.
// Without one: one plain line per finished pattern, no control characters.
type Sweep struct {
	w       io.Writer
	total   int
	done    int
	per     time.Duration // planned time of one pattern; with auto, its most
	auto    bool          // patterns end when their figures are known
	started time.Time     // of this session's first pattern
	ran     int           // patterns run in this session
	ranFor  time.Duration // and the time they took
	current results.Pattern
	patAt   time.Time
	bar     *progressbar.ProgressBar
	// Frames, when set, receives a progress frame after each pattern.
	Frames io.Writer
	mu     sync.Mutex // live() runs on the engine's coordinator goroutine
	// sentinel is set while a sentinel runs; changed while the last
	// sentinel found the device changed: the cells measured now will be
	// marked.
	sentinel, changed bool
}

// NewSweep shows a loop over total patterns, done of them already
// measured, each in o's window, on w; with a bar when tty (w is a
// terminal).
func NewSweep(w io.Writer, tty bool, total, done int, o iotest.Options) *Sweep {
	prog := &Sweep{w: w, total: total, done: done, per: o.Runtime + o.Ramp, auto: o.Auto != nil, started: time.Now()}
	if tty {
		prog.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(20),
			progressbar.OptionSetPredictTime(false), // our ETA knows the plan
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		_ = prog.bar.Set(done)
	}
	return prog
}

// eta is the time left for the whole sweep: the planned time of what
// remains, stretched by the overhead seen so far. Auto patterns take what
// they take: the remaining ones are expected to take what those done in
// this session took on average, and up to their maximum before any is
// done (then upTo is set).
func (prog *Sweep) eta(now time.Time) (left time.Duration, upTo bool) {
	per := prog.per
	switch {
	case prog.ran > 0 && prog.auto:
		per = prog.ranFor / time.Duration(prog.ran)
	case prog.ran > 0:
		per = max(per, prog.ranFor/time.Duration(prog.ran))
	}
	left = time.Duration(prog.total-prog.done)*per - now.Sub(prog.patAt)
	return max(left, 0), prog.auto && prog.ran == 0
}

// etaText is eta in words: "3m20s", or "up to 48m" while it is a bound.
func (prog *Sweep) etaText(now time.Time) string {
	left, upTo := prog.eta(now)
	if upTo {
		return "up to " + left.Round(time.Second).String()
	}
	return left.Round(time.Second).String()
}

func (prog *Sweep) Start(p results.Pattern) {
	prog.mu.Lock()
	defer prog.mu.Unlock()
	prog.current, prog.patAt, prog.sentinel = p, time.Now(), false
	if prog.ran == 0 {
		prog.started = prog.patAt
	}
	prog.describe("starting", 0)
}

// SentinelStart shows a run of the sweep's sentinel starting: not a
// pattern of the sweep, and not counted as one.
func (prog *Sweep) SentinelStart(p results.Pattern) {
	prog.mu.Lock()
	defer prog.mu.Unlock()
	prog.current, prog.sentinel = p, true
	if prog.ran == 0 {
		prog.started, prog.patAt = time.Now(), time.Now()
	}
	prog.describe("starting", 0)
}

// SentinelDone shows the judgement of run i of doc's sentinels: a line
// of its own (above the bar on a terminal), and a line for each move of
// the device it found.
func (prog *Sweep) SentinelDone(doc *results.Document, i int) {
	prog.mu.Lock()
	defer prog.mu.Unlock()
	prog.sentinel = false
	prog.changed = doc.Sentinels.Runs[i].Level == results.LevelChanged
	lines := []string{report.DescribeSentinelRun(doc, i)}
	for _, sh := range doc.Sentinels.Changes {
		if sh.ToRun == i {
			d := report.DescribeShift(doc, sh)
			lines = append(lines, strings.ToUpper(d[:1])+d[1:])
		}
	}
	if prog.bar != nil {
		_ = prog.bar.Clear()
		fmt.Fprint(prog.w, "\r\033[K")
	}
	for _, l := range lines {
		fmt.Fprintln(prog.w, l)
	}
}

// Reruns counts n cells measured again in the sweep's total.
func (prog *Sweep) Reruns(n int) {
	prog.mu.Lock()
	defer prog.mu.Unlock()
	prog.total += n
	if prog.bar != nil {
		prog.bar.ChangeMax(prog.total)
	}
}

func (prog *Sweep) Live(p iotest.Progress) {
	prog.mu.Lock()
	defer prog.mu.Unlock()
	phase := "measuring"
	if p.Ramping {
		phase = "ramp"
	}
	if prog.sentinel {
		phase = "sentinel"
	}
	prog.describe(phase, p.IOPS)
}

func (prog *Sweep) describe(phase string, iops float64) {
	if prog.bar == nil {
		return
	}
	now := time.Now()
	changed := ""
	if prog.changed {
		changed = " | DEVICE CHANGED"
	}
	prog.bar.Describe(fmt.Sprintf("%-22s %-9s %9s IOPS | elapsed %s | ETA %s%s", prog.current.Name(), phase,
		units.Thousands(iops, 0), now.Sub(prog.started).Round(time.Second), prog.etaText(now), changed))
}

func (prog *Sweep) Finished(r results.Result) {
	prog.mu.Lock()
	defer prog.mu.Unlock()
	prog.done++
	prog.ran++
	now := time.Now()
	prog.ranFor = now.Sub(prog.started)
	// The figures the matrices show for this result, by the same rule.
	iops, iopsFlags := report.IOPS.Measure(r)
	if prog.Frames != nil {
		_ = results.WriteProgressFrame(prog.Frames, results.FrameProgress{Done: prog.done, Total: prog.total, Pattern: r.Name, IOPS: iops})
	}
	if prog.bar != nil {
		_ = prog.bar.Set(prog.done)
		return
	}
	p99 := "p99 - (no I/O)"
	if !report.LatP99.Absent(r) {
		v, f := report.LatP99.Measure(r)
		p99 = "p99 " + report.FormatMeasure(report.LatP99, v, f) + " µs"
	}
	if report.OpenLoop(r) {
		p99 = openLoopFigures(r)
	}
	window := ""
	if r.Stop == results.StopConverged || r.Stop == results.StopMaxRuntime {
		window = fmt.Sprintf(", %s after %s", r.Stop, time.Duration(r.DurationNS).Round(time.Second))
	}
	if prog.changed {
		// Marked once the next sentinel has run.
		iopsFlags |= report.FlagDeviceChanged
		window += ", on the changed device"
	}
	fmt.Fprintf(prog.w, "[%d/%d] %s: %s IOPS, %s MiB/s, %s%s (elapsed %s, ETA %s)\n",
		prog.done, prog.total, r.Name, report.FormatMeasure(report.IOPS, iops, iopsFlags), units.Thousands(r.Total.MiBPerS, 1),
		p99, window, now.Sub(prog.started).Round(time.Second), prog.etaText(now))
}

// openLoopFigures are an open-loop result's figures after its IOPS: the
// rate offered and whether it was sustained, and the response time's p99
// (its headline), by the rule of the load–latency tables.
func openLoopFigures(r results.Result) string {
	offered, state := r.Pattern.Rate.Total(), "no schedule recorded"
	if s := r.Rate; s != nil {
		offered, state = s.TargetIOPS, "sustained"
		if !s.Sustained {
			state = fmt.Sprintf("not sustained, backlog %d", s.MaxBacklog)
		}
	}
	p99 := "response p99 - (no I/O)"
	if v, f, service := report.ResponseMeasure(r, report.LatP99); !math.IsNaN(v) {
		p99 = "response p99 " + report.FormatMeasure(report.LatP99, v, f) + " µs"
		if service {
			p99 = "p99 " + report.FormatMeasure(report.LatP99, v, f) + " µs (service time: no response time recorded)"
		}
	}
	return fmt.Sprintf("of %s offered (%s), %s", units.Thousands(offered, 0), state, p99)
}

// Precondition shows the steps before the first pattern: on the bar, or
// as one line per finished step.
func (prog *Sweep) Precondition(st iotest.PreconditionStep) {
	prog.mu.Lock()
	defer prog.mu.Unlock()
	if prog.bar != nil {
		prog.bar.Describe(fmt.Sprintf("precondition %-13s %3.0f%% %9s IOPS", st.Phase, 100*min(st.Done, 1), units.Thousands(st.IOPS, 0)))
		return
	}
	if st.Done >= 1 {
		fmt.Fprintf(prog.w, "precondition: %s done, %s IOPS\n", st.Phase, units.Thousands(st.IOPS, 0))
	}
}

// Preconditioned shows the end of the preconditioning.
func (prog *Sweep) Preconditioned(took time.Duration) {
	prog.mu.Lock()
	defer prog.mu.Unlock()
	if prog.bar == nil {
		fmt.Fprintf(prog.w, "precondition: finished in %s\n", took.Round(time.Second))
	}
}

func (prog *Sweep) Close() {
	if prog.bar != nil {
		_ = prog.bar.Clear()
		fmt.Fprint(prog.w, "\r\033[K")
	}
}

// Plan is the line that starts a sweep of profile: how many of its total
// patterns are still to run, and how long that takes at o's window
// (estimate; with auto, at most that).
func Plan(profile string, todo, total int, o iotest.Options, estimate time.Duration) string {
	if a := o.Auto; a != nil {
		return fmt.Sprintf("sweep %s: %d of %s to run, up to %s: each runs until its IOPS are steady and within ±%s %%, "+
			"%s to %s, + %s ramp", profile, todo, units.Count(total, "pattern"), estimate,
			strconv.FormatFloat(a.Precision*100, 'f', -1, 64), a.MinRuntime, a.MaxRuntime, o.Ramp)
	}
	return fmt.Sprintf("sweep %s: %d of %s to run, about %s at %s + %s ramp each",
		profile, todo, units.Count(total, "pattern"), estimate, o.Runtime, o.Ramp)
}
