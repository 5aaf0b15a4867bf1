package iotest

import (
	"bytes"
	"math"
	"strconv"
	"time"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
)

// cpuWatch reads, at each edge of a measured window and never between
// them, how long the threads a run's I/O goes through have waited for a
// CPU (results.CPUWait): the streams' own threads with their rings'
// kernel workers, and the kernel's threads that may serve the target.
//
// Which kernel threads serve a target, measured on Linux 6.18:
//   - a loop device (direct I/O or not) hands each request to its
//     workqueue ("loopN", unbound), whose worker does the I/O on the
//     backing file: kworker/uN:M, named kworker/u8:3+loop0 only while it
//     runs the device's work;
//   - a cap's throttle hands the requests its timer releases to a
//     workqueue too (kthrotld), whatever the device;
//   - zram does each request in the submitter's context: a psync stream's
//     thread, or the ring's io_uring worker (iou-wrk-TID), both counted as
//     the run's own;
//   - a FUSE file is answered by its daemon's threads, a process that
//     holds /dev/fuse open; which mount a daemon serves cannot be told, so
//     every such process's threads are counted;
//   - nbd receives replies on a workqueue as well; its server, over a
//     socket and possibly on another host, is not counted.
//
// A workqueue worker serves any queue of its pool, and its name says
// which only while it runs an item, so the workers that served the
// target over a window cannot be told: every kernel thread is counted
// (kthreadd's children; most of those that are not workers never wait).
// The figure is so an upper bound of the wait on the I/O's path, which
// is what the verdicts need of it (they never fail a cell the wait could
// explain).
type cpuWatch struct {
	sched   *sysfs.SchedReader
	streams map[int]bool // the streams' thread ids
	rings   bool         // the streams run io_uring rings: look for their workers
	daemons []int        // FUSE daemons serving the target
	// ringWorkers tells, by thread id of this process, whether it is a
	// ring's worker (see ringWorker): a name is read once per thread.
	ringWorkers map[int]bool
}

// newCPUWatch watches the streams of r, which have said they are ready
// (their thread ids are set), and opens what it reads (a first reading
// before the window): a reading at the window's edge then reads little
// more than the waits.
func newCPUWatch(r *run) *cpuWatch {
	sys := r.t.Sys()
	c := &cpuWatch{sched: sys.SchedReader(), streams: make(map[int]bool, len(r.workers)),
		rings: r.engine == EngineUring, ringWorkers: map[int]bool{}}
	for _, w := range r.workers {
		if w.tid != 0 {
			c.streams[w.tid] = true
		}
	}
	if r.t.ServedByFUSE() {
		c.daemons, _ = sys.FUSEDaemons()
	}
	c.read()
	return c
}

// close closes what c reads.
func (c *cpuWatch) close() {
	if c != nil {
		c.sched.Close()
	}
}

// waitReading is one reading of the watched threads' run time and
// run-queue delay, by thread id, and of the machine's busy time, with
// when each was read (nanotime, the middle of its reads); own is nil
// when the run's own threads could not be read (a kernel without
// schedstat), busyAt 0 when the machine's time could not be.
type waitReading struct {
	own, served             map[int]threadTimes
	busy                    time.Duration
	ownAt, servedAt, busyAt int64
}

// threadTimes are a thread's CPU time and its wait on a run queue.
type threadTimes struct{ run, wait time.Duration }

// read takes a reading now: the run's own threads first, the thread that
// reads may itself wait for a CPU, and the kernel's many threads take it
// longest.
func (c *cpuWatch) read() waitReading {
	if c == nil {
		return waitReading{}
	}
	r := waitReading{own: make(map[int]threadTimes, len(c.streams)), served: make(map[int]threadTimes, 64)}
	begin := nanotime()
	c.readAll(r.own, 0, c.streams)
	if len(r.own) == 0 {
		return waitReading{}
	}
	if c.rings {
		tids, _ := c.sched.TaskIDs(0)
		for _, tid := range tids {
			if c.ringWorker(tid) {
				c.readOne(r.own, 0, tid)
			}
		}
	}
	mid := nanotime()
	r.ownAt = (begin + mid) / 2
	if busy, err := c.sched.MachineBusy(); err == nil {
		r.busy, r.busyAt = busy, nanotime()
	}
	mid = nanotime()
	kernel, _ := c.sched.KernelThreadIDs()
	for _, pid := range kernel {
		c.readOne(r.served, pid, pid)
	}
	for _, pid := range c.daemons {
		tids, _ := c.sched.TaskIDs(pid)
		for _, tid := range tids {
			c.readOne(r.served, pid, tid)
		}
	}
	r.servedAt = (mid + nanotime()) / 2
	return r
}

