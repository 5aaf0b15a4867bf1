package iotest

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
)

// worker is one independent I/O stream: a job's ring (uring) or one of a
// job's queue-depth goroutines (psync).
type worker struct {
	// async: the ring hands every request straight to the kernel's
	// workers. An I/O that a block device must split cannot be issued
	// without blocking: io_uring's non-blocking first attempt is refused
	// (EAGAIN) and retried from a worker, and the cgroup throttle charges
	// the refused attempt as one more I/O. Measured on a loop device, 1 MiB
	// reads in 2 requests each: the kernel charged 3.000 per I/O, and a
	// cap of 2,000 IOPS passed 667 I/Os a second where its model (and
	// diskstats, 2.00 requests per I/O) expects 1,000; with the requests
	// sent to the workers at once it charged 2.000, and the I/Os ran no
	// slower (they went to a worker either way). Files are not affected:
	// 1 MiB reads of an ext4 file were charged 2.000 per I/O both ways.
	async bool
	// asyncKinds, for a block-size mix, has bit k set when the I/Os of
	// its k-th size are split (see run.splitOnDevice); those alone go to
	// the workers.
	asyncKinds uint16
	// mode is the ring's setup: polled completions, a submission thread.
	mode RingMode
	// ns, for a passthrough target, addresses its namespace: each I/O is
	// an NVMe command.
	ns    *target.Namespace
	st    *stats
	seq   *sequence
	arena *arena
	fd    int
	clk   *clock
	qd    int
	// sched, set for an open-loop pattern, is the job's schedule.
	sched *schedule
	// stop is set on cancellation or a failure; read once per batch, and
	// on every wake-up with nothing to reap.
	stop *atomic.Bool
	// ready tells Run the stream is set up; it then waits for start,
	// after which clk holds the run's phases.
	ready func()
	start <-chan struct{}
	// sys is where an SQPOLL ring's submission thread is looked up.
	sys sysfs.FS
	// tid is the stream's thread, locked to it before it says it is
	// ready: its wait for a CPU is read at the window's edges (cpuWatch).
	tid int
	// sync is the pattern's durable-write mode; sinceSync counts the
	// stream's writes since its last sync (see syncDue), and iov is
	// psync's iovec for a dsync write (see pwriteDsync).
	sync      pattern.Sync
	sinceSync float64
	iov       unix.Iovec
	// yieldedAt is when the stream last yielded its P (see yieldEvery).
	yieldedAt int64
}

// abandonGrace is how long a stopped ring goes on reaping the requests it
// has in flight before it gives them up. A device that is merely slow
// answers well within it, while a cancellation of a run on a device that
// never answers still ends promptly.
const abandonGrace = 300 * time.Millisecond

// slot is the state of one in-flight request of a ring.
type slot struct {
	start int64
	off   int64
	size  int64 // bytes: a block-size mix draws each I/O's own
	write bool
	kind  uint8 // size index and hotness (see kindSize)
	// An open-loop I/O's intended start, and whether it found every slot
	// busy then (see runRate).
	waited   bool
	intended int64
	// reissues counts how often the kernel cancelled this I/O on its own
	// and it was issued again (see reissue).
	reissues uint8
	// synced: a sync is linked after the slot's write (see sync.go);
	// gen tells that sync's completion from a stale one's, and wrote is
	// when the write's own completion was reaped.
	synced bool
	gen    uint8
	wrote  int64
}

// runUring keeps exactly qd requests in flight on a private ring until the
// window ends, then drains. Completions already posted are reaped from
// shared memory without a syscall; each replacement is submitted as soon as
// it is prepared, as fio does by default (iodepth_batch_submit=1), but the
// last one of a reap goes with the next poll when the ring polls (see
// spinBudget), which saves a syscall per reap. A ring about to sleep hands
// it over on its own first, and then waits, as fio does. Handing it over
// with the wait, in one io_uring_enter, measured 7-21 % fewer IOPS at QD1
// on a RAM-backed loop device (two jobs and one; medians of alternating
// runs) but 13-15 % more on zram with one job, where the io-wq worker the
// request is punted to then starts on the CPU the ring leaves; fio's way
// keeps every QD1 shape within a few percent of fio, the other does not.
// Batching the replacements of a reap into one submission saves syscalls
// but holds them in the block layer's plug until the batch is complete,
// which measured 3-5 % fewer IOPS on a RAM-backed loop device: the device
// would see a different arrival pattern than under fio.
//
// How the ring waits is what decides its speed on a fast device (see
// spinBudget): while completions arrive less than spinBudget apart it
// polls for the next one for up to spinBudget before it sleeps; otherwise
// it sleeps at once, as fio does.
//
// Every wait in the kernel ends after at most about 50 ms (see enter), so
// the loop sees the stop flag even when the device answers nothing. The
// end of the window drains every request; a stop (cancellation, or a
// failure here or in another stream) drains for abandonGrace at most, then
// gives up what is still in flight and leaves the arena mapped for good
// (see arena.keep): the ring is closed, but a request the device never
// finished may still complete into its buffer.
func (w *worker) runUring() error { return w.onRing((*ringStream).closedLoop) }

