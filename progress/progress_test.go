package progress

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

func TestAppendDurationMatchesString(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, 59 * time.Second, time.Minute, 61 * time.Second,
		10 * time.Minute, time.Hour, 3*time.Hour + 2*time.Minute + 1*time.Second, 1500 * time.Millisecond, 250 * time.Millisecond, -time.Second} {
		if got := string(appendDuration(nil, d)); got != d.String() {
			t.Errorf("appendDuration(%v) = %q", d, got)
		}
	}
}

// A run left on a terminal redraws its line every second for hours: the
// redraw must not allocate, or the heap would creep (issue: soak RSS).
func TestLiveLineRedrawAllocatesNothing(t *testing.T) {
	var out bytes.Buffer
	l := NewLine(&out, true)
	p := iotest.Progress{Pattern: results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: 256, Jobs: 4},
		Elapsed: 75 * time.Second, IOPS: 123456.7}
	o := iotest.Options{Runtime: 10 * time.Minute, Ramp: 5 * time.Second}
	l.Pattern(p, o)
	want := "\r\033[Krand-4k-r50-qd256-j4  1m15s / 10m0s  123,457 IOPS"
	if out.String() != want {
		t.Fatalf("line %q, want %q", out.String(), want)
	}
	l.w = io.Discard
	if n := testing.AllocsPerRun(100, func() { l.Pattern(p, o) }); n != 0 {
		t.Errorf("%v allocations per redraw", n)
	}
	p.Ramping, p.Elapsed = true, 2*time.Second
	out.Reset()
	l.w = &out
	l.Pattern(p, o)
	if want := "\r\033[Krand-4k-r50-qd256-j4  ramp 2s / 5s  123,457 IOPS"; out.String() != want {
		t.Errorf("ramp line %q, want %q", out.String(), want)
	}
}

// The sweep's ETA: from the plan before any auto pattern ends ("up to"),
// then from what the patterns really took.
func TestSweepETAWithAuto(t *testing.T) {
	start := time.Now()
	prog := &Sweep{w: io.Discard, total: 10, per: 21 * time.Second, auto: true, started: start, patAt: start}
	if got := prog.etaText(start); got != "up to 3m30s" {
		t.Errorf("before any pattern: %s", got)
	}
	prog.done, prog.ran, prog.ranFor, prog.patAt = 4, 4, 28*time.Second, start.Add(28*time.Second)
	if left, upTo := prog.eta(prog.patAt); upTo || left != 6*7*time.Second {
		t.Errorf("after 4 patterns of 7s: %s (up to %v), want 42s", left, upTo)
	}
	prog.auto = false // a fixed runtime never expects less than its plan
	if left, _ := prog.eta(prog.patAt); left != 6*21*time.Second {
		t.Errorf("fixed: %s, want 2m6s", left)
	}
}

// A pattern that completed no I/O has no latency: its line says so
// rather than showing p99 0 µs.
func TestSweepLineNoIO(t *testing.T) {
	var b bytes.Buffer
	prog := NewSweep(&b, false, 2, 0, iotest.Options{})
	prog.Finished(results.Result{Name: "rand-4k-r100-qd1"})
	if s := b.String(); !strings.Contains(s, "p99 - (no I/O)") || strings.Contains(s, "0 µs") {
		t.Errorf("line %q", s)
	}
}

// An open-loop cell's line leads with what a rate run is about: the rate
// offered, whether it was sustained, and the response time.
func TestSweepLineOpenLoop(t *testing.T) {
	var b bytes.Buffer
	prog := NewSweep(&b, false, 2, 0, iotest.Options{})
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 4, Jobs: 1, Rate: results.Rate{IOPS: 8000}}
	r := results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOs: 8000, IOPS: 7990,
		LatNS: &results.Latency{P99: 90000, Count: 8000}, ResponseLatNS: &results.Latency{P99: 250000, Count: 8000}},
		Rate: &results.RateStats{TargetIOPS: 8000, AchievedIOPS: 7990, Sustained: false, MaxBacklog: 12}}
	prog.Finished(r)
	if s := b.String(); !strings.Contains(s, "7,990 IOPS") || !strings.Contains(s, "of 8,000 offered (not sustained, backlog 12), response p99 250 µs") {
		t.Errorf("line %q", s)
	}
}