// readAll reads the waits of threads tids of process pid into m.
func (c *cpuWatch) readAll(m map[int]threadTimes, pid int, tids map[int]bool) {
	for tid := range tids {
		c.readOne(m, pid, tid)
	}
}

// readOne reads the times of thread tid of process pid into m, unless
// they cannot be read (it ended).
func (c *cpuWatch) readOne(m map[int]threadTimes, pid, tid int) {
	if run, wait, err := c.sched.Sched(pid, tid); err == nil {
		m[tid] = threadTimes{run, wait}
	}
}

// ringWorker tells whether thread tid of this process is the kernel's
// worker or submission thread of a stream's ring: io_uring names them
// after the thread that made the ring.
func (c *cpuWatch) ringWorker(tid int) bool {
	if is, ok := c.ringWorkers[tid]; ok {
		return is
	}
	comm, err := c.sched.Comm(0, tid)
	if err != nil {
		return false // ended
	}
	is := false
	for _, prefix := range [][]byte{[]byte("iou-wrk-"), []byte("iou-sqp-")} {
		if rest, ok := bytes.CutPrefix(comm, prefix); ok {
			owner, err := strconv.Atoi(string(rest))
			is = err == nil && c.streams[owner]
		}
	}
	c.ringWorkers[tid] = is
	return is
}

// cpuWait is the wait between readings s and e over a window of length
// window; nil when either could not read the run's own threads.
//
// The readings are taken when the window starts and ends, by a thread
// that waits for a CPU as the others do: where other work holds the CPUs
// it reads late, most at the start (the end's I/O drains while it reads),
// and a reading of many threads takes a while. Each kind's sum is
// therefore taken over the span between its two readings and scaled to
// the window's length: the waits are taken to go on through the window at
// the rate they went on through that span.
//
// The CPU time the rest of the machine ran is its busy time less the
// watched threads' run time, each scaled so; where the machine's time
// could not be read it is unknown (nil), never 0.
func (s waitReading) cpuWait(e waitReading, window time.Duration) *results.CPUWait {
	if s.own == nil || e.own == nil {
		return nil
	}
	scale := func(d time.Duration, from, to int64) time.Duration {
		if span := to - from; span > 0 && window > 0 {
			return time.Duration(float64(d) * float64(window) / float64(span))
		}
		return d
	}
	ownRun, ownWait := timesDelta(s.own, e.own)
	servedRun, servedWait := timesDelta(s.served, e.served)
	own := scale(ownWait, s.ownAt, e.ownAt)
	served := scale(servedWait, s.servedAt, e.servedAt)
	w := &results.CPUWait{IOThreadsNS: int64(own), IOThreads: len(e.own), TargetThreadsNS: int64(served), TargetThreads: len(e.served),
		RunNS: int64(scale(ownRun, s.ownAt, e.ownAt) + scale(servedRun, s.servedAt, e.servedAt))}
	if s.busyAt != 0 && e.busyAt != 0 && e.busy >= s.busy {
		others := max(0, int64(scale(e.busy-s.busy, s.busyAt, e.busyAt))-w.RunNS)
		w.OthersNS = &others
	}
	if window > 0 {
		w.Pct = math.Round(10000*float64(w.Wait(window))/float64(window)) / 100
	}
	return w
}

// timesDelta sums the run times and the waits of the threads of reading
// e since reading s. A thread s does not hold started after it (or its
// id was reused since), so all of its times count; a thread that ended
// between the two readings is lost with its times.
func timesDelta(s, e map[int]threadTimes) (run, wait time.Duration) {
	for tid, end := range e {
		if start, ok := s[tid]; ok && start.run <= end.run && start.wait <= end.wait {
			end.run -= start.run
			end.wait -= start.wait
		}
		run += end.run
		wait += end.wait
	}
	return run, wait
}