// onRing runs loop on the job's ring, with what every ring stream does
// around its loop: its thread locked, the ring made with the file and
// buffers registered, an SQPOLL thread's CPU recorded, Run told the
// stream is ready and its start awaited; the ring closed after.
func (w *worker) onRing(loop func(*ringStream) error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w.tid = unix.Gettid()
	s, err := w.openRing()
	if err != nil {
		return err
	}
	defer s.r.close()
	defer w.watchSQ()()
	w.ready()
	<-w.start
	return loop(s)
}

// drain is how a ring stream stops: once stopping it starts no new I/O;
// a stop (cancellation, or a failure here or in another stream) gives
// the I/Os in flight abandonGrace to complete before they are given up,
// where the end of the window waits for every one.
type drain struct {
	stopping bool
	giveUpAt int64 // after a stop, the end of the drain
}

// stopped notices a stop at time now, and tells whether the drain's time
// is up: the stream then gives up what is in flight and leaves its arena
// mapped for good (see arena.keep).
func (d *drain) stopped(w *worker, now int64) (abandon bool) {
	if d.giveUpAt == 0 && (w.stop.Load() || w.st.err != nil) {
		d.stopping, d.giveUpAt = true, now+int64(abandonGrace)
		return false
	}
	if d.giveUpAt != 0 && now >= d.giveUpAt {
		w.arena.keep.Store(true)
		return true
	}
	return false
}

// closedLoop is runUring's loop on the ring.
func (s *ringStream) closedLoop() error {
	w := s.w
	inflight := s.fill()
	if inflight == 0 {
		return nil
	}
	if err := s.submit(); err != nil {
		return err
	}
	clk := w.clk
	var d drain        // d.stopping: no new requests, the window ended or a stop
	var lastReap int64 // when the previous reap began
	fast := false      // completions come fast, and polling pays (judge): poll, or wait for a batch (waitBatch)
	judge := newSpinJudge(nanotime())
	for inflight > 0 {
		batch := waitBatch(fast && !d.stopping, inflight)
		n := s.r.cqReady()
		if n == 0 && batch == 1 && fast && !d.stopping {
			n = s.poll()
		}
		// Off the hot path: a wait that ended with nothing to reap, or a
		// drain. Only here is a device that answers nothing noticed.
		if n == 0 || d.stopping {
			t := nanotime()
			if d.stopped(w, t) {
				return nil
			}
			if n == 0 {
				if err := s.breathe(t); err != nil {
					return err
				}
			}
		}
		if n == 0 {
			s.r.waitFor = batch
			if err := s.submit(); err != nil {
				return err
			}
			continue
		}
		now := nanotime()
		if !d.stopping && (now >= clk.end.Load() || w.stop.Load() || w.st.err != nil) {
			d.stopping = true
		}
		fast = alwaysPoll || judge.pays(now, n) && now-lastReap < int64(n)*int64(spinBudget)
		lastReap = now
		reaped, refilled, err := s.reap(n, now, &d.stopping)
		if err != nil {
			return err
		}
		inflight += refilled - reaped
		w.st.progress.Store(w.st.allReads + w.st.allWrites)
		if inflight > 0 {
			// A fast ring hands over its last replacement and collects
			// what is ready without waiting (and polls at the top of the
			// loop if nothing is); a slow one hands it over, then sleeps
			// until the next completion.
			batch := waitBatch(fast && !d.stopping, inflight)
			if batch == 1 && fast && !d.stopping {
				if err := s.submitNoWait(); err != nil {
					return err
				}
				continue
			}
			// The yield comes before the replacements are handed over:
			// at QD1 nothing is in flight meanwhile, so a late hand-off
			// delays no completion's reaping (see yieldEvery).
			if s.w.yieldDue(now) {
				s.w.yield()
			}
			if s.r.pending > 0 {
				if err := s.handOver(); err != nil {
					return err
				}
			}
			s.r.waitFor = batch
			if err := s.submit(); err != nil {
				return err
			}
		}
	}
	return nil
}

