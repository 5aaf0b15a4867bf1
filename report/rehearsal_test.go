package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// A rehearsal's document renders as its systems, not as a matrix: each
// system's schedule against what it achieved, its p99 response and its
// bounds, why one does not fit, and both verdicts when they differ.
func TestRehearsalText(t *testing.T) {
	p := results.Pattern{Access: results.Random, BlockSize: 8192, ReadPct: 80, QueueDepth: 16, Jobs: 1,
		Rate: results.Rate{ReadIOPS: 4000, WriteIOPS: 1000, Arrival: results.ArrivalUniform}}
	doc := &results.Document{Settings: results.Settings{RuntimeNS: 10e9, RampNS: 2e9},
		Results: []results.Result{{Name: "erp", Pattern: p, Total: results.Total{ResponseLatNS: &results.Latency{P99: 812_000}}},
			{Name: "web", Pattern: p, Total: results.Total{ResponseLatNS: &results.Latency{P99: 250_000_000}}}},
		Rehearsal: &results.Rehearsal{LookupFits: true, WithCaps: true, Systems: []results.RehearsedSystem{
			{Name: "erp", Result: "erp", ReadIOPS: 4000, WriteIOPS: 1000, BlockSize: 8192, ScheduledIOPS: 5000, AchievedIOPS: 4999,
				DeviationPct: -0.02, Sustained: true, ResponseP99US: 812, Fits: true, Cap: &results.Cap{ReadIOPS: 6000, WriteIOPS: 1500},
				Latency: []results.RehearsedBound{{Bound: "p99<2ms", US: 812, Holds: true}}},
			{Name: "web", Result: "web", ReadIOPS: 4000, WriteIOPS: 1000, BlockSize: 8192, ScheduledIOPS: 5000, AchievedIOPS: 3100,
				DeviationPct: -38, ResponseP99US: 250000, Why: "rate not sustained"},
		}}}
	var b bytes.Buffer
	if err := writeText(&b, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"rehearsal of 2 systems at once, uniform arrivals — 10s runtime + 2s ramp, each system under its own cap\n",
		"| erp ", "6,000 r + 1,500 w", "4,999", "-0.02 %", "812 µs", "p99<2ms: 812 µs holds", "FITS",
		"| web ", "250,000 µs", "DOES NOT FIT", "web: rate not sustained\n",
		"rehearsal: DOES NOT FIT, but the lookup says FITS: the measurement decides"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "QD16 ") || strings.Contains(out, "random 8 KiB") {
		t.Errorf("a rehearsal rendered as a matrix:\n%s", out)
	}
	// The page holds the same table and verdict, and no load–latency
	// curve: each system is one load of a shape of its own.
	b.Reset()
	if err := writeHTML(&b, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"rehearsal of 2 systems at once, uniform arrivals", "<th>erp</th>", "p99&lt;2ms: 812 µs holds",
		"web: rate not sustained", "rehearsal: DOES NOT FIT, but the lookup says FITS"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "load–latency") {
		t.Error("the page draws the rehearsal's systems as load–latency curves")
	}
	doc.Rehearsal.Systems = doc.Rehearsal.Systems[:1]
	doc.Rehearsal.Fits = true
	b.Reset()
	if err := writeMarkdown(&b, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "### rehearsal of 1 system at once, uniform arrivals — ") || !strings.Contains(b.String(), "rehearsal: FITS (the lookup agrees)") {
		t.Errorf("markdown:\n%s", b.String())
	}
}

// A system that replayed its observed shape says so under the table.
func TestRehearsalReplayedLine(t *testing.T) {
	r := &results.ReplayedShape{Timeline: "obs.json: erp io", Steps: 8, StepNS: 5e8, Speed: 2, BSSplit: "4k/50:16k/50,16k/100", Sync: "fdatasync:4:after"}
	want := "its timeline (obs.json: erp io, 8 steps of 500ms at speed 2), its size mix 4k/50:16k/50,16k/100, its durable writes as fdatasync:4:after"
	if got := ReplayedLine(r); got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
	if ReplayedLine(nil) != "" || ReplayedLine(&results.ReplayedShape{}) != "" {
		t.Error("a flat system described")
	}
}
