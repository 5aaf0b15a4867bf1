package main

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/vmtest"
	"github.com/iomatrix/iomatrix/results"
)

// The stall a cap causes, on a pure cgroup v2 kernel: systems read the
// same drive with direct I/O, one read at a time. Two are held to
// stallCap reads a second by io.max, so that each one's one task waits
// on the cap nearly all the time; the third, uncapped, reads about as
// often in short paced bursts and waits on nothing but the drive's own
// (emulated, sub-millisecond) service. The capped ones stall most of
// their time, the free one hardly at all: stall is time lost, not I/Os.
//
// One of the capped readers is pinned to a CPU, the other free to move:
// the kernel weighs each CPU's stall by how busy that CPU was, so a task
// stalled all the time but spread evenly over two CPUs reads as half the
// time (a² + (1-a)² of it for shares a and 1-a), and only a pinned one
// as all of it.
const (
	stallCap = 50
	// Bounds of the shares, in percent of wall time (some; a system of
	// one task stalls fully when it stalls). Measured in this guest over
	// three boots (the test logs them): pinned 97.9-99.0 % (its
	// intervals 96.4-100 %), moving 70-81 % (its intervals 49-99 %), free
	// 0.2-0.7 % (its intervals at most 3.4 %), the host 82-94 %; in a
	// boot with the moving reader alone capped, it stalled 59 % (its
	// intervals 48-98 %).
	pinnedMinPct = 85
	movingMinPct = 40
	freeMaxPct   = 10
)

