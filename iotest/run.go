package iotest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// MaxBufferBytes caps jobs × queue depth × block size: the I/O memory one
// run may pin.
const MaxBufferBytes = 4 << 30

// maxTimeline bounds the per-second timeline kept for very long runs.
const maxTimeline = 24 * time.Hour

// maxProcs bounds the Ps raised for blocking streams; past it the
// scheduler's own hand-off serves the rest.
const maxProcs = 1024

// stopGrace bounds Run's wait for its streams once ctx is done. A ring
// gives up on its device within abandonGrace and two wait bounds (one to
// see the stop, one to see the deadline); a psync stream blocked in the
// kernel cannot be bounded at all.
const stopGrace = abandonGrace + 200*time.Millisecond

// ResolveEngine turns "auto" into a concrete engine: uring when a ring can
// be created here, psync otherwise (notice says why).
func ResolveEngine(engine string, notice func(string)) (string, error) {
	switch engine {
	case EnginePsync:
		return EnginePsync, nil
	case EngineUring:
		if err := ProbeUring(); err != nil {
			return "", err
		}
		return EngineUring, nil
	case "", EngineAuto:
		if err := ProbeUring(); err != nil {
			if notice != nil {
				notice(fmt.Sprintf("%v; using the psync engine", err))
			}
			return EnginePsync, nil
		}
		return EngineUring, nil
	}
	return "", pattern.Fieldf("engine", "%q is not one of auto, uring, psync", engine)
}

// Run measures one pattern on an open target. It never prints; progress
// goes through o.Progress. On cancellation it returns ctx's error and a
// Result that must be discarded, within stopGrace even when the device
// has stopped answering. On an I/O error it returns the Result so
// far (with Error set) and an error wrapping *IOError.
func Run(ctx context.Context, t *target.Target, p results.Pattern, o Options) (results.Result, error) {
	engine, err := checkRun(t, p, o)
	if err != nil {
		return results.Result{}, err
	}
	r := &run{t: t, p: p, o: o, engine: engine, seconds: int(math.Ceil(min(o.window(), maxTimeline).Seconds()))}
	if o.Auto != nil {
		r.auto = &autoWindow{stopper: stopper{auto: *o.Auto}}
	}
	holdRuntime(min(r.streams()+1, maxProcs))
	defer releaseRuntime()
	defer r.freeArenas()
	if err := r.makeStreams(); err != nil {
		return results.Result{}, err
	}
	unhook := context.AfterFunc(ctx, func() { r.stop.Store(true) })
	defer unhook()
	r.lat = newLatWriter(o.LatLog, &r.clk, r.workers)
	r.start()
	defer r.watch.close()
	if err := r.wait(ctx); err != nil {
		r.lat.abandon()
		return results.Result{}, err
	}
	res, err := r.result(ctx)
	return r.finishLog(res, err)
}

// finishLog writes the rest of the latency log, once every stream has
// ended, and records it in res; a log that could not be written is the
// run's error.
func (r *run) finishLog(res results.Result, err error) (results.Result, error) {
	if r.lat == nil {
		return res, err
	}
	st, logErr := r.lat.finish()
	if res.Name != "" {
		res.LatLog = st
	}
	if st.Dropped > 0 && r.o.Notice != nil {
		r.o.Notice(fmt.Sprintf("%s: the latency log's writer fell behind: %d of %d entries dropped (counted in the result's lat_log)",
			r.p.Name(), st.Dropped, st.Dropped+st.Lines))
	}
	if err == nil {
		err = logErr
	}
	return res, err
}

