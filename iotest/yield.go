package iotest

import (
	"runtime"
	"time"
)

// yieldEvery is how often a stream gives its P back to the Go scheduler
// of its own accord, at a moment it chooses, so that the runtime never
// has to take it.
//
// The runtime's monitor thread (sysmon) preempts a goroutine that has
// run for 10 ms without passing through the scheduler, and a stream's
// goroutine, locked to its thread and blocked in syscalls between I/Os,
// never passes through it. What the preemption costs depends on where it
// finds the stream:
//   - in a syscall the scheduler knows of (psync's pread, pwrite and
//     fdatasync), the monitor takes the P and hands it off, and having
//     taken one it polls again every 20 µs for a millisecond or more:
//     about one more context switch per I/O. Measured on 2 CPUs, 4K
//     sequential writes with fdatasync:1 on ext4 over a loop device:
//     2.9-3.2 context switches and 40-45 µs of CPU per I/O, against
//     fio's 2.0 and 27-38 µs, and 0.65-1.01x fio's IOPS; yielding
//     every 4 ms, 2.2 and 24-25 µs, and 0.98-1.13x fio's IOPS;
//   - in the ring's raw wait (see enter), it signals the thread: the
//     wait ends early, and the goroutine is preempted at its next call,
//     wherever that is, between a completion and its reap as well.
//
// A locked goroutine's yield passes its P through another thread and
// back (two wake-ups). Once per yieldEvery, below the monitor's 10 ms,
// the monitor never finds a goroutine to preempt, and the hand-off
// happens where it costs no measured time: psync's between two I/Os,
// before the next one's start is read; a closed loop's ring's when it is
// about to sleep, before it hands over its replacements (at QD1 nothing
// is in flight then, so a hand-off the machine makes late delays no
// completion's reaping; their start is read when they are handed over);
// an open loop's once its requests are handed over, since their latency
// runs from when they were due.
const yieldEvery = 4 * time.Millisecond

// yieldDue tells whether the stream should yield at now.
func (w *worker) yieldDue(now int64) bool { return now-w.yieldedAt >= int64(yieldEvery) }

// yield gives the stream's P to the scheduler and takes it back.
func (w *worker) yield() {
	runtime.Gosched()
	w.yieldedAt = nanotime()
}

// breathe yields when it is due at now, about to sleep in an open loop,
// or in a closed loop whose wait ended with nothing to reap: what the
// ring has prepared is handed over first (an open-loop I/O's latency
// runs from when it was due, so it is not held back), and a completion
// posted during the yield ends the wait that follows at once.
func (s *ringStream) breathe(now int64) error {
	if !s.w.yieldDue(now) {
		return nil
	}
	if s.r.pending > 0 {
		if err := s.handOver(); err != nil {
			return err
		}
	}
	s.w.yield()
	return nil
}