// watchSQ returns what records an SQPOLL ring's kernel thread's CPU time,
// to run before the ring (and the thread) goes: the process's own
// figures do not hold it. The thread names itself once it runs, so it is
// looked for then; it was created with the ring, so its CPU time is the
// stream's.
func (w *worker) watchSQ() func() {
	if !w.mode.SQPoll {
		return func() {}
	}
	return func() {
		if sq := findSQThread(w.sys, w.tid); sq.tid != 0 {
			w.st.sqThreads, w.st.sqCPU = 1, sq.cpu()
		}
	}
}

// spinBudget is how long a ring polls for its next completion before it
// sleeps, when its completions have been arriving less than this apart.
//
// A ring that sleeps is woken by whichever thread completes its request:
// an io-wq worker for a device that cannot take a request without
// blocking (zram, brd: every request is punted to io-wq), the loop
// driver's worker for a loop device, an interrupt for NVMe. That wake-up
// costs the completing thread a cross-CPU interrupt, and in a virtual
// machine the exit of the sleeping CPU from halt, which is longer than
// the gap between two completions of a fast device. Measured with perf on
// a 2-CPU VM, zram, 4K random reads at QD32 (one job): the io-wq worker
// (the bottleneck, at 100 % of a CPU) spent 10 % of its time in
// _raw_spin_unlock_irqrestore sending those wake-ups, because iomatrix's
// loop caught up with the device and slept on one completion in 6-10;
// fio's slower loop finds completions waiting and sleeps on one in 60-100,
// which is why its tuned job ran 7-14 % faster than iomatrix's. Polling
// for at most spinBudget (an io_uring_enter with GETEVENTS and no minimum,
// which also runs the deferred completions) removes nearly all of those
// wake-ups: 1.09-1.25x fio's tuned job on zram at QD32 instead of
// 0.87-0.96x. A ring whose completions are further apart (QD1, any disk)
// sleeps at once, as before, so a slow device costs no CPU in polling and
// is measured exactly as fio measures it.
const spinBudget = 5 * time.Microsecond

// batchShare: a fast ring with at least 2*batchShare requests in flight
// does not poll; it sleeps until an eighth of them are done (an
// io_uring_enter waiting for that many completions). The kernel then
// wakes it once per batch, not once per completion (a ring set up with
// DEFER_TASKRUN is woken only when as many completions are ready as it
// waits for), which removes the completing thread's wake-ups as polling
// does, without keeping the ring's CPU busy. Seven eighths of the queue
// stay busy meanwhile, so the device is never starved; a completion
// waits at most for the batch's others before it is reaped, which is
// within the gaps of a fast device (at QD32 on zram, p50 69-72 µs
// against 76 µs polling and fio's 73, p99 138-144 against 140-142 and
// 141). The replacements of a reap after a batched wait all go with the
// next wait, in one syscall (the ring is not about to sleep on one
// completion, so nothing waits on them): that took zram's CPU per I/O
// from 0.89-0.93x fio's to 0.86-0.88x. 4K random reads at QD32, medians
// of 5 pairs against fio's defaults and tuned options (polling in
// brackets): buffered loop 1.068x and 1.030x fio at 0.72x and 0.79x its
// CPU per I/O (1.080x and 1.025x at 0.82x and 0.89x); direct-I/O loop
// 1.062x and 1.041x at 0.71x and 0.80x (1.060x and 1.011x at 0.80x and
// 0.89x); zram 1.061x and 1.037x at 0.86x and 0.88x (1.005x and 1.010x
// at 0.96x). Waiting for a quarter or half of them measured less
// (0.96-0.98x fio's IOPS on zram).
const batchShare = 8

