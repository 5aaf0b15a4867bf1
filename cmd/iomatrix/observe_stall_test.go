package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// On this project's cgroup v1 hosts the host's pressure is the only
// one: observe records /proc/pressure/io as a series of its own, whose
// stall is what the kernel counted between two readings taken around
// the observation, every share between 0 and 100; the system says its
// stall is the host's and has no stall counters of its own.
func TestObserveHostPressure(t *testing.T) {
	g := blkioGroup(t, "stall")
	_, err := os.Stat("/proc/pressure/io")
	testenv.Require(t, err == nil, "no /proc/pressure/io (PSI disabled at boot, or a kernel before 4.20)")
	disk := testenv.RAMDisk(t, 32<<20)
	out := filepath.Join(t.TempDir(), "obs.json")

	before := hostPressure(t)
	_, interrupt := startObserve(t, disk, "--cgroup", g+"=reader", "--interval", "250ms", "--save-every", "250ms",
		"--v1-enable-counters", "-o", out, "-q")
	waitBaseline(t, out)
	readIn(t, g, disk, 500)
	waitObserved(t, out, "4 intervals of the host's pressure", func(doc *results.Observation) bool {
		return doc.HostPressure != nil && doc.HostPressure.Seconds.Len() >= 4
	})
	interrupt()
	after := hostPressure(t)
	doc := readObservation(t, out)

	h := doc.HostPressure
	if h == nil || h.Kind != results.KindPressure || h.Summary == nil {
		t.Fatalf("host pressure %+v", h)
	}
	sum := h.Summary
	t.Logf("host stall: some %.2f %% full %.2f %% over %d intervals (per-second some p50 %.2f max %.2f); kernel's totals moved some %d µs full %d µs, the document's %d and %d",
		sum.Mean[results.FigureStallSome], sum.Mean[results.FigureStallFull], sum.Intervals,
		sum.PerSecond[results.FigureStallSome].P50, sum.PerSecond[results.FigureStallSome].Max,
		after.Some.TotalUS-before.Some.TotalUS, after.Full.TotalUS-before.Full.TotalUS,
		h.Totals[results.CounterStallSome], h.Totals[results.CounterStallFull])
	for _, c := range []struct {
		counter string
		moved   uint64
	}{{results.CounterStallSome, after.Some.TotalUS - before.Some.TotalUS}, {results.CounterStallFull, after.Full.TotalUS - before.Full.TotalUS}} {
		// The observation's intervals lie between the two readings.
		if got := h.Totals[c.counter]; got > c.moved {
			t.Errorf("the host's %s: %d µs in the document, the kernel's total moved %d around it", c.counter, got, c.moved)
		}
	}
	for _, f := range []string{results.FigureStallSome, results.FigureStallFull} {
		vals := []float64{sum.Mean[f]}
		for _, sp := range []results.Spread3{sum.PerSecond[f], sum.PerMinute[f]} {
			vals = append(vals, sp.P50, sp.P95, sp.P99, sp.Max)
		}
		for _, v := range vals {
			if v < 0 || v > 100 {
				t.Errorf("the host's %s: %v, not a share of time (%v)", f, v, vals)
			}
		}
		if _, ok := sum.PerSecond[f]; !ok {
			t.Errorf("no per-second %s", f)
		}
	}
	if h.Totals[results.CounterStallSome] < h.Totals[results.CounterStallFull] {
		t.Errorf("the host stalled all its tasks (%d µs) longer than some (%d µs)", h.Totals[results.CounterStallFull], h.Totals[results.CounterStallSome])
	}

	s := systemOf(t, doc, "reader")
	if s.Pressure != results.PressureHost || s.IO.Totals["rios"] != 500 {
		t.Errorf("reader: pressure %q, %d reads; want the host's, 500", s.Pressure, s.IO.Totals["rios"])
	}
	if _, ok := s.IO.Totals[results.CounterStallSome]; ok {
		t.Errorf("a v1 cgroup with stall counters: %v", s.IO.Totals)
	}
	if !anyContains(doc.Accounting.Notes, "Cgroup v1 keeps no pressure per cgroup") {
		t.Errorf("accounting notes %q", doc.Accounting.Notes)
	}
	r := runIomatrix(t, iomatrixCmd(t, "report", out))
	if r.code != 0 {
		t.Fatalf("report: exit %d: %s", r.code, r.stderr)
	}
	text := r.stdout
	for _, want := range []string{"host pressure (/proc/pressure/io)", "stall some %",
		"stall: cgroup v1 keeps no pressure per cgroup; the host's pressure stands for it"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the report:\n%s", want, text)
		}
	}
}

func hostPressure(t *testing.T) sysfs.Pressure {
	t.Helper()
	p, err := sysfs.Default().IOPressure()
	testenv.Must(t, err)
	return p
}