// checkRun resolves the engine and checks what the engine and the open
// target must agree on. The pattern and the options were checked where
// they were written (pattern.Build, Options.Validate), and the pattern
// against the target's facts before it was opened (pattern.CheckTarget):
// Run does not check them again.
func checkRun(t *target.Target, p results.Pattern, o Options) (engine string, err error) {
	if p.Writes() && !t.Writable() {
		return "", fmt.Errorf("%s: %w: target was opened read-only", p.Name(), pattern.ErrBadPattern)
	}
	if engine, err = ResolveEngine(o.Engine, o.Notice); err != nil {
		return "", err
	}
	if ns := t.Namespace(); ns != nil {
		if err := checkNamespace(ns, p, engine); err != nil {
			return "", err
		}
	}
	if err := o.Ring.Check(engine); err != nil {
		return "", err // auto fell back to psync: a mode is never dropped silently
	}
	if err := CheckSync(p, o); err != nil {
		return "", err
	}
	if o.Profile != nil {
		if err := o.Profile.Check(p); err != nil {
			return "", fmt.Errorf("%s: %w", p.Name(), err)
		}
	}
	if o.Ring.Poll {
		if err := t.CheckPoll(); err != nil {
			return "", err
		}
	}
	if err := o.LatLog.CheckPattern(p); err != nil {
		return "", err
	}
	if p.Rate.Open() {
		return engine, CheckOpen(o, engine)
	}
	return engine, nil
}

// run is one measurement in progress: its I/O streams, their clock, and
// the counters sampled at the edges of the measured window.
type run struct {
	t       *target.Target
	p       results.Pattern
	o       Options
	engine  string
	seconds int // of the timeline

	workers []*worker
	arenas  []*arena
	stop    atomic.Bool // set on cancellation or by a failing stream
	clk     clock
	errs    []error
	done    chan struct{} // closed when every stream has returned

	started       time.Time // wall clock at base
	base          int64     // nanotime of the start
	before, after snapshot
	measuring     bool // the window has begun: before is taken
	watch         *cpuWatch
	finishedEarly bool // the streams ended before the window did
	auto          *autoWindow
	lat           *latWriter  // nil without a latency log
	replay        *ReplayPlan // a trace's I/Os, not the pattern's draws (Replay)
}

// autoWindow follows an auto window round by round.
type autoWindow struct {
	stopper
	read      int  // whole rounds of the current window judged so far
	converged bool // the stopper stopped it; end is set
	ci        float64
}

// streams is the number of I/O streams: a ring per job, or a goroutine
// per request in flight with psync.
func (r *run) streams() int {
	if r.engine == EnginePsync {
		return r.p.Jobs * r.p.QueueDepth
	}
	return r.p.Jobs
}

// buffers is how the jobs' buffers lay in memory (results.Result.Buffers):
// "" when each is one page or less.
func (r *run) buffers() string {
	layout := ""
	for _, a := range r.arenas {
		switch {
		case a.stride <= pageSize:
			return ""
		case !a.contiguous:
			return "scattered"
		default:
			layout = "contiguous"
		}
	}
	return layout
}

