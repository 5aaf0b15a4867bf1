package capverify

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/results"
)

func TestJudge(t *testing.T) {
	writes := func(n uint64) *results.Counts { return &results.Counts{Writes: n} }
	rw := func(r, w uint64) *results.Counts { return &results.Counts{Reads: r, Writes: w} }
	wcap := cgroup.Limit{WriteIOPS: 1000}
	both := cgroup.Limit{ReadIOPS: 10000, WriteIOPS: 10000}
	for _, tc := range []struct {
		name string
		l    cgroup.Limit
		c    Cell
		tol  float64
		ok   bool
		// inconclusive: neither ok nor failed (another process's load)
		inconclusive bool
		expected     float64
		binding      bool
		reason       string // a fragment of the first reason when not ok
		foreign      results.Counts
	}{
		{name: "write cell at the cap", l: wcap, tol: 5, ok: true, expected: 1000, binding: true,
			c: Cell{ReadPct: 0, BlockSize: 16 << 10, UncappedIOPS: 7780, MeasuredIOPS: 1000, Issued: results.Counts{Writes: 3101}, Kernel: writes(3101)}},
		// Recorded: the worker's own page faults charged to the cgroup
		// (a cold test binary on the target's disk).
		{name: "foreign reads are shown, never absorbed", l: wcap, tol: 5, ok: false, expected: 1000, binding: true,
			c:       Cell{ReadPct: 0, BlockSize: 16 << 10, UncappedIOPS: 9463, MeasuredIOPS: 1000, Issued: results.Counts{Writes: 4008}, Kernel: rw(110, 4008)},
			reason:  "110 foreign",
			foreign: results.Counts{Reads: 110}},
		{name: "one foreign read on an idle direction", l: wcap, tol: 5, ok: false, expected: 1000, binding: true,
			c:       Cell{ReadPct: 0, BlockSize: 16 << 10, UncappedIOPS: 9463, MeasuredIOPS: 993, Issued: results.Counts{Writes: 1368}, Kernel: rw(1, 1368)},
			reason:  "1 foreign",
			foreign: results.Counts{Reads: 1}},
		// Recorded: a window whose edges sat on throttle-slice boundaries
		// counted one burst too many.
		{name: "one burst too many", l: wcap, tol: 5, ok: false, expected: 1000, binding: true,
			c:      Cell{ReadPct: 0, BlockSize: 16 << 10, UncappedIOPS: 40202, MeasuredIOPS: 1050.5, Issued: results.Counts{Writes: 3131}, Kernel: writes(3131), Runtime: 3 * time.Second},
			reason: "+5.0 %, tolerance 5 %)"}, // one direction: no carry-over
		// Recorded: a 1 s window of a 50 % pattern at QD1 under
		// riops=wiops=400 (file on a loaded disk) moved 423 reads: writes
		// had bound earlier, and reads spent what they had saved.
		{name: "a mixed window within the carry-over", l: cgroup.Limit{ReadIOPS: 400, WriteIOPS: 400}, tol: 5, ok: true, expected: 769.74, binding: true,
			c: Cell{ReadPct: 50, BlockSize: 16 << 10, UncappedIOPS: 4377, MeasuredIOPS: 814, Window: results.Counts{Reads: 423, Writes: 391},
				Issued: results.Counts{Reads: 521, Writes: 511}, Kernel: rw(521, 511), Runtime: time.Second}},
		// The same excess over 10 s is not the carry-over (1 % there).
		{name: "a mixed window beyond the carry-over", l: cgroup.Limit{ReadIOPS: 400, WriteIOPS: 400}, tol: 5, ok: false, expected: 757.21, binding: true,
			c: Cell{ReadPct: 50, BlockSize: 16 << 10, UncappedIOPS: 4377, MeasuredIOPS: 814, Window: results.Counts{Reads: 4300, Writes: 3840},
				Issued: results.Counts{Reads: 4400, Writes: 3940}, Kernel: rw(4400, 3940), Runtime: 10 * time.Second},
			reason: "+7.5 %, tolerance 5 % + 1.0 % throttle carry-over)"},
		// Where blk-throttle's slice is 20 ms (some kernels' non-rotational
		// disks) the carry-over is a fifth of 100 ms's: 2 % of a 1 s window.
		{name: "a mixed window beyond a 20 ms slice's carry-over", l: cgroup.Limit{ReadIOPS: 400, WriteIOPS: 400}, tol: 5, ok: false, expected: 772.09, binding: true,
			c: Cell{ReadPct: 50, BlockSize: 16 << 10, UncappedIOPS: 20000, MeasuredIOPS: 830, Window: results.Counts{Reads: 430, Writes: 400},
				Issued: results.Counts{Reads: 530, Writes: 500}, Kernel: rw(530, 500), Runtime: time.Second, Slice: cgroup.ShortSlice},
			reason: "+7.5 %, tolerance 5 % + 2.0 % throttle carry-over)"},
		{name: "the same window under 100 ms slices", l: cgroup.Limit{ReadIOPS: 400, WriteIOPS: 400}, tol: 5, ok: true, expected: 772.09, binding: true,
			c: Cell{ReadPct: 50, BlockSize: 16 << 10, UncappedIOPS: 20000, MeasuredIOPS: 830, Window: results.Counts{Reads: 430, Writes: 400},
				Issued: results.Counts{Reads: 530, Writes: 500}, Kernel: rw(530, 500), Runtime: time.Second, Slice: cgroup.ThrottleSlice}},
		// A slice not known is taken as the longer one.
		{name: "the same window where the slice is not known", l: cgroup.Limit{ReadIOPS: 400, WriteIOPS: 400}, tol: 5, ok: true, expected: 772.09, binding: true,
			c: Cell{ReadPct: 50, BlockSize: 16 << 10, UncappedIOPS: 20000, MeasuredIOPS: 830, Window: results.Counts{Reads: 430, Writes: 400},
				Issued: results.Counts{Reads: 530, Writes: 500}, Kernel: rw(530, 500), Runtime: time.Second}},
		{name: "split requests", l: wcap, tol: 5, ok: true, expected: 500, binding: true,
			c: Cell{ReadPct: 0, BlockSize: 1 << 20, RequestsPerIO: 2, UncappedIOPS: 2356, MeasuredIOPS: 500, Issued: results.Counts{Writes: 1542}, Kernel: writes(3084)}},
		{name: "split ignored by the kernel", l: wcap, tol: 5, ok: false, expected: 500, binding: true,
			c:      Cell{ReadPct: 0, BlockSize: 1 << 20, RequestsPerIO: 2, UncappedIOPS: 2356, MeasuredIOPS: 500, Issued: results.Counts{Writes: 1542}, Kernel: writes(1542)},
			reason: "escaped"},
		{name: "within the counter tolerance", l: both, tol: 5, ok: true, expected: 11111.11, binding: true,
			c:       Cell{ReadPct: 90, BlockSize: 4096, UncappedIOPS: 50000, MeasuredIOPS: 11000, Issued: results.Counts{Reads: 40000, Writes: 4000}, Kernel: rw(40150, 3990)},
			foreign: results.Counts{Reads: 150}},
		{name: "the model at 90 % reads", l: both, tol: 5, ok: false, expected: 11111.11, binding: true,
			c:      Cell{ReadPct: 90, BlockSize: 4096, UncappedIOPS: 50000, MeasuredIOPS: 10000, Issued: results.Counts{Reads: 40000, Writes: 4000}, Kernel: rw(40000, 4000)},
			reason: "cap model expects 11111"},
		// Recorded: a read cell under a write-only cap, faster than its
		// baseline. The cap cannot bind there; being faster than the
		// uncapped run is the device's noise.
		{name: "not binding, faster than the baseline", l: wcap, tol: 5, ok: true, expected: 20658, binding: false,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 20658, MeasuredIOPS: 32948, Issued: results.Counts{Reads: 99000}, Kernel: rw(99000, 0)}},
		{name: "not binding, throttled", l: cgroup.Limit{ReadIOPS: 100000000, WriteIOPS: 100000000}, tol: 5, ok: false, expected: 3 * 1800, binding: false,
			c:      Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 3 * 1800, MeasuredIOPS: 1800, Issued: results.Counts{Reads: 5400}, Kernel: rw(5400, 0)},
			reason: "below the expected"},
		// Recorded: a window of a 50 % pattern that drew 51.3 % reads under
		// riops=wiops=3000. Reads bound at 3000, so 5847 I/Os in all: the
		// model at the drawn share, 2.5 % under the model at 50 %.
		{name: "the model at the window's read share", l: cgroup.Limit{ReadIOPS: 3000, WriteIOPS: 3000}, tol: 5, ok: true, expected: 5847, binding: true,
			c: Cell{ReadPct: 50, BlockSize: 16 << 10, UncappedIOPS: 6592, MeasuredIOPS: 5847, Window: results.Counts{Reads: 3000, Writes: 2847},
				Issued: results.Counts{Reads: 3901, Writes: 3706}, Kernel: rw(3901, 3706)}},
		// The same window judged at the pattern's nominal share: between 90
		// and 100 % of the uncapped figure the model is the expectation.
		{name: "not binding, the model below the uncapped figure", l: cgroup.Limit{ReadIOPS: 3000, WriteIOPS: 3000}, tol: 5, ok: true, expected: 6000, binding: false,
			c: Cell{ReadPct: 50, BlockSize: 16 << 10, UncappedIOPS: 6592, MeasuredIOPS: 5847, Issued: results.Counts{Reads: 3901, Writes: 3706}, Kernel: rw(3901, 3706)}},
		{name: "a window short of the model at its share", l: cgroup.Limit{ReadIOPS: 1000, WriteIOPS: 1000}, tol: 5, ok: false, expected: 1116.07, binding: true,
			c:      Cell{ReadPct: 10, BlockSize: 4096, UncappedIOPS: 50000, MeasuredIOPS: 1000, Window: results.Counts{Reads: 104, Writes: 896}, Issued: results.Counts{Reads: 130, Writes: 1300}, Kernel: rw(130, 1300)},
			reason: "-10.4 %"},
		{name: "not binding, above the cap model", l: cgroup.Limit{ReadIOPS: 1000}, tol: 5, ok: false, expected: 1000, binding: false,
			c:      Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 1050, MeasuredIOPS: 1100, Issued: results.Counts{Reads: 3300}, Kernel: rw(3300, 0)},
			reason: "above the cap model"},
		{name: "no counters", l: wcap, tol: 5, ok: false, expected: 1000, binding: true,
			c:      Cell{ReadPct: 0, BlockSize: 4096, UncappedIOPS: 5000, MeasuredIOPS: 1000, Issued: results.Counts{Writes: 3000}},
			reason: "could not be read"},
		{name: "an I/O error", l: wcap, tol: 5, ok: false, expected: 1000, binding: true,
			c:      Cell{ReadPct: 0, BlockSize: 4096, UncappedIOPS: 5000, MeasuredIOPS: 1000, Issued: results.Counts{Writes: 3000}, Kernel: writes(3000), Failed: "write at offset 0: no space left on device"},
			reason: "no space left"},
		{name: "uncapped figure unknown", l: wcap, tol: 5, ok: true, expected: 1000, binding: true,
			c: Cell{ReadPct: 0, BlockSize: 4096, MeasuredIOPS: 990, Issued: results.Counts{Writes: 3000}, Kernel: writes(3000)}},
		// Recorded: 4K reads at QD1 on a file on the shared disk under
		// riops=2000 while a writeback storm (dd of 1.5 GB, fsync) loaded
		// it. The kernel charged exactly iomatrix's reads: the cap held,
		// the device was busy. Not a failure of the cap.
		{name: "short beside another process's load", l: cgroup.Limit{ReadIOPS: 2000, WriteIOPS: 2000}, tol: 5, ok: false, inconclusive: true, expected: 2000, binding: true,
			c:      Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 12437, MeasuredIOPS: 1653, Issued: results.Counts{Reads: 1664}, Kernel: rw(1664, 0), OtherLoad: true},
			reason: "another process loaded the device during this cell's window"},
		// The same storm during the baseline: 119 IOPS uncapped at 50 %
		// reads, so the cap "did not bind" and the cell "held".
		{name: "a pass on a baseline that moved", l: cgroup.Limit{ReadIOPS: 2000, WriteIOPS: 2000}, tol: 5, ok: false, inconclusive: true, expected: 119, binding: false,
			c: Cell{ReadPct: 50, BlockSize: 4096, UncappedIOPS: 119, MeasuredIOPS: 4029, Window: results.Counts{Reads: 2014, Writes: 2015},
				Issued: results.Counts{Reads: 2590, Writes: 2595}, Kernel: rw(2590, 2595), Runtime: time.Second, BaselineOtherLoad: true},
			reason: "during its uncapped window"},
		// Above the cap beside a stalling neighbour: the throttle's saved
		// budget, not judged either.
		{name: "above the cap beside another process's load", l: cgroup.Limit{ReadIOPS: 2000}, tol: 5, ok: false, inconclusive: true, expected: 2000, binding: true,
			c:      Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 12437, MeasuredIOPS: 2168, Issued: results.Counts{Reads: 5400}, Kernel: rw(5400, 0), OtherLoad: true, BaselineOtherLoad: true},
			reason: "this cell's window and its uncapped one"},
		// The cap's exact figure beside a neighbour is the cap's.
		{name: "at the cap beside another process's load", l: cgroup.Limit{ReadIOPS: 2000}, tol: 5, ok: true, expected: 2000, binding: true,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 12437, MeasuredIOPS: 2000, Issued: results.Counts{Reads: 2608}, Kernel: rw(2608, 0), OtherLoad: true}},
		// The case: 4K reads at QD1 on a RAM-backed loop device
		// under riops=400 while other work held both CPUs. The kernel
		// counted exactly iomatrix's reads, and the child and the loop
		// device's worker waited for a CPU 31 % of the window: over the
		// rest of it the reads make 545 IOPS, above the floor of 380.
		{name: "short, and starved of a CPU", l: cgroup.Limit{ReadIOPS: 400}, tol: 5, ok: false, inconclusive: true, expected: 400, binding: true,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 3010, MeasuredIOPS: 376, Issued: results.Counts{Reads: 980}, Kernel: rw(980, 0),
				Runtime: 2 * time.Second, CPUWait: 620 * time.Millisecond},
			reason: "CPU wait: the run waited 31 % of the window for a CPU"},
		// A wait as long as the window explains any shortfall.
		{name: "a wait that filled the window", l: cgroup.Limit{ReadIOPS: 400}, tol: 5, ok: false, inconclusive: true, expected: 400, binding: true,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 3010, MeasuredIOPS: 51, Issued: results.Counts{Reads: 140}, Kernel: rw(140, 0),
				Runtime: 2 * time.Second, CPUWait: 2 * time.Second},
			reason: "the wait filled the window"},
		// Where the cap does not bind, a starved cell short of its
		// uncapped figure is not judged either.
		{name: "not binding, starved", l: cgroup.Limit{ReadIOPS: 100000000}, tol: 5, ok: false, inconclusive: true, expected: 5400, binding: false,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 5400, MeasuredIOPS: 3000, Issued: results.Counts{Reads: 9000}, Kernel: rw(9000, 0),
				Runtime: 2 * time.Second, CPUWait: time.Second},
			reason: "CPU wait: the run waited 50 %"},
		// A quiet cell that falls short fails: 10 ms of wait in 2 s gives
		// back 1.5 IOPS of the 80 missing.
		{name: "short on quiet CPUs", l: cgroup.Limit{ReadIOPS: 400}, tol: 5, ok: false, expected: 400, binding: true,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 3010, MeasuredIOPS: 300, Issued: results.Counts{Reads: 800}, Kernel: rw(800, 0),
				Runtime: 2 * time.Second, CPUWait: 10 * time.Millisecond},
			reason: "measured 300 IOPS, the cap model expects 400"},
		// A wait too short to close the gap does not excuse it: 376 over
		// 2 s less 5 ms is 377, under the floor of 380.
		{name: "starved too little to explain the shortfall", l: cgroup.Limit{ReadIOPS: 400}, tol: 5, ok: false, expected: 400, binding: true,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 3010, MeasuredIOPS: 376, Issued: results.Counts{Reads: 980}, Kernel: rw(980, 0),
				Runtime: 2 * time.Second, CPUWait: 5 * time.Millisecond},
			reason: "measured 376 IOPS"},
		// A cell at its model holds, however long it waited.
		{name: "at the cap, starved", l: cgroup.Limit{ReadIOPS: 400}, tol: 5, ok: true, expected: 400, binding: true,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 3010, MeasuredIOPS: 399, Issued: results.Counts{Reads: 1000}, Kernel: rw(1000, 0),
				Runtime: 2 * time.Second, CPUWait: time.Second}},
		// Recorded: the same cell, starved, above its cap: the child,
		// having waited 78 % of the window, spent the throttle's budget it
		// had saved. 12 IOPS beyond the ceiling; 312 granted over the wait.
		{name: "above the cap, starved", l: cgroup.Limit{ReadIOPS: 400}, tol: 5, ok: false, inconclusive: true, expected: 400, binding: true,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 14367, MeasuredIOPS: 432, Issued: results.Counts{Reads: 560}, Kernel: rw(560, 0),
				Runtime: time.Second, CPUWait: 779 * time.Millisecond},
			reason: "CPU wait: the run waited 78 % of the window for a CPU"},
		// 30 IOPS beyond the ceiling; 2 granted over 10 ms of wait.
		{name: "above the cap, starved too little", l: cgroup.Limit{ReadIOPS: 400}, tol: 5, ok: false, expected: 400, binding: true,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 3010, MeasuredIOPS: 450, Issued: results.Counts{Reads: 1100}, Kernel: rw(1100, 0),
				Runtime: 2 * time.Second, CPUWait: 10 * time.Millisecond},
			reason: "measured 450 IOPS"},
		// Nor does a wait excuse the counters.
		{name: "foreign requests, starved", l: cgroup.Limit{ReadIOPS: 400}, tol: 5, ok: false, expected: 400, binding: true,
			c: Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 3010, MeasuredIOPS: 300, Issued: results.Counts{Reads: 800}, Kernel: rw(900, 0),
				Runtime: 2 * time.Second, CPUWait: time.Second},
			reason: "measured 300 IOPS", foreign: results.Counts{Reads: 100}},
		// A neighbour does not move the kernel's counts: they fail.
		{name: "foreign requests beside another process's load", l: cgroup.Limit{ReadIOPS: 2000}, tol: 5, ok: false, expected: 2000, binding: true,
			c:       Cell{ReadPct: 100, BlockSize: 4096, UncappedIOPS: 12437, MeasuredIOPS: 1500, Issued: results.Counts{Reads: 2000}, Kernel: rw(2100, 0), OtherLoad: true},
			reason:  "measured 1500 IOPS",
			foreign: results.Counts{Reads: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(Limits{Limit: tc.l}, tc.c, tc.tol)
			if v.OK != tc.ok || v.Inconclusive != tc.inconclusive || v.Binding != tc.binding || abs(v.ExpectedIOPS-tc.expected) > 0.01 || v.ForeignRequests != tc.foreign {
				t.Errorf("Judge = %+v; want ok %v, inconclusive %v, binding %v, expected %.2f, foreign %+v", v, tc.ok, tc.inconclusive, tc.binding, tc.expected, tc.foreign)
			}
			if v.OK != (len(v.Reasons) == 0) {
				t.Errorf("ok %v with reasons %q", v.OK, v.Reasons)
			}
			if !tc.ok && (len(v.Reasons) == 0 || !strings.Contains(v.Reasons[0], tc.reason)) {
				t.Errorf("reasons %q lack %q", v.Reasons, tc.reason)
			}
		})
	}
}