// waitBatch is how many completions a ring's next wait waits for: an
// eighth of those in flight for a fast ring (at least two from 16 in
// flight up), otherwise one; with one, a fast ring polls instead.
func waitBatch(fast bool, inflight int) uint32 {
	if !fast {
		return 1
	}
	return uint32(max(1, inflight/batchShare))
}

// Polling must pay for itself (spinJudge). A ring that polls keeps its CPU
// busy between completions, and on a machine of two CPUs the thread that
// completes its requests may need it. 4K random reads at QD32 on a
// RAM-backed loop device without direct I/O (its worker copies every
// page), medians of 5 pairs against fio: polling always, 1.14-1.15x fio's
// IOPS at 1.12-1.33x its CPU per I/O; never, 1.00-1.04x at 0.78-0.85x.
// So the ring measures what polling buys, on the device, as it runs: it
// alternates short epochs with polling allowed and without, and keeps
// polling only if it pays (spinPays: enough more I/Os, at no more than
// their price in the ring's CPU time per I/O); then
// it keeps that choice for spinHold and measures again, so that a device
// whose behaviour changes is followed. The epochs alternate in an order
// that flips each time, so that a drift of the device is not read as the
// effect of either mode.
const (
	spinEpoch  = 25 * time.Millisecond
	spinEpochs = 4 // two with polling allowed, two without
	spinHold   = time.Second
	spinGain   = 1.02
)

// spinJudge is one ring's running measurement of whether polling pays. It
// is fed at each reap (no syscall, no allocation).
type spinJudge struct {
	on       bool  // polling allowed now
	probing  int   // the epoch of the current measurement, spinEpochs when holding
	flip     bool  // the order of the next measurement's epochs
	epochEnd int64 // when the current epoch (or hold) ends
	start    int64 // when it began
	startCPU int64 // the thread's CPU time then
	n        uint64
	done     [2]uint64 // completions in the epochs without (0) and with (1) polling
	span     [2]int64  // their time
	cpu      [2]int64  // the thread's CPU time in them
	cpuNow   func() int64
}

func newSpinJudge(now int64) *spinJudge {
	j := &spinJudge{on: true, flip: true, cpuNow: threadCPU}
	j.begin(now)
	return j
}

// threadCPU is the calling thread's CPU time, user and system, in ns.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// begin starts a measurement: spinEpochs epochs, alternating.
func (j *spinJudge) begin(now int64) {
	j.probing, j.done, j.span, j.cpu = 0, [2]uint64{}, [2]int64{}, [2]int64{}
	j.on = j.flip
	j.flip = !j.flip
	j.epoch(now, spinEpoch)
}

// epoch starts an epoch (or a hold) of length d at now.
func (j *spinJudge) epoch(now int64, d time.Duration) {
	j.start, j.n, j.epochEnd, j.startCPU = now, 0, now+int64(d), j.cpuNow()
}

// pays counts n completions reaped at now and tells whether the ring may
// poll.
func (j *spinJudge) pays(now int64, n uint32) bool {
	j.n += uint64(n)
	if now < j.epochEnd {
		return j.on
	}
	if j.probing == spinEpochs {
		j.begin(now)
		return j.on
	}
	k := 0
	if j.on {
		k = 1
	}
	j.done[k] += j.n
	j.span[k] += now - j.start
	j.cpu[k] += j.cpuNow() - j.startCPU
	j.probing++
	if j.probing < spinEpochs {
		j.on = !j.on
		j.epoch(now, spinEpoch)
		return j.on
	}
	j.on = spinPays(j.done, j.span, j.cpu)
	j.epoch(now, spinHold)
	return j.on
}

// spinPays tells, from the completions, time and CPU time of the epochs
// without (0) and with (1) polling, whether polling pays: it must raise
// the rate of completions by spinGain at least, and raise the ring's CPU
// time per I/O by no more than it raises that rate. Polling keeps the
// thread busy between completions, so it always costs CPU per I/O; the
// ring buys throughput with it only at a price of at most one for one.
func spinPays(done [2]uint64, span, cpu [2]int64) bool {
	if done[0] == 0 || done[1] == 0 || span[0] <= 0 || span[1] <= 0 {
		return done[1] > 0 && done[0] == 0 // a mode that did nothing loses
	}
	gain := (float64(done[1]) / float64(span[1])) / (float64(done[0]) / float64(span[0]))
	perIO := func(k int) float64 { return float64(max(cpu[k], 1)) / float64(done[k]) }
	return gain >= spinGain && perIO(1)/perIO(0) <= gain
}