// makeStreams prepares each job's buffers, offsets and statistics.
func (r *run) makeStreams() error {
	p, o := r.p, r.o
	fill := rand.NewPCG(o.Seed, 0x5eed)
	m, err := newMix(p, r.t.Size)
	if err != nil {
		return err
	}
	fd, ns, sys := r.t.Fd(), r.t.Namespace(), r.t.Sys()
	sync := pattern.SyncOf(p)
	// The rings that check each job's buffers can be registered, held
	// until all are made (see registrable).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var probes []*uring
	defer func() {
		for _, ring := range probes {
			ring.close()
		}
	}()
	for j := 0; j < p.Jobs; j++ {
		var budget *atomic.Int64
		if o.MaxIOs > 0 {
			budget = new(atomic.Int64)
			budget.Store(int64(min(o.MaxIOs, math.MaxInt64)))
		}
		// A ring's buffers may be contiguous when it can register them
		// (passthrough commands name them by address, and are never
		// split); psync's never are (see newArena).
		a, err := newArena(sys, p.QueueDepth, p.BlockSize, fill, r.engine == EngineUring)
		if err != nil {
			return err
		}
		if a.contiguous && ns == nil {
			if probe := registrable(a, p.QueueDepth); probe != nil {
				probes = append(probes, probe)
			} else {
				a.free()
				if a, err = newArena(sys, p.QueueDepth, p.BlockSize, fill, false); err != nil {
					return err
				}
			}
		}
		if p.Compress > 0 {
			shapeArena(a.mem, p)
		}
		r.arenas = append(r.arenas, a)
		if r.engine == EngineUring {
			seq := newSequenceWith(o.Seed, j, 0, p, r.t.Size, m)
			seq.budget = budget
			w := &worker{st: newStats(r.seconds), seq: seq, arena: a, fd: fd, qd: p.QueueDepth, mode: o.Ring, ns: ns, sys: sys, sync: sync}
			w.async, w.asyncKinds = r.splitOnDevice(m)
			if r.replay != nil {
				w.sched, w.st.open = &schedule{replay: r.replay.ios}, new(openStats)
			} else if p.Rate.Open() {
				sc := newSchedule(p.Rate, p.Jobs, j, o.Seed, o.Profile)
				w.sched, w.st.open = &sc, new(openStats)
			}
			r.workers = append(r.workers, w)
			continue
		}
		var cursor atomic.Int64
		for q := 0; q < p.QueueDepth; q++ {
			seq := newSequenceWith(o.Seed, j, q, p, r.t.Size, m)
			seq.seqShared = &cursor
			seq.budget = budget
			r.workers = append(r.workers, &worker{st: newStats(r.seconds), seq: seq, arena: a, fd: fd, qd: q, sync: sync})
		}
	}
	return nil
}

// splitOnDevice tells whether each I/O of the pattern is split into
// several requests by the block device being measured (see worker.async),
// or, for a block-size mix, which of its sizes are (bit k for m.sizes[k]):
// only those go straight to the kernel's workers, the others keep the
// non-blocking first attempt. Measured on a RAM-backed loop device, a mix
// of 4k/60:16k/30:1m/10 sent whole to the workers took 24 % more CPU per
// I/O than fio.
func (r *run) splitOnDevice(m *mixTable) (all bool, kinds uint16) {
	if r.t.Info.Kind != "block" {
		return false, 0
	}
	disk := sysfs.BlockDevice{MaxSectorsKB: r.t.Info.MaxSectorsKB, MaxSegments: r.t.Info.MaxSegments}
	if m == nil || len(m.sizes) == 0 {
		return disk.RequestsPerIO(r.p.BlockSize) > 1, 0
	}
	for k, size := range m.sizes {
		if disk.RequestsPerIO(size) > 1 {
			kinds |= 1 << k
		}
	}
	return false, kinds
}

func (r *run) freeArenas() {
	for _, a := range r.arenas {
		a.free()
	}
}

// start launches the streams and starts the clock once every one is set
// up (a ring, its registrations), so the ramp and the window count from
// the first I/O: under a cap the window is placed against the throttle's
// slices, which start with the first I/O (see cgroup.AlignWindow).
func (r *run) start() {
	begin := make(chan struct{})
	var ready, running sync.WaitGroup
	r.errs = make([]error, len(r.workers))
	for i, w := range r.workers {
		if w.sync.OwnSyncs() {
			w.st.sync.hist = newSyncHist()
		}
		w.clk, w.stop, w.start = &r.clk, &r.stop, begin
		ready.Add(1)
		w.ready = sync.OnceFunc(ready.Done)
		running.Add(1)
		go func() {
			defer running.Done()
			defer w.ready() // also when setting up failed
			switch {
			case w.sched != nil:
				r.errs[i] = w.runRate()
			case r.engine == EngineUring:
				r.errs[i] = w.runUring()
			default:
				r.errs[i] = w.runPsync(w.qd)
			}
			if r.errs[i] != nil || w.st.err != nil {
				r.stop.Store(true) // one failing stream ends the pattern
			}
		}()
	}
	r.done = make(chan struct{})
	go func() { running.Wait(); close(r.done) }()
	ready.Wait()
	r.watch = newCPUWatch(r)
	r.started = time.Now()
	r.base = nanotime()
	r.clk.base = r.base
	rampEnd := r.base + int64(r.o.Ramp)
	r.clk.rampEnd.Store(rampEnd)
	r.clk.end.Store(rampEnd + int64(r.o.window()))
	for _, w := range r.workers {
		w.st.window = rampEnd // the streams read it only after begin
		w.st.sealedIn.Store(rampEnd)
	}
	if r.o.Ramp == 0 {
		r.before, r.measuring = r.snapshot(), true
	}
	close(begin)
}