// The rule over its edges: no wait or no window explains nothing; below
// the floor, the rate over the rest of the window against the floor;
// above the ceiling, the excess against the model's budget over the wait.
func TestCPUExplains(t *testing.T) {
	b := Bounds{Floor: 380, Ceiling: 420, Model: 400}
	for _, c := range []struct {
		iops         float64
		window, wait time.Duration
		ok           bool
		how          string
	}{
		{376, 2 * time.Second, 0, false, ""},
		{376, 0, time.Second, false, ""},
		{400, 2 * time.Second, time.Second, false, ""}, // within the bounds
		{376, 2 * time.Second, time.Second, true, "make 752 IOPS, at least the 380"},
		{360, 2 * time.Second, 120 * time.Millisecond, true, "make 383 IOPS"},
		{360, 2 * time.Second, 100 * time.Millisecond, false, "make 379 IOPS"},
		{376, 2 * time.Second, 30 * time.Millisecond, false, ""}, // a quiet machine's own wait (QuietCPUWait)
		{0, 2 * time.Second, 3 * time.Second, true, "the wait filled the window"},
		{460, 2 * time.Second, 200 * time.Millisecond, true, "the 40 IOPS beyond the 420 allowed are no more than the cap's budget over the time it waited, 40 IOPS"},
		{460, 2 * time.Second, 180 * time.Millisecond, false, "36 IOPS of the window"},
		{2000, time.Second, 2 * time.Second, false, "400 IOPS of the window"}, // the wait bounded by the window
		{36, time.Second, 886 * time.Millisecond, true, "it ran 114ms of the window, less than two of the throttle's 100ms slices"},
		{36, 2 * time.Second, 1790 * time.Millisecond, true, "it ran 210ms of the window, less than half of it"}, // two slices, but scattered
		{66, time.Second, 793 * time.Millisecond, true, "it ran 207ms of the window, less than half of it"},
		{150, 2 * time.Second, 900 * time.Millisecond, false, "make 273 IOPS"},                       // ran more than half of the window
		{1000, 2 * time.Second, 1200 * time.Millisecond, false, "are no more than the cap's budget"}, // above the ceiling: no pieces explain it
		{400, time.Second, 900 * time.Millisecond, false, ""},                                        // within the bounds
	} {
		how, ok := CPUExplains(c.iops, c.window, c.wait, 0, b)
		if ok != c.ok || !strings.Contains(how, c.how) {
			t.Errorf("CPUExplains(%v, %v, %v) = %q, %v; want %v and %q", c.iops, c.window, c.wait, how, ok, c.ok, c.how)
		}
	}
	// A disk's shorter slice leaves a shorter time to judge by.
	if how, ok := CPUExplains(150, 100*time.Millisecond, 40*time.Millisecond, 0, b); !ok || !strings.Contains(how, "less than two of the throttle's 100ms slices") {
		t.Errorf("a 100ms slice: %q, %v", how, ok)
	}
	if how, ok := CPUExplains(150, 100*time.Millisecond, 40*time.Millisecond, 20*time.Millisecond, b); ok || !strings.Contains(how, "make 250 IOPS") {
		t.Errorf("a 20ms slice: %q, %v", how, ok)
	}
	// A volume's provisioned limits have no slices: the rule of two
	// slices does not apply, the others do.
	if how, ok := CPUExplains(1000, time.Second, 886*time.Millisecond, noSlice, b); ok || !strings.Contains(how, "are no more than the cap's budget") {
		t.Errorf("no slices, above the ceiling: %q, %v", how, ok)
	}
	if how, ok := CPUExplains(1000, time.Second, 886*time.Millisecond, 0, b); !ok || !strings.Contains(how, "less than two of the throttle's") {
		t.Errorf("the same window under a throttle's slices: %q, %v", how, ok)
	}
	if how, ok := CPUExplains(36, time.Second, 886*time.Millisecond, noSlice, b); !ok || !strings.Contains(how, "less than half of it") {
		t.Errorf("no slices, short: %q, %v", how, ok)
	}
	if r := UnstarvedIOPS(376, 2*time.Second, time.Second); r != 752 {
		t.Errorf("UnstarvedIOPS = %v, want 752", r)
	}
	if r := UnstarvedIOPS(376, 2*time.Second, 0); r != 376 {
		t.Errorf("UnstarvedIOPS without a wait = %v, want 376", r)
	}
	if r := UnstarvedIOPS(376, time.Second, time.Second); !math.IsInf(r, 1) {
		t.Errorf("UnstarvedIOPS over a window of wait = %v, want +Inf", r)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// A volume's provisioned limits are judged by the same rules, but for
// what only a cgroup has: below them fails, above them is Above (neither
// ok nor failed), no counters, no throttle slices and no carry-over.
func TestJudgeProvisioned(t *testing.T) {
	iops := func(n uint64) Limits { return Limits{IOPS: n, Provisioned: true} }
	perDir := Limits{Limit: cgroup.Limit{ReadIOPS: 400, WriteIOPS: 400}, Provisioned: true}
	for _, tc := range []struct {
		name                      string
		l                         Limits
		c                         Cell
		ok, inconclusive, above   bool
		expected                  float64
		reason                    string // a fragment of the first reason when not ok
		carry                     float64
		expectedRequests, foreign results.Counts
	}{
		{name: "at a combined limit, mixed", l: iops(300), ok: true, expected: 300,
			c: Cell{ReadPct: 50, BlockSize: 4096, MeasuredIOPS: 301, Window: results.Counts{Reads: 148, Writes: 153}, Issued: results.Counts{Reads: 190, Writes: 185},
				Runtime: time.Second},
			expectedRequests: results.Counts{Reads: 190, Writes: 185}},
		// Each request counts: a 1 MiB I/O that the block layer splits in
		// two takes two of the volume's IOPS.
		{name: "a combined limit, split requests", l: iops(3000), ok: true, expected: 1500,
			c:                Cell{ReadPct: 100, BlockSize: 1 << 20, RequestsPerIO: 2, MeasuredIOPS: 1490, Issued: results.Counts{Reads: 2000}, Runtime: time.Second},
			expectedRequests: results.Counts{Reads: 4000}},
		{name: "a combined throughput limit", l: Limits{BPS: 125 << 20, Provisioned: true}, ok: true, expected: 8000,
			c: Cell{ReadPct: 70, BlockSize: 16 << 10, MeasuredIOPS: 7900, Issued: results.Counts{Reads: 7000, Writes: 3000}, Runtime: time.Second}},
		{name: "short of the limits", l: perDir, ok: false, expected: 400,
			c:      Cell{ReadPct: 100, BlockSize: 4096, MeasuredIOPS: 320, Issued: results.Counts{Reads: 1000}, Runtime: 3 * time.Second},
			reason: "measured 320 IOPS, the provisioned limits allow 400 (-20.0 %, tolerance 5 %): the volume does less than its limits"},
		{name: "bursting", l: iops(300), above: true, expected: 300,
			c:      Cell{ReadPct: 100, BlockSize: 4096, MeasuredIOPS: 2985, Issued: results.Counts{Reads: 3800}, Runtime: time.Second},
			reason: "measured 2985 IOPS, above the 300 the provisioned limits allow (+895.0 %, tolerance 5 %): bursting or uncapped"},
		{name: "above, within the tolerance", l: iops(300), ok: true, expected: 300,
			c: Cell{ReadPct: 100, BlockSize: 4096, MeasuredIOPS: 314, Issued: results.Counts{Reads: 400}, Runtime: time.Second}},
		// The window TestJudge holds within the throttle's carry-over
		// under a cgroup's riops=wiops=400: a provider's limiter has none.
		{name: "a mixed window, no carry-over", l: perDir, above: true, expected: 769.74,
			c: Cell{ReadPct: 50, BlockSize: 16 << 10, MeasuredIOPS: 814, Window: results.Counts{Reads: 423, Writes: 391},
				Issued: results.Counts{Reads: 521, Writes: 511}, Runtime: time.Second},
			reason: "+5.8 %, tolerance 5 %)"},
		// A stream that waited for a CPU spends what the volume's bucket
		// saved for it: 15 IOPS beyond the ceiling, 150 granted over the
		// wait.
		{name: "above, starved", l: iops(300), inconclusive: true, expected: 300,
			c:      Cell{ReadPct: 100, BlockSize: 4096, MeasuredIOPS: 330, Issued: results.Counts{Reads: 400}, Runtime: time.Second, CPUWait: 500 * time.Millisecond},
			reason: "CPU wait: the run waited 50 % of the window"},
		// Under a cgroup the same window ran less than two throttle
		// slices and is not judged; a volume has no slices: 400 IOPS
		// beyond the ceiling, 354 granted over the wait.
		{name: "above, starved, no slices", l: perDir, above: true, expected: 400,
			c:      Cell{ReadPct: 100, BlockSize: 4096, MeasuredIOPS: 820, Issued: results.Counts{Reads: 900}, Runtime: time.Second, CPUWait: 886 * time.Millisecond},
			reason: "bursting or uncapped"},
		{name: "short, starved", l: perDir, inconclusive: true, expected: 400,
			c:      Cell{ReadPct: 100, BlockSize: 4096, MeasuredIOPS: 300, Issued: results.Counts{Reads: 700}, Runtime: 2 * time.Second, CPUWait: time.Second},
			reason: "CPU wait"},
		// A neighbour draws on the volume's limits too.
		{name: "short beside another process's load", l: iops(3000), inconclusive: true, expected: 3000,
			c:      Cell{ReadPct: 100, BlockSize: 4096, MeasuredIOPS: 1800, Issued: results.Counts{Reads: 2000}, Runtime: time.Second, OtherLoad: true},
			reason: "another process loaded the device"},
		{name: "an I/O error above the limits", l: iops(300), expected: 300,
			c:      Cell{ReadPct: 0, BlockSize: 4096, MeasuredIOPS: 900, Issued: results.Counts{Writes: 900}, Runtime: time.Second, Failed: "write at offset 0: input/output error"},
			reason: "above the 300"},
		// Nothing limits a read pattern under a write limit: nothing to
		// hold it to.
		{name: "no limit on the pattern", l: Limits{Limit: cgroup.Limit{WriteIOPS: 100}, Provisioned: true}, ok: true, expected: 0,
			c: Cell{ReadPct: 100, BlockSize: 4096, MeasuredIOPS: 9000, Issued: results.Counts{Reads: 9000}, Runtime: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.l, tc.c, 5)
			if v.OK != tc.ok || v.Inconclusive != tc.inconclusive || v.Above != tc.above || abs(v.ExpectedIOPS-tc.expected) > 0.01 ||
				!v.CountersOK || v.CarryPct != tc.carry || v.ForeignRequests != tc.foreign {
				t.Errorf("Judge = %+v; want ok %v, inconclusive %v, above %v, expected %.2f, counters ok, carry %v", v, tc.ok, tc.inconclusive, tc.above, tc.expected, tc.carry)
			}
			if tc.expected > 0 && !v.Binding {
				t.Errorf("a limited cell of a volume does not bind: %+v", v)
			}
			if tc.expectedRequests != (results.Counts{}) && v.ExpectedRequests != tc.expectedRequests {
				t.Errorf("requests sent %+v, want %+v", v.ExpectedRequests, tc.expectedRequests)
			}
			if v.OK != (len(v.Reasons) == 0) {
				t.Errorf("ok %v with reasons %q", v.OK, v.Reasons)
			}
			if !tc.ok && (len(v.Reasons) == 0 || !strings.Contains(v.Reasons[0], tc.reason)) {
				t.Errorf("reasons %q lack %q", v.Reasons, tc.reason)
			}
		})
	}
}
