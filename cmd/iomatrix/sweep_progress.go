package main

import (
	"fmt"
	"github.com/iomatrix/iomatrix/internal/units"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// sweepProgress shows where a sweep is. With a terminal: a bar over the
// patterns with the current one, its live IOPS, elapsed time and ETA.
// Without one: one plain line per finished pattern, no control characters.
type sweepProgress struct {
	g       *globalOptions
	total   int
	done    int
	per     time.Duration // planned time of one pattern
	started time.Time     // of this session's first pattern
	ran     int           // patterns run in this session
	ranFor  time.Duration // and the time they took
	current results.Pattern
	patAt   time.Time
	bar     *progressbar.ProgressBar
	mu      sync.Mutex // live() runs on the engine's coordinator goroutine
}

func newSweepProgress(g *globalOptions, total, done int, o iotest.Options) *sweepProgress {
	sp := &sweepProgress{g: g, total: total, done: done, per: o.Runtime + o.Ramp, started: time.Now()}
	if g.stderrTTY {
		sp.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(g.stderr),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(20),
			progressbar.OptionSetPredictTime(false), // our ETA knows the plan
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		_ = sp.bar.Set(done)
	}
	return sp
}

// eta is the time left for the whole sweep: the planned time of what
// remains, stretched by the overhead seen so far.
func (sp *sweepProgress) eta(now time.Time) time.Duration {
	per := sp.per
	if sp.ran > 0 {
		per = max(per, sp.ranFor/time.Duration(sp.ran))
	}
	left := time.Duration(sp.total-sp.done)*per - now.Sub(sp.patAt)
	return max(left, 0)
}

func (sp *sweepProgress) start(p results.Pattern) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.current, sp.patAt = p, time.Now()
	if sp.ran == 0 {
		sp.started = sp.patAt
	}
	sp.describe("starting", 0)
}

func (sp *sweepProgress) live(p iotest.Progress) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	phase := "measuring"
	if p.Ramping {
		phase = "ramp"
	}
	sp.describe(phase, p.IOPS)
}

func (sp *sweepProgress) describe(phase string, iops float64) {
	if sp.bar == nil {
		return
	}
	now := time.Now()
	sp.bar.Describe(fmt.Sprintf("%-22s %-9s %9s IOPS | elapsed %s | ETA %s", sp.current.Name(), phase,
		units.Thousands(iops, 0), now.Sub(sp.started).Round(time.Second), sp.eta(now).Round(time.Second)))
}

func (sp *sweepProgress) finished(r results.Result) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.done++
	sp.ran++
	now := time.Now()
	sp.ranFor = now.Sub(sp.started)
	if sp.bar != nil {
		_ = sp.bar.Set(sp.done)
		return
	}
	// The p99 the matrices show for this result, by the same rule.
	p99, approx := report.LatP99.Measure(r)
	fmt.Fprintf(sp.g.stderr, "[%d/%d] %s: %s IOPS, %s MiB/s, p99 %s µs (elapsed %s, ETA %s)\n",
		sp.done, sp.total, r.Name, units.Thousands(r.Total.IOPS, 0), units.Thousands(r.Total.MiBPerS, 1),
		report.FormatMeasure(report.LatP99, p99, approx), now.Sub(sp.started).Round(time.Second),
		sp.eta(now).Round(time.Second))
}

// precondition shows the steps before the first pattern: on the bar, or
// as one line per finished step.
func (sp *sweepProgress) precondition(st iotest.PreconditionStep) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.bar != nil {
		sp.bar.Describe(fmt.Sprintf("precondition %-13s %3.0f%% %9s IOPS", st.Phase, 100*min(st.Done, 1), units.Thousands(st.IOPS, 0)))
		return
	}
	if st.Done >= 1 {
		fmt.Fprintf(sp.g.stderr, "precondition: %s done, %s IOPS\n", st.Phase, units.Thousands(st.IOPS, 0))
	}
}

func (sp *sweepProgress) preconditioned(took time.Duration) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.bar == nil {
		fmt.Fprintf(sp.g.stderr, "precondition: finished in %s\n", took.Round(time.Second))
	}
}

func (sp *sweepProgress) close() {
	if sp.bar != nil {
		_ = sp.bar.Clear()
		fmt.Fprint(sp.g.stderr, "\r\033[K")
	}
}
