package iotest

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/iotest/trace"
	"github.com/iomatrix/iomatrix/results"
)

// A replay issues a recorded trace's I/Os on the open loop (see runRate):
// each at its recorded time from the first, scaled by the speed, whatever
// the device is doing, with at most a queue depth in flight. The
// schedule is the trace itself, loaded before the first I/O: issuing one
// is taking the next of a slice. Its response time counts from its
// recorded start, so a device slower than the recorded one shows as
// response time and lateness, and a backlog if it cannot keep up.

// OffsetRule is how a replay maps the trace's offsets onto its target
// (results.Replay.OffsetRule).
const OffsetRule = "offsets beyond the target's size taken modulo its size rounded down to the alignment; " +
	"an I/O that still crosses the end starts at the last aligned offset where it fits; " +
	"offsets rounded down and sizes up to the alignment"

// ReplayTail is how long after the trace's last start a replay may go on
// issuing what is due: an I/O still unissued by then (and lateGrace) is
// counted as the backlog, never issued.
const ReplayTail = 10 * time.Second

// DefaultReplayDepth is the most I/Os a replay keeps in flight unless
// told otherwise.
const DefaultReplayDepth = 64

// ReplayPlan is a trace made ready for one target: its I/Os mapped and
// aligned, timed by the speed. PlanReplay makes it, touching nothing.
type ReplayPlan struct {
	ios     []replayIO
	p       results.Pattern
	rec     results.Replay
	sizes   []int64 // the sizes of the kinds of the I/Os (see replayKinds)
	window  time.Duration
	tracePS []uint64
}

// CheckReplay checks a replay's speed and most in flight on their own.
func CheckReplay(speed float64, depth int) error {
	if !(speed > 0) || math.IsInf(speed, 0) || speed > 1e6 {
		return pattern.Fieldf("speed", "%v is not a speed above 0 and at most 1e6 (1: as recorded, 2: twice as fast)", speed)
	}
	if depth < 1 || depth > pattern.MaxQueueDepth {
		return pattern.Fieldf("queue_depth", "%d is outside 1..%d", depth, pattern.MaxQueueDepth)
	}
	return nil
}

// replayIO is one I/O of a replay, as the schedule issues it.
type replayIO struct {
	at, off, size int64
	write         bool
	kind          uint8
}

// PlanReplay maps tr onto a target of size bytes whose O_DIRECT
// alignment is align (OffsetRule), at speed (2: twice as fast) with at
// most depth I/Os in flight. file is the trace's name, recorded.
func PlanReplay(tr *trace.Trace, file string, size, align int64, speed float64, depth int) (*ReplayPlan, error) {
	if err := CheckReplay(speed, depth); err != nil {
		return nil, err
	}
	if len(tr.IOs) == 0 {
		return nil, fault.Input("", "%s: no read or write to replay (%d skipped)", file, tr.Skipped.Total())
	}
	align = max(align, pattern.MinBlockSize)
	limit := size / align * align
	pl := &ReplayPlan{ios: make([]replayIO, len(tr.IOs))}
	kinds, sizes := replayKinds(tr)
	pl.sizes = sizes
	var maxSize int64
	for i, io := range tr.IOs {
		off, n := io.Offset/align*align, (io.Size+align-1)/align*align
		if off != io.Offset || n != io.Size {
			pl.rec.Realigned++
		}
		if n > limit {
			return nil, fault.Input("", "%s: an I/O of %s is larger than the target (%s)", file, units.FormatSize(n), units.FormatSize(limit))
		}
		if off+n > limit {
			pl.rec.Wrapped++
			if off %= limit; off+n > limit {
				off = limit - n
			}
		}
		maxSize = max(maxSize, n)
		pl.ios[i] = replayIO{at: trace.Scale(io.At, speed), off: off, size: n, write: io.Write, kind: kinds[io.Size]}
	}
	if buf := int64(depth) * maxSize; buf > MaxBufferBytes {
		return nil, pattern.Fieldf("queue_depth", "%d in flight × the trace's largest I/O (%s) = %s of I/O buffers, more than %s",
			depth, units.FormatSize(maxSize), units.FormatSize(buf), units.FormatSize(MaxBufferBytes))
	}
	reads := tr.Reads()
	n := uint64(len(tr.IOs))
	span := time.Duration(pl.ios[len(pl.ios)-1].at)
	pl.window = span + ReplayTail
	pl.p = results.Pattern{Access: results.Random, BlockSize: maxSize, QueueDepth: depth, Jobs: 1,
		ReadPct: int(math.Round(100 * float64(reads) / float64(n))),
		Rate:    results.Rate{IOPS: round2(float64(n) / max(span.Seconds(), 1)), Arrival: results.ArrivalTrace}}
	pl.tracePS = tr.PerSecond(speed)
	sk := tr.Skipped
	pl.rec = results.Replay{Trace: file, Format: tr.Format, Device: tr.Device, IOs: n, Reads: reads, Speed: speed,
		SpanNS: int64(span), OffsetRule: OffsetRule, Wrapped: pl.rec.Wrapped, Realigned: pl.rec.Realigned, Untimed: tr.Untimed,
		Skipped: results.ReplaySkipped{Flushes: sk.Flushes, Discards: sk.Discards, Empty: sk.Empty}, TracePerSecond: pl.tracePS}
	for _, io := range tr.IOs {
		if io.Write {
			pl.rec.WriteBytes += uint64(io.Size)
		} else {
			pl.rec.ReadBytes += uint64(io.Size)
		}
	}
	return pl, nil
}

