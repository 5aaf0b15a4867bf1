package iotest

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// Open-loop runs. A closed loop keeps QueueDepth I/Os in flight and
// starts one the moment another finishes: it measures what the device can
// do. An application issues its I/O at its own pace instead, whatever the
// device is doing, and when the device stalls, the I/Os that should have
// started meanwhile wait too. A closed loop never issues those, so it
// never counts their wait (coordinated omission). An open-loop pattern
// (results.Pattern.Rate) draws each I/O's intended start from a schedule,
// and records two latencies per I/O: service, from its submission to its
// completion (what a closed loop records), and response, from its
// intended start to its completion, wait for a free slot included.

// LateThreshold is how long after its intended start an I/O may be
// submitted before it counts as late (results.RateStats.LateIOs). Below
// it lie the wake-up delays of any timed sleep; above it the stream is
// behind its schedule: every slot was busy, or the machine could not run
// it.
const LateThreshold = time.Millisecond

// arrivals is one stream of intended starts, in ns since the run's start.
type arrivals struct {
	rng     rand.PCG // by value: a schedule is copied to count ahead of itself and replayed
	rate    float64  // arrivals per second
	poisson bool
	off     bool    // no arrivals at all (a direction without a rate)
	k       uint64  // arrivals taken
	next    float64 // the next one's intended start
	// burst is how many arrivals come at each moment of the schedule:
	// 1, or a burst's writes (Rate.BurstSize), rate then being the
	// bursts' own.
	burst uint64
	// prof, when set, shapes the rate over time (RateProfile): lam is the
	// profile's cumulative arrivals at the next one, cycle and step the
	// profile's cursor there.
	prof  *rateSteps
	lam   float64
	cycle int64
	step  int
}

// newArrivals is a stream of iops arrivals a second, burst at a time
// (1: one by one).
func newArrivals(iops float64, burst int, poisson bool, seed, stream uint64) arrivals {
	a := arrivals{poisson: poisson, off: iops <= 0, burst: uint64(max(burst, 1))}
	a.rng.Seed(seed^0xa7717a15, stream*0x9e3779b97f4a7c15+1)
	if !a.off {
		a.rate = iops / float64(a.burst)
		if poisson {
			a.next = a.gap()
		}
	}
	return a
}

// newProfiledArrivals is a stream of arrivals whose rate follows steps
// (nil: no arrivals at all), burst at a time.
func newProfiledArrivals(steps *rateSteps, burst int, poisson bool, seed, stream uint64) arrivals {
	a := arrivals{poisson: poisson, off: steps == nil, prof: steps, burst: uint64(max(burst, 1))}
	a.rng.Seed(seed^0xa7717a15, stream*0x9e3779b97f4a7c15+1)
	if !a.off {
		if poisson {
			a.lam = float64(a.burst) * a.unitGap()
		}
		a.next = steps.at(a.lam, &a.cycle, &a.step)
	}
	return a
}

// gap draws the wait in ns before the next poisson arrival: exponential
// with the mean 1/rate.
func (a *arrivals) gap() float64 { return a.unitGap() * 1e9 / a.rate }

// unitGap draws an exponential wait of mean 1 (inverse transform of a
// uniform draw).
func (a *arrivals) unitGap() float64 {
	u := float64(a.rng.Uint64()>>11) * 0x1p-53 // [0, 1)
	return -math.Log1p(-u)
}

// take moves past the next arrival. Uniform arrivals come at 0, 1, 2, …
// periods, computed from the count rather than summed, so that a long
// run does not drift; a window of whole periods holds exactly its share.
// A burst's arrivals share one moment; the next burst comes a gap later,
// drawn at the bursts' rate (a profile's cumulative arrivals move on by
// the burst's size).
func (a *arrivals) take() {
	a.k++
	if a.k%a.burst != 0 {
		return // more of the burst, at the same moment
	}
	if a.prof != nil {
		if a.poisson {
			a.lam += float64(a.burst) * a.unitGap()
		} else {
			a.lam = float64(a.k)
		}
		a.next = a.prof.at(a.lam, &a.cycle, &a.step)
		return
	}
	if a.poisson {
		a.next += a.gap()
	} else {
		a.next = float64(a.k/a.burst) * 1e9 / a.rate
	}
}