// alwaysPoll has every ring poll before it sleeps, however far apart its
// completions: a test hook that runs the polling path on any device.
var alwaysPoll bool

// ringStream is a job's ring and the state of its requests in flight.
type ringStream struct {
	w     *worker
	r     *uring
	bufs  [][]byte
	slots []slot
	fresh []int32 // slots prepared since the last submit
	bs    uint64
}

// openRing makes the job's ring, with its file and buffers registered.
func (w *worker) openRing() (*ringStream, error) {
	entries := uint32(w.qd)
	if w.sync.OwnSyncs() {
		entries *= 2 // each write's linked sync
	}
	if w.sched != nil {
		entries++ // the open-loop stream's own timer (see runRate)
	}
	r, err := newUringMode(entries, w.mode, w.ns != nil)
	if err != nil {
		return nil, err
	}
	if err := r.registerFile(w.fd); err != nil {
		r.close()
		return nil, fmt.Errorf("io_uring register file: %w", err)
	}
	if w.async {
		r.sqeFlags |= uringSqeAsync
	}
	if w.sync.Kind == pattern.SyncDsync {
		r.writeFlags = unix.RWF_DSYNC
	}
	s := &ringStream{w: w, r: r, bufs: w.arena.bufs(w.qd), slots: make([]slot, w.qd), fresh: make([]int32, 0, w.qd), bs: uint64(w.arena.bs)}
	if w.ns != nil {
		// Passthrough commands name their buffers by address (see
		// prepCmd): registered ones would go unused.
		return s, nil
	}
	// Pinning needs RLIMIT_MEMLOCK or CAP_IPC_LOCK; without it plain
	// READ/WRITE still run, at the cost of a page walk per request.
	_ = r.registerBuffers(s.bufs)
	return s, nil
}

// registrable registers a's first n buffers with a throwaway ring, as
// openRing will, and returns the ring (nil when they could not be):
// pinning them needs RLIMIT_MEMLOCK or CAP_IPC_LOCK, and the memory a
// user may pin adds up over the rings that hold it, so the caller keeps
// each ring until every job's buffers are made, then closes them (which
// unpins the buffers). The calling goroutine must be locked to its
// thread, and close the ring on it.
func registrable(a *arena, n int) *uring {
	r, err := newUring(uint32(n))
	if err != nil {
		return nil
	}
	if err := r.registerBuffers(a.bufs(n)); err != nil {
		r.close()
		return nil
	}
	return r
}

// prep prepares the next I/O of the job in slot i.
func (s *ringStream) prep(i int) {
	write, off, size, kind := s.w.seq.draw()
	s.prepAt(i, write, off, size, kind)
}

// prepAt prepares an I/O in slot i.
func (s *ringStream) prepAt(i int, write bool, off, size int64, kind uint8) {
	s.w.st.submitted(write)
	if write {
		s.w.seq.scramble(s.bufs[i][:size])
	}
	sl := &s.slots[i]
	sl.off, sl.write, sl.size, sl.kind, sl.reissues = off, write, size, kind, 0
	sl.synced = write && s.w.syncDue()
	s.issue(i)
	s.fresh = append(s.fresh, int32(i))
}

// issue queues the SQE of the I/O in slot i, with the slot's buffer.
func (s *ringStream) issue(i int) {
	sl := &s.slots[i]
	buf := s.bufs[i][:sl.size]
	if s.w.ns != nil {
		s.r.prepCmd(s.w.ns, sl.write, buf, sl.off, uint64(i))
	} else {
		s.r.prep(sl.write, buf, i, sl.off, uint64(i))
	}
	if s.w.asyncKinds&(1<<(sl.kind&kindSize)) != 0 {
		s.r.last().flags |= uringSqeAsync
	}
	if sl.synced && !s.w.sync.After {
		s.syncSlot(i)
	}
}

// maxReissues is how often one I/O the kernel cancelled on its own is
// issued again before the cancellation counts as its failure.
const maxReissues = 3