// replayKinds gives each size of the trace a kind (see kindSize), the
// most frequent first: the engine counts the I/Os of each kind. Past
// pattern.MaxSplitSizes-1 sizes, the rest share the last kind (size 0 in
// sizes: "other sizes").
func replayKinds(tr *trace.Trace) (map[int64]uint8, []int64) {
	count := map[int64]uint64{}
	for _, io := range tr.IOs {
		count[io.Size]++
	}
	sizes := make([]int64, 0, len(count))
	for s := range count {
		sizes = append(sizes, s)
	}
	slices.SortFunc(sizes, func(a, b int64) int {
		if count[a] != count[b] {
			return int(min(max(int64(count[b])-int64(count[a]), -1), 1))
		}
		return int(min(max(a-b, -1), 1))
	})
	kinds := map[int64]uint8{}
	for k, s := range sizes {
		kinds[s] = uint8(min(k, pattern.MaxSplitSizes-1))
	}
	if len(sizes) > pattern.MaxSplitSizes {
		sizes = append(sizes[:pattern.MaxSplitSizes-1], 0)
	}
	return kinds, sizes
}

// Pattern is the replay summed up as a pattern: the trace's read share,
// its largest I/O, the most in flight, its mean rate.
func (pl *ReplayPlan) Pattern() results.Pattern { return pl.p }

// Writes tells whether the replay writes.
func (pl *ReplayPlan) Writes() bool { return pl.rec.Reads < pl.rec.IOs }

// Window is the longest the replay may last: the trace's span at its
// speed, and ReplayTail.
func (pl *ReplayPlan) Window() time.Duration { return pl.window }

// Name is the name of a replay's result: replay- and the trace's file.
func (pl *ReplayPlan) Name() string {
	base := strings.Map(func(r rune) rune {
		if r <= ' ' || r == '/' {
			return '_'
		}
		return r
	}, filepath.Base(pl.rec.Trace))
	return "replay-" + base
}

// Replay replays the plan on an open target with o's engine and ring
// (open loop: the uring engine, no polled ring); o's window and ramp are
// the replay's own. It returns the result of a results document, its
// Replay set.
func Replay(ctx context.Context, t *target.Target, pl *ReplayPlan, o Options) (results.Result, error) {
	o.Runtime, o.Ramp, o.Auto, o.MaxIOs = pl.window, 0, nil, 0
	engine, err := checkRun(t, pl.p, o)
	if err != nil {
		return results.Result{}, err
	}
	r := &run{t: t, p: pl.p, o: o, engine: engine, seconds: int(math.Ceil(pl.window.Seconds())), replay: pl}
	holdRuntime(2)
	defer releaseRuntime()
	defer r.freeArenas()
	if err := r.makeStreams(); err != nil {
		return results.Result{}, err
	}
	unhook := context.AfterFunc(ctx, func() { r.stop.Store(true) })
	defer unhook()
	r.start()
	defer r.watch.close()
	if err := r.wait(ctx); err != nil {
		return results.Result{}, err
	}
	res, err := r.result(ctx)
	res.Name = pl.Name()
	return res, err
}

// replayResult adds what the replay did beside what the trace holds.
func replayResult(res *results.Result, pl *ReplayPlan, s *stats) {
	rec := pl.rec
	secs := float64(res.DurationNS) / 1e9
	for i, c := range s.timeline {
		if float64(i) >= secs {
			break
		}
		rec.PerSecond = append(rec.PerSecond, c)
	}
	for k, size := range pl.sizes {
		rec.Sizes = append(rec.Sizes, results.ReplaySize{Size: size, ReadIOs: s.sizeIOs[0][k], WriteIOs: s.sizeIOs[1][k]})
	}
	traced := map[int64][2]uint64{}
	for _, io := range pl.ios {
		c := traced[pl.sizes[io.kind]]
		if io.write {
			c[1]++
		} else {
			c[0]++
		}
		traced[pl.sizes[io.kind]] = c
	}
	for i := range rec.Sizes {
		c := traced[rec.Sizes[i].Size]
		rec.Sizes[i].TraceReads, rec.Sizes[i].TraceWrites = c[0], c[1]
	}
	res.Replay = &rec
}

// due and take of a replay's schedule (see schedule): the next I/O of
// the trace.
func (s *schedule) replayDue() (at int64, write bool) {
	if s.n >= uint64(len(s.replay)) {
		return math.MaxInt64, false
	}
	io := &s.replay[s.n]
	return s.base + io.at, io.write
}

// String names the plan in messages.
func (pl *ReplayPlan) String() string {
	return fmt.Sprintf("%s (%d I/Os over %s)", pl.rec.Trace, pl.rec.IOs, time.Duration(pl.rec.SpanNS).Round(time.Millisecond))
}