// wait follows the run to its end: the window's start (counters sampled),
// each round of an auto window, its end and the drain, or an early end of
// every stream; progress once a second. On cancellation it returns ctx's
// error within stopGrace.
func (r *run) wait(ctx context.Context) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	rampTimer := time.NewTimer(time.Duration(r.clk.rampEnd.Load() - nanotime()))
	defer rampTimer.Stop()
	endTimer := time.NewTimer(time.Duration(r.clk.end.Load() - nanotime()))
	defer endTimer.Stop()
	var roundTimer <-chan time.Time // nil: no auto window, or it is decided
	if r.auto != nil {
		roundTimer = time.After(r.nextRoundIn())
	}
	lastIOs, lastAt := uint64(0), r.base
	for {
		select {
		case <-rampTimer.C:
			if !r.measuring {
				r.before, r.measuring = r.snapshot(), true
			}
		case <-roundTimer:
			switch r.judgeRounds() {
			case restart:
				// The counters are sampled again at the new start.
				r.measuring = false
				rampTimer.Reset(time.Duration(r.clk.rampEnd.Load() - nanotime()))
			case stopNow:
				endTimer.Reset(time.Duration(r.clk.end.Load() - nanotime()))
				roundTimer = nil
				continue
			}
			roundTimer = time.After(r.nextRoundIn())
		case <-endTimer.C:
			r.after = r.snapshot()
			// The drain: every request in flight is waited for, unless the
			// run is cancelled meanwhile.
			select {
			case <-r.done:
				return nil
			case <-ctx.Done():
				return awaitStop(ctx, &r.stop, r.done, r.arenas)
			}
		case <-ctx.Done():
			return awaitStop(ctx, &r.stop, r.done, r.arenas)
		case <-r.done:
			r.after, r.finishedEarly = r.snapshot(), true
			return nil
		case <-tick.C:
			r.lat.poke()
			if r.o.Progress != nil {
				lastIOs, lastAt = r.progress(lastIOs, lastAt)
			}
		}
	}
}

// roundSlack is how long after a round's end the streams are expected to
// have left it behind: they notice at their first completion past it.
const roundSlack = 2 * time.Millisecond

// nextRoundIn is how long until the auto window's next round should be
// sealed by every stream: a little after its end, or soon when that is
// past (a stream that completed nothing since is waited for).
func (r *run) nextRoundIn() time.Duration {
	next := r.clk.rampEnd.Load() + int64(r.auto.read+1)*int64(round) + int64(roundSlack)
	return max(time.Duration(next-nanotime()), 5*time.Millisecond)
}

// judgeRounds hands every round the streams have sealed since the last
// call to the stopping rule, and acts on its answer. A converged window
// ends, and a step starts it afresh, at a time still ahead, so that no
// stream has counted an I/O on the wrong side of it: the end at the next
// Granule boundary past now (or just past now), the new start at the
// next whole round.
func (r *run) judgeRounds() stopAction {
	a := r.auto
	start, end := r.clk.rampEnd.Load(), r.clk.end.Load()
	sealed := r.roundsSealed(start)
	for ; a.read < sealed; a.read++ {
		roundEnd := start + int64(a.read+1)*int64(round)
		if roundEnd > end {
			return keepGoing // the window ends with its maximum
		}
		left := int((end - roundEnd) / int64(round))
		switch a.add(float64(r.roundIOs(a.read)), left) {
		case stopNow:
			a.converged, a.ci = true, a.last.ci
			a.read++
			ahead := nanotime() + int64(endSlack)
			if g := int64(a.auto.Granule); g > 0 {
				ahead = start + (ahead-start+g-1)/g*g
			}
			r.clk.end.Store(min(ahead, end))
			return stopNow
		case restart:
			a.read = 0
			ahead := (nanotime() + int64(endSlack) - start + int64(round) - 1) / int64(round)
			r.clk.rampEnd.Store(start + ahead*int64(round))
			return restart
		}
	}
	return keepGoing
}