// schedule is a job's intended starts: one stream of arrivals, each I/O's
// direction drawn by the pattern's read share, or one stream per
// direction, the writes in two when some of them come in bursts.
type schedule struct {
	// dir[0]: every I/O, or the reads; dir[1]: the writes (those one at
	// a time when some come in bursts); dir[2]: the writes in bursts.
	dir    [3]arrivals
	perDir bool
	base   int64  // nanotime of the run's start
	n      uint64 // I/Os taken
	// replay, when set, is a trace's I/Os, which replace the arrivals
	// (see Replay).
	replay []replayIO
}

// newSchedule is job's share of rate, seeded apart from the offsets,
// shaped over time by prof when it is set (a pattern with a rate per
// direction: RateProfile.Check).
func newSchedule(rate results.Rate, jobs, job int, seed uint64, prof *RateProfile) schedule {
	poisson := rate.Arrival != results.ArrivalUniform
	stream := uint64(job) << 8
	s := schedule{perDir: rate.PerDirection()}
	s.dir[2].off = true
	// burst is the share of the writes that come in bursts.
	burst := 0.0
	if s.perDir && rate.Bursty() && rate.WriteIOPS > 0 {
		burst = min(rate.BurstIOPS/rate.WriteIOPS, 1)
	}
	if prof != nil && s.perDir {
		s.dir[0] = newProfiledArrivals(newRateSteps(prof.StepNS, prof.Reads, 1, jobs), 1, poisson, seed, stream)
		s.dir[1] = newProfiledArrivals(newRateSteps(prof.StepNS, prof.Writes, 1-burst, jobs), 1, poisson, seed, stream|1)
		if burst > 0 {
			s.dir[2] = newProfiledArrivals(newRateSteps(prof.StepNS, prof.Writes, burst, jobs), rate.BurstSize, poisson, seed, stream|2)
		}
		return s
	}
	if s.perDir {
		s.dir[0] = newArrivals(rate.ReadIOPS/float64(jobs), 1, poisson, seed, stream)
		s.dir[1] = newArrivals((1-burst)*rate.WriteIOPS/float64(jobs), 1, poisson, seed, stream|1)
		if burst > 0 {
			s.dir[2] = newArrivals(burst*rate.WriteIOPS/float64(jobs), rate.BurstSize, poisson, seed, stream|2)
		}
	} else {
		s.dir[0] = newArrivals(rate.IOPS/float64(jobs), 1, poisson, seed, stream)
		s.dir[1].off = true
	}
	return s
}

// next is the stream whose arrival is next (the earliest; the lowest
// index on a tie), or -1 when none has any left.
func (s *schedule) next() int {
	at := -1
	for i := range s.dir {
		if d := &s.dir[i]; !d.off && (at < 0 || d.next < s.dir[at].next) {
			at = i
		}
	}
	return at
}

// due is the next I/O's intended start (nanotime) and, with a schedule
// per direction, its direction.
func (s *schedule) due() (at int64, write bool) {
	if s.replay != nil {
		return s.replayDue()
	}
	i := s.next()
	if i < 0 {
		return math.MaxInt64, false
	}
	return s.base + int64(s.dir[i].next), i > 0
}

// take moves past the I/O due returned.
func (s *schedule) take() {
	if s.replay != nil {
		s.n++
		return
	}
	if i := s.next(); i >= 0 {
		s.dir[i].take()
	}
	s.n++
}

// openStats are an open-loop stream's figures of its window's I/Os.
type openStats struct {
	readResp, writeResp hist.Histogram
	lateness            hist.Histogram
	late, slotWaits     uint64
	maxBacklog          uint64
	// Set once the stream has ended (see settle).
	scheduled, backlogAtEnd uint64
	backlogAge              int64
}

func (o *openStats) merge(x *openStats) {
	o.readResp.Merge(&x.readResp)
	o.writeResp.Merge(&x.writeResp)
	o.lateness.Merge(&x.lateness)
	o.late += x.late
	o.slotWaits += x.slotWaits
	o.maxBacklog += x.maxBacklog
	o.scheduled += x.scheduled
	o.backlogAtEnd += x.backlogAtEnd
	o.backlogAge = max(o.backlogAge, x.backlogAge)
}

// accountOpen books one completed open-loop I/O at time now.
func (s *stats) accountOpen(c *clock, sl *slot, now int64) {
	if !s.accountKind(c, sl.write, sl.kind, uint64(sl.size), sl.start, now) {
		return
	}
	if s.lat != nil {
		s.lat.add(sl.write, sl.off, sl.size, sl.start, now, sl.intended)
	}
	o := s.open
	if sl.write {
		o.writeResp.Record(now - sl.intended)
	} else {
		o.readResp.Record(now - sl.intended)
	}
	late := sl.start - sl.intended
	o.lateness.Record(late)
	if late > int64(LateThreshold) {
		o.late++
	}
	if sl.waited {
		o.slotWaits++
	}
}