// reissue issues the I/O in slot i again, unchanged, when the kernel
// cancelled it on its own, and tells whether it did. The engine cancels
// nothing, but the kernel fails a request it punted to its io-wq with
// ECANCELED when it cannot start the first worker thread for it: the
// thread's creation fails while the submitting thread has a signal
// pending, and after a few retries the kernel gives up (io-wq's
// WORKER_INIT_LIMIT; a Go thread takes the runtime's preemption signals
// often, the more so on a loaded machine). Such a request never reached
// the device, so it is issued again: it keeps its start, so that its
// latency counts the time lost, and is counted as submitted once (see
// results.Result.Reissued).
func (s *ringStream) reissue(i int, res int32) bool {
	sl := &s.slots[i]
	if res != -int32(unix.ECANCELED) || sl.reissues >= maxReissues {
		return false
	}
	sl.reissues++
	s.w.st.reissued(sl.write)
	if sl.synced {
		sl.gen++ // its linked sync was cancelled with it
	}
	s.issue(i)
	return true
}

// poll asks the kernel for completions, handing over the prepared I/Os,
// until one is posted or spinBudget has passed, without ever sleeping. It
// returns the completions waiting.
func (s *ringStream) poll() uint32 {
	deadline := nanotime() + int64(spinBudget)
	for {
		if err := s.submitNoWait(); err != nil {
			return 0 // the wait that follows reports it
		}
		if n := s.r.cqReady(); n > 0 || nanotime() >= deadline {
			return n
		}
	}
}

// submitNoWait hands the prepared I/Os to the kernel, stamping their
// start, and has it post the completions that are ready, without waiting.
func (s *ringStream) submitNoWait() error {
	s.stamp()
	return s.r.enter(false, true)
}

// stamp records the start of the I/Os prepared since the last submit.
func (s *ringStream) stamp() {
	t := nanotime()
	for _, i := range s.fresh {
		s.slots[i].start = t
	}
	s.fresh = s.fresh[:0]
}

// submit hands the prepared I/Os to the kernel, stamping their start,
// and waits for a completion.
func (s *ringStream) submit() error {
	s.stamp()
	return s.r.enter(true, true)
}

// handOver hands the prepared I/Os to the kernel, stamping their start.
func (s *ringStream) handOver() error {
	s.stamp()
	return s.r.enter(false, false)
}

// fill prepares the first I/O of every slot the job's budget allows and
// returns how many.
func (s *ringStream) fill() int {
	n := 0
	for i := range s.slots {
		if !s.w.seq.take() {
			break
		}
		s.prep(i)
		n++
	}
	return n
}

// reap accounts the n completions posted, at time now, and replaces each
// with the next I/O unless stopping (which a failed I/O sets). It returns
// how many it reaped and how many it prepared.
func (s *ringStream) reap(n uint32, now int64, stopping *bool) (reaped, refilled int, err error) {
	st, seq, clk := s.w.st, s.w.seq, s.w.clk
	for k := uint32(0); k < n; k++ {
		i, c := s.completion(s.r.peek(k), now)
		switch c {
		case ioDone:
			sl := &s.slots[i]
			if st.accountKind(clk, sl.write, sl.kind, uint64(sl.size), sl.start, now) && st.lat != nil {
				st.lat.add(sl.write, sl.off, sl.size, sl.start, now, 0)
			}
		case ioFailed:
			*stopping = true
		default:
			continue // a timer, or an I/O still in flight
		}
		reaped++
		if !*stopping && seq.take() {
			s.prep(i)
			refilled++
			// The last replacement of a reap rides on the wait that
			// follows it: at QD1 that is one syscall per I/O. After a
			// batched wait (see batchShare) they all do.
			if k+1 < n && s.r.waitFor <= 1 {
				if err := s.handOver(); err != nil {
					return reaped, refilled, err
				}
			}
		}
	}
	s.r.cqAdvance(n)
	return reaped, refilled, nil
}

// A completion is what one reaped CQE meant to its stream.
type completion uint8

const (
	ioDone     completion = iota // the slot's I/O is done, whole
	ioFailed                     // the slot's I/O failed, and is recorded
	ioReissued                   // the kernel cancelled it on its own: issued again, still in flight
	ioHeld                       // the slot's write is done, its sync is not: still in flight
	syncStale                    // a sync cancelled with its write, which was counted
	waitTimer                    // the bound on a wait went off (see enter)
	dueTimer                     // an open-loop stream's timer for its next start went off
)