// endSlack keeps a moved boundary ahead of every stream's clock: the
// store that moves it lands within it.
const endSlack = time.Millisecond

// roundsSealed is the number of whole rounds of the window starting at
// start that every stream has left behind; 0 while one has not yet
// counted an I/O in it.
func (r *run) roundsSealed(start int64) int {
	n := math.MaxInt
	for _, w := range r.workers {
		if w.st.sealedIn.Load() != start {
			return 0
		}
		n = min(n, int(w.st.sealed.Load()))
	}
	return n
}

// roundIOs is the I/Os the streams completed in one sealed round.
func (r *run) roundIOs(i int) uint64 {
	var n uint64
	for _, w := range r.workers {
		if i < len(w.st.timeline) {
			n += w.st.timeline[i]
		}
	}
	return n
}

// progress hands the I/Os completed so far in the current phase to
// o.Progress, with the rate since the last call (lastIOs at lastAt).
func (r *run) progress(lastIOs uint64, lastAt int64) (uint64, int64) {
	var n uint64
	for _, w := range r.workers {
		n += w.st.progress.Load()
	}
	now := nanotime()
	rampEnd := r.clk.rampEnd.Load()
	ramping := now < rampEnd
	phaseStart := r.base
	if !ramping {
		phaseStart = rampEnd
	}
	r.o.Progress(Progress{Pattern: r.p, Ramping: ramping, Elapsed: time.Duration(now - phaseStart), IOs: n,
		IOPS: float64(n-lastIOs) / (float64(now-lastAt) / 1e9)})
	return n, now
}

// result merges the streams' statistics into the Result of the window.
func (r *run) result(ctx context.Context) (results.Result, error) {
	if err := ctx.Err(); err != nil {
		return results.Result{}, err
	}
	for _, err := range r.errs {
		if err != nil {
			return results.Result{}, fmt.Errorf("%s: %w", r.p.Name(), err)
		}
	}
	windowStart, windowEnd := r.clk.rampEnd.Load(), r.clk.end.Load()
	if r.o.Ramp == 0 && windowStart == r.base+int64(r.o.Ramp) {
		windowStart = r.base
	}
	if r.finishedEarly {
		windowEnd = min(nanotime(), windowEnd)
	}
	total := newStats(r.seconds)
	for _, w := range r.workers {
		if w.st.window != r.clk.rampEnd.Load() {
			// A stream that completed nothing since an auto window
			// restarted still holds the figures of the old one.
			w.st.restartWindow(r.clk.rampEnd.Load())
		}
		total.merge(w.st)
	}
	dur := max(time.Duration(windowEnd-windowStart), time.Nanosecond)
	res := buildResult(r.p, r.engine, r.started.Add(time.Duration(windowStart-r.base)), dur, r.o, total)
	res.RampNS = windowStart - r.base
	if total.sqThreads > 0 {
		// Over the streams' whole life: the threads start with the rings.
		wall := time.Duration(nanotime() - r.base)
		res.SubmitThread = &results.ThreadCPU{Threads: total.sqThreads, Seconds: round2(total.sqCPU.Seconds()*1000) / 1000,
			WallSecs: round2(wall.Seconds()), CorePct: round2(100 * total.sqCPU.Seconds() / wall.Seconds())}
	}
	res.Buffers = r.buffers()
	r.judgeWindow(&res)
	openResult(&res, r.p, total, r.o.Profile)
	if r.replay != nil {
		replayResult(&res, r.replay, total)
	}
	if r.measuring {
		res.CPU, res.Device = r.before.delta(r.after, dur)
		res.CPUWait = r.before.wait.cpuWait(r.after.wait, dur)
		disk := sysfs.BlockDevice{MaxSectorsKB: r.t.Info.MaxSectorsKB, MaxSegments: r.t.Info.MaxSegments}
		if own := uint64(disk.RequestsPerIO(r.p.BlockSize)) * res.Total.IOs; res.Device.IOs > own {
			res.Device.OtherIOs = res.Device.IOs - own
		}
		if res.Device.Bytes > res.Total.Bytes {
			res.Device.OtherBytes = res.Device.Bytes - res.Total.Bytes
		}
		syncShare(&res.Device, r.p, total)
	}
	res.Device.Uncounted = r.t.Uncounted()
	if total.err != nil {
		res.Error = total.err
		return res, fmt.Errorf("%s on %s: %w", r.p.Name(), r.t.Path, total.err)
	}
	return res, nil
}

