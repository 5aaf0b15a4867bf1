package iotest

import (
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// LatLog is where Run writes the latency of each I/O of the measured
// window as text, in the layout of fio's latency logs with log_offset=1:
//
//	time (ms), latency (ns), direction (0 read, 1 write), block size (bytes), offset (bytes), priority (0)
//
// The time is the completion's, in whole milliseconds since the window's
// start; an I/O completed in the ramp or in the drain after the window is
// not logged, so a log holds the I/Os the result counts (Result.Total.IOs)
// and no others. Within a stream (a uring job, or one of a psync job's
// queue-depth threads) lines are in completion order; streams' lines
// interleave in chunks (sort on the first column for one order).
//
// With Avg set, each stream writes one line per direction per period of
// Avg in which it completed I/Os, as fio's log_avg_msec does: the time
// is the period's end, the latency the mean of its I/Os, block size and
// offset 0.
//
// Run never blocks an I/O on the log: each stream fills preallocated
// buffers, handed to a writer goroutine about once a second or when
// full; a stream whose writer has not yet emptied its spare buffer drops
// the entries it cannot hold, and the result counts them
// (Result.LatLog.Dropped).
type LatLog struct {
	// Completion receives completion latencies: from the I/O's submission
	// to its completion (fio's clat log; in an open loop, the service
	// time).
	Completion io.Writer
	// Response, in an open loop only, receives response latencies: from
	// the I/O's intended start on the schedule to its completion (fio
	// writes none: its rate limit sleeps instead of keeping a schedule).
	Response io.Writer
	Avg      time.Duration
}

func (l LatLog) on() bool { return l.Completion != nil || l.Response != nil }

// check refuses a log Run cannot write whole (CheckPattern holds it
// against the pattern).
func (l LatLog) check(o Options) error {
	switch {
	case !l.on():
		if l.Avg != 0 {
			return pattern.Mention("lat_log_avg", func(n fault.Namer) string { return "averages a latency log's lines: give " + n("lat_log") })
		}
		return nil
	case l.Avg < 0 || l.Avg%time.Millisecond != 0:
		return pattern.Fieldf("lat_log_avg", "%s is not a whole number of milliseconds", l.Avg)
	case o.Auto != nil:
		// An auto window that restarts would leave the lines of the
		// window it gave up in the log.
		return pattern.Mention("lat_log", func(n fault.Namer) string {
			return "a latency log needs a fixed " + n("runtime") + ": an auto window that starts afresh would leave lines of the one it gave up"
		})
	}
	return nil
}

// CheckPattern refuses a response log for a pattern that keeps no
// schedule.
func (l LatLog) CheckPattern(p results.Pattern) error {
	if l.Response != nil && !p.Rate.Open() {
		return pattern.Mention("response_log", func(n fault.Namer) string {
			return "response times are an open loop's: give " + n("rate")
		})
	}
	return nil
}

// latRecord is one logged I/O, or with Avg one period's sum of a
// direction (count I/Os).
type latRecord struct {
	at, lat, resp, off int64
	size, count        uint32
	write              bool
}

// latBudget bounds the memory of a run's log buffers: spread over its
// streams, each gets two buffers of at least latMinRecords.
const (
	latBudget     = 32 << 20
	latMinRecords = 128
	latAvgRecords = 256
)

// latStream is one stream's side of the log. Only the stream writes
// bufs[cur] and n; full[i] publishes bufs[i] (its record count) to the
// writer, who sets it back to 0 once written: until then the stream
// never touches that buffer.
type latStream struct {
	bufs    [2][]latRecord
	full    [2]atomic.Int32
	cur, n  int
	dropped uint64
	avg     int64 // ns; 0: a record per I/O
	period  [2]latRecord
	base    *atomic.Int64 // the window's start (clock.rampEnd)
}

func newLatStream(c *clock, records int, avg time.Duration) *latStream {
	l := &latStream{avg: int64(avg), base: &c.rampEnd}
	for i := range l.bufs {
		l.bufs[i] = make([]latRecord, records)
		// Touch every page now, not in the hot path.
		for k := 0; k < records; k += 64 {
			l.bufs[i][k].count = 0
		}
	}
	return l
}

// add logs one I/O of the window, completed at now.
func (l *latStream) add(write bool, off, size, start, now, intended int64) {
	r := latRecord{at: now - l.base.Load(), lat: now - start, off: off, size: uint32(size), count: 1, write: write}
	if intended != 0 {
		r.resp = now - intended
	}
	if l.avg == 0 {
		l.push(r)
		return
	}
	d := 0
	if write {
		d = 1
	}
	p := &l.period[d]
	end := (r.at/l.avg + 1) * l.avg
	if p.count > 0 && p.at != end {
		l.push(*p)
		p.count = 0
	}
	if p.count == 0 {
		*p = latRecord{at: end, write: write}
	}
	p.lat += r.lat
	p.resp += r.resp
	p.count++
}

func (l *latStream) push(r latRecord) {
	if l.n == len(l.bufs[l.cur]) && !l.handOver() {
		l.dropped += uint64(r.count)
		return
	}
	l.bufs[l.cur][l.n] = r
	l.n++
}

// handOver publishes the current buffer to the writer and takes the
// spare, unless the writer still holds it.
func (l *latStream) handOver() bool {
	spare := l.cur ^ 1
	if l.full[spare].Load() != 0 {
		return false
	}
	if l.n > 0 {
		l.full[l.cur].Store(int32(l.n))
		l.cur, l.n = spare, 0
	}
	return true
}

// latWriter turns the streams' records into lines, off the hot path.
type latWriter struct {
	log     LatLog
	streams []*latStream
	line    []byte
	lines   uint64
	err     error
	wake    chan struct{}
	stopped chan struct{}
}

// newLatWriter gives each worker's stats a latStream and starts the
// writer; nil when no log is asked for.
func newLatWriter(l LatLog, c *clock, workers []*worker) *latWriter {
	if !l.on() {
		return nil
	}
	records := latAvgRecords
	if l.Avg == 0 {
		records = max(latMinRecords, latBudget/2/int(unsafe.Sizeof(latRecord{}))/len(workers))
	}
	lw := &latWriter{log: l, line: make([]byte, 0, 64<<10), wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	for _, w := range workers {
		w.st.lat = newLatStream(c, records, l.Avg)
		lw.streams = append(lw.streams, w.st.lat)
	}
	go lw.loop()
	return lw
}

// poke has the writer collect what the streams published: from run.wait's
// one-second tick, never from a stream.
func (lw *latWriter) poke() {
	if lw == nil {
		return
	}
	select {
	case lw.wake <- struct{}{}:
	default:
	}
}

func (lw *latWriter) loop() {
	defer close(lw.stopped)
	for range lw.wake {
		lw.collect()
	}
}

// collect writes every buffer published, and gives it back.
func (lw *latWriter) collect() {
	for _, s := range lw.streams {
		for i := range s.full {
			if n := s.full[i].Load(); n > 0 {
				lw.write(s.bufs[i][:n])
				s.full[i].Store(0)
			}
		}
	}
}

// finish writes what is left once every stream has ended: their last
// buffers and periods. It returns the entries logged and dropped, and the
// first write error.
func (lw *latWriter) finish() (*results.LatLogStats, error) {
	close(lw.wake)
	<-lw.stopped
	lw.collect()
	st := &results.LatLogStats{}
	for _, s := range lw.streams {
		lw.write(s.bufs[s.cur][:s.n])
		for d := range s.period {
			if s.period[d].count > 0 {
				lw.write(s.period[d : d+1])
			}
		}
		st.Dropped += s.dropped
	}
	st.Lines = lw.lines
	if lw.err != nil {
		return st, fmt.Errorf("latency log: %w", lw.err)
	}
	return st, nil
}

// abandon stops the writer of a run that did not end well; streams may
// still hold their buffers, so only what they published is written.
func (lw *latWriter) abandon() {
	if lw == nil {
		return
	}
	close(lw.wake)
	<-lw.stopped
}

// write formats recs into lines of the completion log, then of the
// response log.
func (lw *latWriter) write(recs []latRecord) {
	if len(recs) == 0 || lw.err != nil {
		return
	}
	lw.lines += uint64(len(recs))
	if lw.log.Completion != nil {
		lw.emit(lw.log.Completion, recs, false)
	}
	if lw.log.Response != nil {
		lw.emit(lw.log.Response, recs, true)
	}
}

func (lw *latWriter) emit(w io.Writer, recs []latRecord, resp bool) {
	b := lw.line[:0]
	for i := range recs {
		r := &recs[i]
		v, size, off := r.lat, int64(r.size), r.off
		if resp {
			v = r.resp
		}
		if r.count > 1 || lw.log.Avg > 0 {
			v, size, off = (v+int64(r.count)/2)/int64(r.count), 0, 0
		}
		dir := int64(0)
		if r.write {
			dir = 1
		}
		b = strconv.AppendInt(b, r.at/int64(time.Millisecond), 10)
		for _, x := range [...]int64{v, dir, size, off, 0} {
			b = append(b, ',', ' ')
			b = strconv.AppendInt(b, x, 10)
		}
		b = append(b, '\n')
		if len(b) > cap(lw.line)-128 {
			lw.flush(w, b)
			b = lw.line[:0]
		}
	}
	lw.flush(w, b)
}

func (lw *latWriter) flush(w io.Writer, b []byte) {
	if len(b) == 0 || lw.err != nil {
		return
	}
	if _, err := w.Write(b); err != nil {
		lw.err = err
	}
}