// settle counts, once the stream has ended, what its schedule intended
// inside the window and what of it was never issued: a replay of the
// schedule from its start (first), against the one that ran (ran).
func (o *openStats) settle(first, ran schedule, rampEnd, end int64) {
	replay := first
	for {
		at, _ := replay.due()
		if at >= end {
			break
		}
		if at >= rampEnd {
			o.scheduled++
		}
		replay.take()
	}
	if replay.n > ran.n {
		o.backlogAtEnd = replay.n - ran.n
		at, _ := ran.due()
		o.backlogAge = end - at
	}
}

// runRate issues the job's I/Os at their intended starts, with at most
// qd in flight, until the window's end, then drains.
//
// The stream sleeps until the earlier of its next intended start and its
// next completion: one io_uring_enter waits for a completion, and a timer
// request of the ring's own, at the next intended start (armAt, absolute
// on the clock nanotime reads), ends the wait then; the same call hands
// over what was prepared. A completion is reaped the moment it is posted,
// so an I/O's latencies end at its completion, not at the next wake-up:
// at low rates an I/O costs a wake-up for its start and one for its
// completion. At rates where the gaps are shorter than a wake-up, each
// wake issues every I/O then due and reaps every completion posted, so
// the syscalls per I/O fall as the rate rises. The timer is armed once
// per wake-up for a start, never for a wait on a completion: against a
// wait with its own timeout (IORING_ENTER_EXT_ARG), which arms and
// cancels a kernel timer on every sleep, it measured 10-25 % less CPU per
// I/O at 1,000 and 20,000 IOPS on a RAM-backed loop device (alternating
// runs, noisy).
//
// A timer wakes the stream late: about 45 µs on the test VM, whatever the
// timer slack (a TIMEOUT request has none). So the timer goes off that
// much before the start it is for (early: the delays seen, averaged, at
// most maxEarly), and the stream polls the ring without sleeping for what
// is left (spinMax at most), reaping completions meanwhile. A start too
// near for that is slept for exactly and started late by the delay:
// spinning for every start closer than a wake-up took a whole CPU at
// 20,000 IOPS. Measured on a RAM-backed loop device at 1,000 IOPS: the
// lateness p50 fell from 43 µs to under 1 µs, for about 10 % more CPU
// per I/O.
//
// Its waits are raw syscalls, as a closed loop's are (see enter), though
// the thread then holds its P while it sleeps: scheduler-aware ones, which
// would let a stop-the-world pause through without waiting for the sleep
// to end, doubled the CPU per I/O at 1,000 IOPS (78 against 36-44 µs on
// a RAM-backed loop device): the runtime's monitor thread polls every
// 20 µs while syscalls block. A run allocates nothing per I/O, so such
// pauses are rare, and every wait still ends within waitTimeout.
//
// While every slot is busy the stream waits for a completion as a closed
// loop does, polling first while completions come fast (see spinBudget):
// without it, 80 % of a RAM-backed loop device's closed-loop maximum
// could not be sustained.
//
// An I/O due while every slot is busy waits for the next completion; its
// response time counts that wait, its service time does not. A schedule
// the device cannot keep builds a backlog, which is counted (ahead is a
// copy of the schedule run forward to now) and reported, never hidden:
// the stream does not become a closed loop, it falls behind.
func (w *worker) runRate() error { return w.onRing((*ringStream).openLoop) }

// openLoop is runRate's loop on the ring: issue what is due, wait for
// the next start or completion, reap.
func (s *ringStream) openLoop() error {
	o := newOpenStream(s)
	for {
		now := nanotime()
		if o.d.stopped(s.w, now) {
			break
		}
		o.issueDue(now)
		if !o.d.stopping && now >= o.end+int64(lateGrace) {
			o.d.stopping = true // what was due inside the window and is still unissued is the backlog
		}
		if o.d.stopping && o.inflight == 0 {
			break
		}
		ready, err := o.wait()
		if err != nil {
			return err
		}
		if ready {
			o.reap()
		}
	}
	clk := s.w.clk
	s.w.st.open.settle(o.first, *o.sc, clk.rampEnd.Load(), o.end)
	return nil
}