// judgeWindow records how the window ended, and its precision: over the
// rounds an auto window converged on, else over every whole second of
// the window.
func (r *run) judgeWindow(res *results.Result) {
	res.Stop = results.StopFixed
	if a := r.auto; a != nil {
		res.Restarts = a.restarts
		if a.converged && a.auto.Until != nil {
			res.Stop, res.Rounds = results.StopUntil, a.read
			return
		}
		if a.converged {
			res.Stop, res.Rounds = results.StopConverged, a.read
			res.CIPct = ciPct(a.ci)
			return
		}
		res.Stop = results.StopMaxRuntime
	}
	whole := int(time.Duration(res.DurationNS) / round)
	res.Rounds = min(whole, len(res.TimelineIOPS))
	if res.Rounds >= 2 {
		res.CIPct = ciPct(judge(res.TimelineIOPS[:res.Rounds]).ci)
	}
}

// ciPct is a relative half-width as a percentage with two decimals, or
// nil when it cannot be told.
func ciPct(ci float64) *float64 {
	if math.IsInf(ci, 0) || math.IsNaN(ci) {
		return nil
	}
	v := math.Round(ci*10000) / 100
	return &v
}

// awaitStop waits for the streams of a cancelled run, stopGrace at most,
// and returns ctx's error. Streams still running then are left behind:
// each returns once its syscall does, without issuing another I/O (the
// target's descriptor may be closed and its number reused by then). Until
// then the syscall may write into its arena, so every arena of the run
// stays mapped for good.
func awaitStop(ctx context.Context, stop *atomic.Bool, done <-chan struct{}, arenas []*arena) error {
	// Set already by ctx's AfterFunc, but in a goroutine of its own that
	// may not have run yet: a stream left behind must see it.
	stop.Store(true)
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		for _, a := range arenas {
			a.keep.Store(true)
		}
	}
	return ctx.Err()
}

