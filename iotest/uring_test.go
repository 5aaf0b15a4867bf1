package iotest

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/target"
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

	tg := openPlan(t, filepath.Join(testenv.DirectIODir(t), "timer.dat"), target.Options{Size: 16 << 20, Writes: true})
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

// A fast ring with many requests in flight waits for a batch of them
// (batchShare) instead of polling: nothing is lost and every I/O is
// measured, on both the batched path (QD 32) and the polling one below it
// (QD 8).
func TestBatchedWait(t *testing.T) {
	testenv.Integration(t)
	testenv.Require(t, ProbeUring() == nil, "io_uring unavailable")
	alwaysPoll = true
	defer func() { alwaysPoll = false }()
	tg := openPlan(t, filepath.Join(testenv.DirectIODir(t), "batch.dat"), target.Options{Size: 16 << 20, Writes: true})
	for _, qd := range []int{4 * batchShare, batchShare} {
		p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: qd, Jobs: 1}
		res, err := Run(context.Background(), tg, p, Options{Runtime: 200 * time.Millisecond, Seed: 9, Engine: EngineUring})
		if err != nil {
			t.Fatal(err)
		}
		if res.Submitted != res.Completed || res.Failed != (results.Counts{}) || res.Total.IOs == 0 {
			t.Errorf("QD %d: submitted %+v, completed %+v, failed %+v", qd, res.Submitted, res.Completed, res.Failed)
		}
		if l := res.Total.LatNS; l == nil || l.Count != res.Total.IOs {
			t.Errorf("QD %d: %d I/Os, latency %+v", qd, res.Total.IOs, l)
		}
		t.Logf("QD %d: %.0f IOPS, %+v completed", qd, res.Total.IOPS, res.Completed)
	}
}

// A request the engine never cancelled may come back cancelled by the
// kernel itself (io-wq could not start a worker for it: see reissue). It is
// issued again, unchanged and keeping its start, up to maxReissues times;
// after that its cancellation is its failure. The kernel's own ECANCELED
// is made here with a link: a request linked after one that fails is
// cancelled without being done.
func TestKernelCancelledIOIsReissued(t *testing.T) {
	const uringSqeLink = 1 << 2 // IOSQE_IO_LINK
	testenv.Integration(t)
	testenv.Require(t, ProbeUring() == nil, "io_uring unavailable")
	runtime.LockOSThread() // a ring has a single issuer
	defer runtime.UnlockOSThread()
	tg := openPlan(t, filepath.Join(testenv.DirectIODir(t), "cancel.dat"), target.Options{Size: 1 << 20, Writes: true})
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 1, Jobs: 1}
	for _, c := range []struct {
		name    string
		cancels int // times the kernel cancels the I/O
	}{{"done-once-reissued", 2}, {"failed-past-the-limit", maxReissues + 1}} {
		t.Run(c.name, func(t *testing.T) {
			// A subtest runs in a goroutine of its own: locked too, or
			// the runtime may move it to another thread between two
			// submissions, which the single-issuer ring refuses (EEXIST).
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// Slot 0 alone is used, in a ring with room for the failing
			// request and the wait's timer besides.
			const qd = 4
			a, err := newArena(host, qd, p.BlockSize, rand.NewPCG(1, 2), true)
			if err != nil {
				t.Fatal(err)
			}
			defer a.free()
			var stop atomic.Bool
			w := &worker{st: newStats(1), seq: newSequence(1, 0, 0, p, tg.Size), arena: a, fd: tg.Fd(), qd: qd,
				clk: newTestClock(0, nanotime()+int64(time.Hour)), stop: &stop}
			s, err := w.openRing()
			if err != nil {
				t.Fatal(err)
			}
			defer s.r.close()
			// cancelNext puts a failing read (a bad descriptor, linked to
			// what follows) before the prepared SQE. Its completion carries
			// the timer's mark, which reap skips.
			bad := make([]byte, 4096)
			cancelNext := func() {
				saved := *s.r.last()
				*s.r.last() = uringSqe{opcode: uringOpRead, flags: uringSqeLink, fd: -1, addr: uint64(uintptr(unsafe.Pointer(&bad[0]))), len: 4096, userData: uringTimerData}
				*s.r.next() = saved
				s.r.tail++
				s.r.pending++
			}
			// reap reaps want completions; with drain set, the window has
			// ended and nothing is refilled.
			reap := func(want uint32, drain bool) (int, bool) {
				deadline := time.Now().Add(5 * time.Second)
				for s.r.cqReady() < want && time.Now().Before(deadline) {
					if err := s.submit(); err != nil {
						t.Fatal(err)
					}
				}
				stopping := drain
				reaped, _, err := s.reap(s.r.cqReady(), nanotime(), &stopping)
				if err != nil {
					t.Fatal(err)
				}
				return reaped, stopping
			}
			if !w.seq.take() {
				t.Fatal("no I/O to take")
			}
			s.prep(0)
			s.stamp()
			start, off := s.slots[0].start, s.slots[0].off
			for k := 1; k <= c.cancels; k++ {
				cancelNext()
				reaped, stopping := reap(2, false)
				switch {
				case k <= maxReissues && (reaped != 0 || stopping || w.st.reReads != uint64(k) || s.r.pending != 1):
					t.Fatalf("cancellation %d: reaped %d, stopping %v, %d reissued, %d pending: want the read issued again", k, reaped, stopping, w.st.reReads, s.r.pending)
				case k > maxReissues && (reaped != 1 || !stopping || w.st.badReads != 1 || w.st.err == nil || w.st.err.Errno != int(unix.ECANCELED)):
					t.Fatalf("cancellation %d: reaped %d, stopping %v, %d failed (%v): want the cancellation to fail the read", k, reaped, stopping, w.st.badReads, w.st.err)
				}
				if s.slots[0].start != start || s.slots[0].off != off {
					t.Fatalf("cancellation %d: the reissue moved the start or offset", k)
				}
			}
			if c.cancels <= maxReissues {
				if reaped, _ := reap(1, true); reaped != 1 || w.st.allReads != 1 || w.st.badReads != 0 {
					t.Fatalf("the reissued read: reaped %d, %d done, %d failed", reaped, w.st.allReads, w.st.badReads)
				}
			}
			if w.st.subReads != 1 {
				t.Errorf("%d reads counted as submitted, want 1: a reissue is the same submission", w.st.subReads)
			}
		})
	}
}