// completion reads a CQE reaped at now: the slot of an I/O and how it
// ended, or which of the ring's own timers it is.
func (s *ringStream) completion(cqe *uringCqe, now int64) (slot int, c completion) {
	switch cqe.userData {
	case uringTimerData:
		s.r.timerArmed = false // enter arms another before it waits
		return -1, waitTimer
	case uringDueData:
		return -1, dueTimer
	}
	i := int(cqe.userData & slotMask)
	if cqe.userData&syncData != 0 {
		return i, s.syncCompletion(i, cqe, now)
	}
	sl := &s.slots[i]
	switch {
	case s.done(cqe.res, sl) && sl.synced:
		sl.wrote = now
		if s.w.sync.After {
			s.queueSync(i)
		}
		return i, ioHeld
	case s.done(cqe.res, sl):
		return i, ioDone
	case s.reissue(i, cqe.res):
		return i, ioReissued
	}
	switch {
	case sl.synced && s.w.sync.After:
		s.w.st.sync.submitted-- // its sync is never issued
	case sl.synced:
		sl.gen++ // its linked sync is cancelled with it: stale
	}
	s.failed(sl, cqe.res)
	return i, ioFailed
}

// done tells whether a completion's res says its I/O was done whole: a
// read or a write returns the bytes it moved, a passthrough command 0
// (its NVMe status otherwise, or -errno).
func (s *ringStream) done(res int32, sl *slot) bool {
	if s.w.ns != nil {
		return res == 0
	}
	return int64(res) == sl.size
}

// failed records the failure of the I/O in sl, which completed with res.
func (s *ringStream) failed(sl *slot, res int32) {
	if s.w.ns != nil && res > 0 {
		s.w.st.failNVMe(sl.write, sl.off, int(res))
		return
	}
	s.w.st.fail(sl.write, sl.off, int(res), int(sl.size))
}

// runPsync issues one blocking pread/pwrite at a time; a job runs qd of
// these concurrently. A pread the device never answers cannot be bounded
// or taken back: after a cancellation Run stops waiting for such a stream
// and leaves it blocked (and its arena mapped); it returns without another
// I/O once the device answers.
func (w *worker) runPsync(slotIndex int) error {
	// Locked, so that the stream's wait for a CPU is its thread's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w.tid = unix.Gettid()
	w.ready()
	<-w.start
	whole := w.arena.buf(slotIndex)
	st, seq, clk := w.st, w.seq, w.clk
	for {
		start := nanotime()
		if w.yieldDue(start) {
			w.yield()
			start = w.yieldedAt
		}
		if start >= clk.end.Load() || w.stop.Load() || !seq.take() {
			return nil
		}
		write, off, size, kind := seq.draw()
		buf := whole[:size]
		st.submitted(write)
		var n int
		var err error
		var wrote int64
		var syncErr error
		if write {
			seq.scramble(buf)
			n, wrote, syncErr, err = w.psyncWrite(buf, off)
		} else {
			n, err = pread(w.fd, buf, off)
		}
		now := nanotime()
		if syncErr != nil {
			var errno unix.Errno
			errors.As(syncErr, &errno)
			st.syncFailed(w.sync.Kind, off, -int(errno))
			return nil
		}
		if wrote != 0 {
			st.synced(clk, now-wrote, now)
		}
		if err != nil || n != len(buf) {
			res := n
			var errno unix.Errno
			if errors.As(err, &errno) {
				res = -int(errno)
			}
			st.fail(write, off, res, len(buf))
			return nil
		}
		if st.accountKind(clk, write, kind, uint64(size), start, now) && st.lat != nil {
			st.lat.add(write, off, int64(size), start, now, 0)
		}
		st.progress.Store(st.allReads + st.allWrites)
	}
}

func pread(fd int, b []byte, off int64) (int, error) { return retryEINTR(unix.Pread, fd, b, off) }

func pwrite(fd int, b []byte, off int64) (int, error) { return retryEINTR(unix.Pwrite, fd, b, off) }

// retryEINTR repeats a positioned read or write a signal interrupted.
func retryEINTR(op func(int, []byte, int64) (int, error), fd int, b []byte, off int64) (int, error) {
	for {
		n, err := op(fd, b, off)
		if err != unix.EINTR {
			return n, err
		}
	}
}