func buildResult(p results.Pattern, engine string, started time.Time, dur time.Duration, o Options, s *stats) results.Result {
	secs := dur.Seconds()
	dir := func(ios, bytes uint64, h *hist.Histogram) results.DirStats {
		return results.DirStats{IOs: ios, Bytes: bytes, IOPS: round2(float64(ios) / secs),
			MiBPerS: round2(float64(bytes) / secs / (1 << 20)), LatNS: results.Summarize(h)}
	}
	r := results.Result{
		Name:       p.Name(),
		Pattern:    p,
		StartedAt:  started.UTC().Format(time.RFC3339Nano),
		DurationNS: int64(dur),
		Read:       dir(s.readIOs, s.readBytes, &s.readHist),
		Write:      dir(s.writeIOs, s.writeBytes, &s.writeHist),
		Engine:     engine,
		EngineOpts: o.Ring.Words(),
		RampNS:     int64(o.Ramp),
		Completed:  results.Counts{Reads: s.allReads, Writes: s.allWrites},
		Submitted:  results.Counts{Reads: s.subReads, Writes: s.subWrites},
		Failed:     results.Counts{Reads: s.badReads, Writes: s.badWrites},
		Reissued:   reissued(s),
		Syncs:      s.sync.result(),
	}
	ios, bytes := s.readIOs+s.writeIOs, s.readBytes+s.writeBytes
	r.Total = results.Total{IOs: ios, Bytes: bytes, IOPS: round2(float64(ios) / secs), MiBPerS: round2(float64(bytes) / secs / (1 << 20))}
	if ios > 0 {
		// Merged into a copy: the direction histograms stay as recorded. Once
		// per run, so the hot path never pays for a combined histogram.
		all := s.readHist
		all.Merge(&s.writeHist)
		// Its histogram is the directions' union: a reader merges them.
		lat := results.Summarize(&all).Figures()
		r.Total.LatNS = &lat
	}
	mixFigures(&r, s)
	// Whole seconds only; a trailing partial second is scaled to a rate.
	r.TimelineIOPS = make([]float64, 0, len(s.timeline))
	for i, c := range s.timeline {
		span := min(1.0, secs-float64(i))
		if span <= 0 {
			break
		}
		r.TimelineIOPS = append(r.TimelineIOPS, round2(float64(c)/span))
	}
	return r
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// snapshot holds the counters sampled at the edges of the measured window.
type snapshot struct {
	at     int64
	rusage unix.Rusage
	disk   sysfs.DiskStats
	diskOK bool
	wait   waitReading
}

// snapshot samples the counters now: the process's, the disk's, then the
// threads' waits for a CPU (the slowest to read).
func (r *run) snapshot() snapshot {
	s := snapshot{at: nanotime()}
	_ = unix.Getrusage(unix.RUSAGE_SELF, &s.rusage)
	s.disk, s.diskOK = r.t.DiskStats()
	s.wait = r.watch.read()
	return s
}

func (s snapshot) delta(e snapshot, window time.Duration) (results.CPU, results.DevStats) {
	wall := float64(e.at - s.at)
	if wall <= 0 {
		wall = float64(window)
	}
	tv := func(t unix.Timeval) float64 { return float64(t.Sec)*1e9 + float64(t.Usec)*1e3 }
	cpu := results.CPU{
		UserPct: round2(100 * (tv(e.rusage.Utime) - tv(s.rusage.Utime)) / wall),
		SysPct:  round2(100 * (tv(e.rusage.Stime) - tv(s.rusage.Stime)) / wall),
	}
	if sw := (e.rusage.Nvcsw + e.rusage.Nivcsw) - (s.rusage.Nvcsw + s.rusage.Nivcsw); sw > 0 {
		cpu.Switches = uint64(sw)
	}
	var dev results.DevStats
	if s.diskOK && e.diskOK {
		dev.IOs = (e.disk.ReadIOs - s.disk.ReadIOs) + (e.disk.WriteIOs - s.disk.WriteIOs)
		// diskstats counts 512-byte sectors whatever the device's own.
		dev.Bytes = 512 * ((e.disk.ReadSectors - s.disk.ReadSectors) + (e.disk.WriteSectors - s.disk.WriteSectors))
		dev.UtilPct = round2(min(100, 100*float64(e.disk.IOTicksMs-s.disk.IOTicksMs)*1e6/wall))
		dev.Flushes = e.disk.FlushIOs - s.disk.FlushIOs
		dev.Merges = &results.Counts{Reads: e.disk.ReadMerges - s.disk.ReadMerges, Writes: e.disk.WriteMerges - s.disk.WriteMerges}
	}
	return cpu, dev
}

// reissued is the result's count of I/Os issued again, absent when none
// was.
func reissued(s *stats) *results.Counts {
	if s.reReads+s.reWrites == 0 {
		return nil
	}
	return &results.Counts{Reads: s.reReads, Writes: s.reWrites}
}
