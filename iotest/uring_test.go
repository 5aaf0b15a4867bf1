package iotest

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// A wait with nothing in flight ends on its bound, again and again: the
// ring's timer completes about waitTimeout after a wait armed it, and the
// next wait re-arms it. (The runtime's preemption signals may end a wait
// sooner: enter then returns with nothing to reap.)
func TestWaitIsBounded(t *testing.T) {
	testenv.Require(t, ProbeUring() == nil, "io_uring unavailable")
	runtime.LockOSThread() // a ring has a single issuer
	defer runtime.UnlockOSThread()
	const entries = 8 // a power of two: the timer needs a larger ring
	r, err := newUring(entries)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if len(r.sqes) < entries+1 {
		t.Fatalf("%d SQEs for %d requests and the timer", len(r.sqes), entries)
	}
	for range 3 {
		start := time.Now()
		for r.cqReady() == 0 && time.Since(start) < 10*waitTimeout {
			if err := r.enter(true, true); err != nil {
				t.Fatal(err)
			}
		}
		d := time.Since(start)
		if d > 10*waitTimeout || d < waitTimeout/2 {
			t.Errorf("waited %v with nothing in flight, want about %v", d, time.Duration(waitTimeout))
		}
		n := r.cqReady()
		if n != 1 || r.peek(0).userData != uringTimerData || r.peek(0).res != -int32(unix.ETIME) {
			t.Fatalf("%d completions after %v of waits, want the timer's alone", n, d)
		}
		r.cqAdvance(1)
		r.timerArmed = false
	}
}

// enter's timer request shares the ring with the I/O: a run on a healthy
// device is still exact, loses nothing and measures every I/O.
func TestUringTimerSharesTheRing(t *testing.T) {
	testenv.Integration(t)
	testenv.Root(t)
	testenv.Require(t, ProbeUring() == nil, "io_uring unavailable")
	const qd = 8

	tg := openPlan(t, filepath.Join(directIODir(t), "timer.dat"), TargetOptions{Size: 16 << 20, Writes: true})
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: qd, Jobs: 2}
	// Long enough for the timer to fire and be re-armed about ten times.
	res, err := Run(context.Background(), tg, p, Options{Runtime: 500 * time.Millisecond, Seed: 5, Engine: EngineUring})
	if err != nil {
		t.Fatal(err)
	}
	if res.Submitted != res.Completed || res.Failed != (results.Counts{}) {
		t.Errorf("submitted %+v, completed %+v, failed %+v: an I/O was lost or failed", res.Submitted, res.Completed, res.Failed)
	}
	measured := res.Read.IOs + res.Write.IOs
	if measured == 0 || res.Total.IOs != measured || res.Completed.Reads+res.Completed.Writes < measured {
		t.Errorf("measured r%d w%d, total %d, completed %+v", res.Read.IOs, res.Write.IOs, res.Total.IOs, res.Completed)
	}
	for _, d := range []results.DirStats{res.Read, res.Write} {
		if l := d.LatNS; d.IOs == 0 || l.Count != d.IOs || !(l.Min > 0 && l.Min <= l.P50 && l.P50 <= l.Max) {
			t.Errorf("%d I/Os, latency %+v", d.IOs, l)
		}
	}
	t.Logf("%d I/Os measured, %+v completed", measured, res.Completed)
}
