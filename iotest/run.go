package iotest

import (
	"context"
	"fmt"
	"github.com/iomatrix/iomatrix/results"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
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
	return "", &FieldError{"engine", fmt.Sprintf("%q is not one of auto, uring, psync", engine)}
}

// Run measures one pattern on an open target. It never prints; progress
// goes through o.Progress. On cancellation it returns ctx's error and a
// Result that must be discarded, within stopGrace even when the device
// has stopped answering. On an I/O error it returns the Result so
// far (with Error set) and an error wrapping *IOError.
func Run(ctx context.Context, t *Target, p results.Pattern, o Options) (results.Result, error) {
	if err := ValidatePatternFor(p, t.Align, t.Size); err != nil {
		return results.Result{}, err
	}
	if err := o.Validate(); err != nil {
		return results.Result{}, err
	}
	if p.Writes() && !t.write {
		return results.Result{}, fmt.Errorf("%s: %w: target was opened read-only", p.Name(), ErrBadPattern)
	}
	engine, err := ResolveEngine(o.Engine, o.Notice)
	if err != nil {
		return results.Result{}, err
	}

	streams := p.Jobs
	if engine == EnginePsync {
		streams = p.Jobs * p.QueueDepth
	}
	holdRuntime(min(streams+1, maxProcs))
	defer releaseRuntime()

	seconds := int(math.Ceil(min(o.Runtime, maxTimeline).Seconds()))
	var workers []*worker
	var arenas []*arena
	defer func() {
		for _, a := range arenas {
			a.free()
		}
	}()
	fill := rand.NewPCG(o.Seed, 0x5eed)
	for j := 0; j < p.Jobs; j++ {
		var budget *atomic.Int64
		if o.MaxIOs > 0 {
			budget = new(atomic.Int64)
			budget.Store(int64(min(o.MaxIOs, math.MaxInt64)))
		}
		a, err := newArena(p.QueueDepth, p.BlockSize, fill)
		if err != nil {
			return results.Result{}, err
		}
		arenas = append(arenas, a)
		if engine == EngineUring {
			seq := newSequence(o.Seed, j, 0, p, t.Size)
			seq.budget = budget
			workers = append(workers, &worker{st: newStats(seconds), seq: seq, arena: a, fd: t.fd, qd: p.QueueDepth})
			continue
		}
		var cursor atomic.Int64
		for q := 0; q < p.QueueDepth; q++ {
			seq := newSequence(o.Seed, j, q, p, t.Size)
			seq.seqShared = &cursor
			seq.budget = budget
			workers = append(workers, &worker{st: newStats(seconds), seq: seq, arena: a, fd: t.fd, qd: q})
		}
	}

	var stop atomic.Bool
	unhook := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer unhook()

	// Every stream sets itself up (a ring, its registrations) before the
	// clock starts, so the ramp and the window count from the first I/O:
	// under a cap the window is placed against the throttle's slices,
	// which start with the first I/O (see cgroup.AlignWindow).
	clk := &clock{}
	start := make(chan struct{})
	var ready sync.WaitGroup
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		w.clk, w.stop, w.start = clk, &stop, start
		ready.Add(1)
		w.ready = sync.OnceFunc(ready.Done)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.ready() // also when setting up failed
			if engine == EngineUring {
				errs[i] = w.runUring()
			} else {
				errs[i] = w.runPsync(w.qd)
			}
			if errs[i] != nil || w.st.err != nil {
				stop.Store(true) // one failing stream ends the pattern
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	ready.Wait()
	started := time.Now()
	base := nanotime()
	clk.rampEnd, clk.end = base+int64(o.Ramp), base+int64(o.Ramp)+int64(o.Runtime)
	var before, after snapshot
	if o.Ramp == 0 {
		before = t.snapshot()
	}
	close(start)

	measuring := o.Ramp == 0
	windowStart := clk.rampEnd
	if measuring {
		windowStart = base
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	rampTimer := time.NewTimer(time.Duration(clk.rampEnd - nanotime()))
	defer rampTimer.Stop()
	endTimer := time.NewTimer(time.Duration(clk.end - nanotime()))
	defer endTimer.Stop()
	var lastIOs uint64
	lastAt := base
	finishedEarly := false
wait:
	for {
		select {
		case <-rampTimer.C:
			if !measuring {
				before = t.snapshot()
				measuring = true
			}
		case <-endTimer.C:
			after = t.snapshot()
			// The drain: every request in flight is waited for, unless the
			// run is cancelled meanwhile.
			select {
			case <-done:
			case <-ctx.Done():
				return results.Result{}, awaitStop(ctx, &stop, done, arenas)
			}
			break wait
		case <-ctx.Done():
			return results.Result{}, awaitStop(ctx, &stop, done, arenas)
		case <-done:
			after = t.snapshot()
			finishedEarly = true
			break wait
		case <-tick.C:
			if o.Progress == nil {
				continue
			}
			var n uint64
			for _, w := range workers {
				n += w.st.progress.Load()
			}
			now := nanotime()
			ramping := now < clk.rampEnd
			phaseStart := base
			if !ramping {
				phaseStart = clk.rampEnd
			}
			o.Progress(Progress{Pattern: p, Ramping: ramping, Elapsed: time.Duration(now - phaseStart), IOs: n,
				IOPS: float64(n-lastIOs) / (float64(now-lastAt) / 1e9)})
			lastIOs, lastAt = n, now
		}
	}
	windowEnd := clk.end
	if finishedEarly {
		windowEnd = min(nanotime(), clk.end)
	}

	if err := ctx.Err(); err != nil {
		return results.Result{}, err
	}
	for _, err := range errs {
		if err != nil {
			return results.Result{}, fmt.Errorf("%s: %w", p.Name(), err)
		}
	}

	total := newStats(seconds)
	for _, w := range workers {
		total.merge(w.st)
	}
	dur := time.Duration(windowEnd - windowStart)
	if dur <= 0 {
		dur = time.Nanosecond
	}
	res := buildResult(p, engine, started.Add(time.Duration(windowStart-base)), dur, o, total)
	if measuring {
		res.CPU, res.Device = before.delta(after, dur)
		disk := sysfs.BlockDevice{MaxSectorsKB: t.Info.MaxSectorsKB, MaxSegments: t.Info.MaxSegments}
		if own := uint64(disk.RequestsPerIO(p.BlockSize)) * res.Total.IOs; res.Device.IOs > own {
			res.Device.OtherIOs = res.Device.IOs - own
		}
	}
	if total.err != nil {
		res.Error = total.err
		return res, fmt.Errorf("%s on %s: %w", p.Name(), t.Path, total.err)
	}
	return res, nil
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
	dir := func(ios, bytes uint64, h *Histogram) results.DirStats {
		return results.DirStats{IOs: ios, Bytes: bytes, IOPS: round2(float64(ios) / secs),
			MiBPerS: round2(float64(bytes) / secs / (1 << 20)), LatNS: h.Summary()}
	}
	r := results.Result{
		Name:       p.Name(),
		Pattern:    p,
		StartedAt:  started.UTC().Format(time.RFC3339Nano),
		DurationNS: int64(dur),
		Read:       dir(s.readIOs, s.readBytes, &s.readHist),
		Write:      dir(s.writeIOs, s.writeBytes, &s.writeHist),
		Engine:     engine,
		RampNS:     int64(o.Ramp),
		Completed:  results.Counts{Reads: s.allReads, Writes: s.allWrites},
		Submitted:  results.Counts{Reads: s.subReads, Writes: s.subWrites},
		Failed:     results.Counts{Reads: s.badReads, Writes: s.badWrites},
	}
	ios, bytes := s.readIOs+s.writeIOs, s.readBytes+s.writeBytes
	r.Total = results.Total{IOs: ios, Bytes: bytes, IOPS: round2(float64(ios) / secs), MiBPerS: round2(float64(bytes) / secs / (1 << 20))}
	if ios > 0 {
		// Merged into a copy: the direction histograms stay as recorded. Once
		// per run, so the hot path never pays for a combined histogram.
		all := s.readHist
		all.Merge(&s.writeHist)
		lat := all.Summary()
		r.Total.LatNS = &lat
	}
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
}

func (t *Target) snapshot() snapshot {
	s := snapshot{at: nanotime()}
	_ = unix.Getrusage(unix.RUSAGE_SELF, &s.rusage)
	if t.hasDev {
		if d, err := t.sys.DiskStats(t.dev); err == nil {
			s.disk, s.diskOK = d, true
		}
	}
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
	var dev results.DevStats
	if s.diskOK && e.diskOK {
		dev.IOs = (e.disk.ReadIOs - s.disk.ReadIOs) + (e.disk.WriteIOs - s.disk.WriteIOs)
		dev.UtilPct = round2(min(100, 100*float64(e.disk.IOTicksMs-s.disk.IOTicksMs)*1e6/wall))
	}
	return cpu, dev
}