func TestVMObserveStall(t *testing.T) {
	script := vmObservePrelude + `found
host $CG/obs-pinned $CG/obs-moving $CG/obs-free || exit 9
for g in pinned moving; do
	echo "$DEV0 riops=` + strconv.Itoa(stallCap) + `" >$CG/obs-$g/io.max || exit 9
	say "io.max $g $(cat $CG/obs-$g/io.max)"
done
say "pressure $(cat /proc/pressure/io | tr '\n' ' ')"
# empty CGROUP: no process left in it.
empty() { n=0; until [ -z "$(cat $CG/$1/cgroup.procs)" ]; do n=$((n+1)); [ $n -lt 300 ] || return 1; sleep 0.05; done; }
# The starved systems: back-to-back direct reads, each held by the cap,
# one of them on CPU 1 alone.
inside obs-pinned taskset 2 dd if=/dev/nvme0n1 of=/dev/null bs=4k count=1000000 iflag=direct 2>/dev/null &
inside obs-moving dd if=/dev/nvme0n1 of=/dev/null bs=4k count=1000000 iflag=direct 2>/dev/null &
# The free one: five direct reads every tenth of a second, uncapped.
inside obs-free sh -c 'n=0; while :; do dd if=/dev/nvme0n1 of=/dev/null bs=4k count=5 skip=$n iflag=direct 2>/dev/null; n=$((n+5)); sleep 0.1; done' &
counted obs-pinned ` + strconv.Itoa(stallCap) + ` && counted obs-moving ` + strconv.Itoa(stallCap) + ` && counted obs-free 20 || say "the loads never started"
observe nvme0n1 --cgroup /obs-pinned=pinned --cgroup /obs-moving=moving --cgroup /obs-free=free --duration 5s -o /tmp/stall.json; rc=$?
for g in pinned moving free; do echo 1 >$CG/obs-$g/cgroup.kill; done
empty obs-pinned && empty obs-moving && empty obs-free || say "the loads did not end"
finish $rc /tmp/stall.json unhost $CG/obs-pinned $CG/obs-moving $CG/obs-free`
	rs := vmtest.Boot(t, vmtest.Guest{Drives: []vmtest.Drive{{Size: 1 << 30}, {Size: 1 << 30}}},
		[]vmtest.Case{{Name: "stall", Script: script}})
	r := rs[0]
	doc := observation(t, r, results.StopDuration)
	if doc == nil {
		t.Fatal("no observation document (above)")
	}
	defer func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", r.Stderr)
		}
	}()
	t.Logf("guest: %s", vmcaseLine(r, "pressure"))
	for _, g := range []string{"pinned", "moving"} {
		got, err := cgroup.ParseIOMax(strings.NewReader(vmcaseLine(r, "io.max "+g)))
		if want := (cgroup.Limit{Device: guestDev(t, r), ReadIOPS: stallCap}); err != nil || got[want.Device] != want {
			t.Errorf("%s's io.max read %v (%v), want %q", g, got, err, want)
		}
	}
	if strings.Contains(r.Stderr, "vmcase: the loads") {
		t.Fatalf("the loads failed:\n%s", r.Stderr)
	}
	for _, c := range []struct {
		system   string
		min, max float64 // bounds of the mean stall some, in percent
		capped   bool
	}{{"pinned", pinnedMinPct, 100, true}, {"moving", movingMinPct, 100, true}, {"free", 0, freeMaxPct, false}} {
		s := systemOf(t, doc, c.system)
		sum := s.IO.Summary
		some, full := sum.Mean[results.FigureStallSome], sum.Mean[results.FigureStallFull]
		t.Logf("%s: %.1f reads/s; stall some %.1f %% (its intervals %.1f-%.1f %%, p50 %.1f), full %.1f %%; %d intervals",
			c.system, sum.Mean["reads"], some, minShare(s.IO.Seconds, results.CounterStallSome), sum.PerSecond[results.FigureStallSome].Max,
			sum.PerSecond[results.FigureStallSome].P50, full, sum.Intervals)
		if s.Pressure != results.PressureCgroup {
			t.Errorf("%s: pressure %q, want its cgroup's", c.system, s.Pressure)
		}
		// Each read throughout: the free one's small share is not
		// idleness, and the capped ones are held to the cap.
		if r := sum.Mean["reads"]; r < 10 || c.capped && r > 1.1*stallCap {
			t.Errorf("%s: %.1f reads/s (capped at %d: %v)", c.system, r, stallCap, c.capped)
		}
		if some < c.min || some > c.max {
			t.Errorf("%s stalled %.1f %% of the time (some), want %.0f to %.0f %%", c.system, some, c.min, c.max)
		}
		// A system of one task: when it stalls, all its tasks do.
		if math.Abs(full-some) > 1 {
			t.Errorf("%s: stall full %.1f %%, some %.1f %%: one task stalls fully whenever it stalls", c.system, full, some)
		}
		// The capped ones in every interval, not just on the mean:
		// at least half of the time the task waited (the most the
		// kernel's weighing over two CPUs takes away), less what its
		// reads themselves cost.
		if low := minShare(s.IO.Seconds, results.CounterStallSome); c.capped && low < movingMinPct*0.75 {
			t.Errorf("%s: an interval in which it stalled %.1f %% of the time", c.system, low)
		}
	}
	h := doc.HostPressure
	if h == nil || h.Summary == nil {
		t.Fatalf("no host pressure in the guest's observation")
	}
	hs := h.Summary.Mean[results.FigureStallSome]
	t.Logf("host: stall some %.1f %%, full %.1f %%", hs, h.Summary.Mean[results.FigureStallFull])
	// The host holds the capped tasks' stall too.
	if hs < movingMinPct || hs > 100 {
		t.Errorf("the host stalled %.1f %% of the time, with two tasks that wait on most of it", hs)
	}
	if !strings.Contains(r.Stderr, "host pressure (/proc/pressure/io)") || !strings.Contains(r.Stderr, "stall some %") {
		t.Errorf("observe's report has no stall:\n%s", r.Stderr)
	}
}

// minShare is the smallest share of an interval's time a stall counter
// holds, in percent.
func minShare(tl results.Timeline, counter string) float64 {
	low := 100.0
	for i := range tl.Len() {
		low = min(low, tl.Rate(counter, i)/1e4)
	}
	return low
}