// openStream is an open-loop stream's state on its ring.
type openStream struct {
	s         *ringStream
	sc        *schedule
	first     schedule // the schedule from its start, replayed to count what it intended (settle)
	ahead     schedule // the schedule run forward to now, to count the backlog
	end       int64    // the window's end: an open-loop window never moves
	free      []int32  // the slots without an I/O
	inflight  int
	d         drain
	blockedAt int64 // when an I/O last found every slot busy
	lastReap  int64 // when the previous reap began
	fast      bool  // completions come less than spinBudget apart
	dueArmed  bool  // the ring's timer for the next intended start is pending
	armedAt   int64 // when it is set to go off
	early     int64 // how long before a start the timer goes off: its wake-up delay, averaged
}

func newOpenStream(s *ringStream) *openStream {
	w := s.w
	o := &openStream{s: s, sc: w.sched, free: make([]int32, 0, w.qd), blockedAt: math.MinInt64}
	for i := w.qd - 1; i >= 0; i-- {
		o.free = append(o.free, int32(i))
	}
	o.sc.base = w.clk.base
	o.first, o.ahead = *o.sc, *o.sc
	o.end = w.clk.end.Load()
	return o
}

// issueDue prepares every I/O due by now that a free slot can take; an
// I/O due while every slot is busy waits, and the backlog is counted.
func (o *openStream) issueDue(now int64) {
	s, sc, seq := o.s, o.sc, o.s.w.seq
	for !o.d.stopping {
		due, write := sc.due()
		if due == math.MaxInt64 {
			o.d.stopping = true // the schedule has no I/O left (a replay's trace is over)
			return
		}
		if due > now {
			return
		}
		if due >= o.end {
			o.d.stopping = true // the schedule is over
			return
		}
		if len(o.free) == 0 {
			o.blockedAt = now
			if o.ahead.n < sc.n {
				o.ahead = *sc
			}
			for at, _ := o.ahead.due(); at <= now && at < o.end; at, _ = o.ahead.due() {
				o.ahead.take()
			}
			st := o.s.w.st
			st.open.maxBacklog = max(st.open.maxBacklog, o.ahead.n-sc.n)
			return
		}
		if !seq.take() {
			o.d.stopping = true // the budget is spent
			return
		}
		i := int(o.free[len(o.free)-1])
		o.free = o.free[:len(o.free)-1]
		if sc.replay != nil {
			io := &sc.replay[sc.n]
			s.prepAt(i, write, io.off, io.size, io.kind)
		} else if sc.perDir {
			off, size, kind := seq.drawFor(write)
			s.prepAt(i, write, off, size, kind)
		} else {
			s.prep(i)
		}
		s.slots[i].intended, s.slots[i].waited = due, due <= o.blockedAt
		sc.take()
		o.inflight++
	}
}

// wait hands over what is prepared and waits for the next intended start
// or a completion, and tells whether completions are ready to reap.
func (o *openStream) wait() (ready bool, err error) {
	s := o.s
	if !o.d.stopping && len(o.free) > 0 {
		due, _ := o.sc.due()
		wake := min(due, o.end)
		t := nanotime()
		if wake <= t {
			return false, nil
		}
		if wake-t <= spinMax {
			// Woken early on purpose, or the next start is nearly
			// due: hand over what is prepared and collect
			// completions, without sleeping, until it is.
			if err := s.submitNoWait(); err != nil {
				return false, err
			}
			return s.r.cqReady() > 0, nil
		}
		if !o.dueArmed {
			// Early by the wake-up delay when there is room for it; a
			// start nearer than that is slept for exactly (and started
			// late by the delay): spinning for it would burn a CPU at
			// high rates.
			o.armedAt = wake
			if wake-t > o.early+spinMax {
				o.armedAt -= o.early
			}
			s.r.armAt(o.armedAt)
			o.dueArmed = true
		}
		if err := s.breathe(t); err != nil {
			return false, err
		}
		err = s.submit()
	} else if !(o.fast && !o.d.stopping && s.poll() > 0) {
		// Every slot busy: the stream waits for a completion as a
		// closed loop does, polling first while completions come
		// fast (see spinBudget).
		if err := s.breathe(nanotime()); err != nil {
			return false, err
		}
		err = s.submit()
	}
	return err == nil && s.r.cqReady() > 0, err
}

// reap accounts the completions posted and frees their slots.
func (o *openStream) reap() {
	s, w := o.s, o.s.w
	n := s.r.cqReady()
	now := nanotime()
	o.fast = alwaysPoll || now-o.lastReap < int64(n)*int64(spinBudget)
	o.lastReap = now
	for k := uint32(0); k < n; k++ {
		i, c := s.completion(s.r.peek(k), now)
		switch c {
		case dueTimer:
			// How late the timer woke the stream: the next timer goes
			// off that much before the start it is for.
			o.dueArmed = false
			o.early += (min(max(now-o.armedAt, 0), maxEarly) - o.early) / 8
			continue
		case ioDone:
			w.st.accountOpen(w.clk, &s.slots[i], now)
		case ioFailed:
			o.d.stopped(w, now) // the failure is st.err: a stop
		default:
			continue // the wait's timer, or an I/O still in flight
		}
		o.free = append(o.free, int32(i))
		o.inflight--
	}
	s.r.cqAdvance(n)
	w.st.progress.Store(w.st.allReads + w.st.allWrites)
}

// lateGrace: an I/O due inside the window is issued even once the window
// has ended, for up to lateGrace, so that the window's schedule is kept
// whole and the backlog is only what the stream never issued. A stream
// that keeps up is behind by its lateness, microseconds, at the end (a
// few I/Os at 200,000 IOPS, hundreds after a burst of poisson arrivals
// that filled every slot); one that cannot keep up stops after
// lateGrace, and its backlog is reported without stretching the run.
// Their completions fall after the window, so none of them is counted
// in its figures, as none due in the ramp is left out.
const lateGrace = 100 * time.Millisecond

// maxEarly bounds how long before an intended start the stream's timer
// goes off (see runRate): the wake-up delay it makes up for, which a
// stall of the machine must not stretch into long spins.
const maxEarly = int64(200 * time.Microsecond)

// spinMax: a start at most this far ahead is waited for without sleeping.
const spinMax = int64(10 * time.Microsecond)

// CheckOpen checks what an open-loop pattern needs of the options, with
// the engine they run on: o.Engine before it is resolved, Run's after.
func CheckOpen(o Options, engine string) error {
	if o.Auto != nil {
		return pattern.Fieldf("runtime", "an open-loop run has a fixed window: auto cannot judge a schedule's figures")
	}
	if engine == EnginePsync {
		return pattern.Fieldf("engine", "an open-loop run needs the uring engine: the psync engine cannot wait for a schedule and a completion at once")
	}
	if o.Ring.Poll {
		return pattern.Fieldf("poll", "an open-loop run times its starts with timer requests, which a polled ring (IOPOLL) cannot hold")
	}
	return nil
}

// Sustained is the rule of results.RateStats.Sustained: at the window's
// end, at most one I/O per job (one due while its slots were busy) or 1 %
// of the window's schedule was left unissued.
func Sustained(backlogAtEnd, scheduled uint64, jobs int) bool {
	return backlogAtEnd <= max(uint64(jobs), scheduled/100)
}

// openResult adds an open-loop run's figures to its result.
func openResult(res *results.Result, p results.Pattern, s *stats, prof *RateProfile) {
	o := s.open
	if o == nil {
		return
	}
	secs := float64(res.DurationNS) / 1e9
	dir := func(d *results.DirStats, resp *hist.Histogram) {
		// Service is the completion latency, whose histogram lat_ns holds.
		service, response := d.LatNS.Figures(), results.Summarize(resp)
		d.ServiceLatNS, d.ResponseLatNS = &service, &response
	}
	dir(&res.Read, &o.readResp)
	dir(&res.Write, &o.writeResp)
	if res.Total.LatNS != nil {
		all := o.readResp
		all.Merge(&o.writeResp)
		service, response := *res.Total.LatNS, results.Summarize(&all).Figures()
		res.Total.ServiceLatNS, res.Total.ResponseLatNS = &service, &response
	}
	arrival := p.Rate.Arrival
	if arrival == "" {
		arrival = results.ArrivalPoisson
	}
	res.Rate = &results.RateStats{
		Arrival:         arrival,
		TargetIOPS:      p.Rate.Total(),
		ScheduledIOs:    o.scheduled,
		ScheduledIOPS:   round2(float64(o.scheduled) / secs),
		AchievedIOPS:    res.Total.IOPS,
		Sustained:       Sustained(o.backlogAtEnd, o.scheduled, p.Jobs),
		LatenessNS:      results.Summarize(&o.lateness).Figures(),
		LateIOs:         o.late,
		LateThresholdNS: int64(LateThreshold),
		SlotWaits:       o.slotWaits,
		MaxBacklog:      o.maxBacklog,
		BacklogAtEnd:    o.backlogAtEnd,
		BacklogAgeNS:    o.backlogAge,
	}
	if prof != nil {
		res.Rate.ProfileSteps, res.Rate.ProfileStepNS = len(prof.Reads), prof.StepNS
	}
}
