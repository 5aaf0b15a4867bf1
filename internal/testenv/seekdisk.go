package testenv

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// SeekDisk is a writable DiskFile with one head, like a disk that seeks:
// its speed is its own, not the CPU's. It serves one request at a time,
// each Seq after the daemon receives it when it starts where the
// previous request ended, Rand otherwise, reads and writes alike; it
// sleeps and spins as DelayDisk does. It keeps no data: a write is
// accepted and dropped, a read answers zeros. Attach it with
// WritableFUSELoop, whose loop worker hands it the requests one at a
// time in dispatch order, so that where each starts is where the
// submitter put it.
//
// It counts what it served (Counts): sequential and random reads and
// writes, their bytes and service time, and the most requests it held
// at once, which is 1 when nothing reaches it concurrently; a second
// request waits for the head.
type SeekDisk struct {
	DiskFile
	// Seq and Rand are the service times of a request that starts where
	// the previous one ended, and of any other.
	Seq, Rand time.Duration
	// Spin is how long before the deadline a request stops sleeping
	// (default 300µs).
	Spin time.Duration

	head  sync.Mutex // held while a request is served
	end   int64      // where the previous request ended, under head
	first time.Time  // when the first request since Reset arrived, under head
	last  time.Time  // when the latest one was done, under head

	held, maxHeld                              atomic.Int64
	seqReads, randReads, seqWrites, randWrites atomic.Int64
	bytes, served                              atomic.Int64 // served: ns
	ordinary                                   atomic.Int64 // requests held without real-time priority
}

var (
	_ = (fs.NodeReader)((*SeekDisk)(nil))
	_ = (fs.NodeWriter)((*SeekDisk)(nil))
)

// NewSeekDisk is a SeekDisk of size bytes with the two service times.
func NewSeekDisk(size int64, seq, rand time.Duration) *SeekDisk {
	return &SeekDisk{DiskFile: DiskFile{Size: size}, Seq: seq, Rand: rand, end: -1}
}

func (d *SeekDisk) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o644
	out.Size = uint64(d.Size)
	return 0
}

func (d *SeekDisk) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n := max(min(off+int64(len(dest)), d.Size)-off, 0)
	d.serve(off, n, &d.seqReads, &d.randReads)
	clear(dest[:n])
	return fuse.ReadResultData(dest[:n]), 0
}

func (d *SeekDisk) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n := max(min(off+int64(len(data)), d.Size)-off, 0)
	d.serve(off, n, &d.seqWrites, &d.randWrites)
	return uint32(n), 0
}

// serve holds the request of n bytes at off for its service time, with
// the head, and counts it as sequential or random.
func (d *SeekDisk) serve(off, n int64, seq, random *atomic.Int64) {
	held := d.held.Add(1)
	for m := d.maxHeld.Load(); held > m && !d.maxHeld.CompareAndSwap(m, held); m = d.maxHeld.Load() {
	}
	d.head.Lock()
	start := time.Now()
	if d.first.IsZero() {
		d.first = start
	}
	delay, count := d.Rand, random
	if off == d.end {
		delay, count = d.Seq, seq
	}
	served := d.holdOnTime(start, delay)
	d.end = off + n
	d.last = time.Now()
	d.head.Unlock()
	d.held.Add(-1)
	count.Add(1)
	d.bytes.Add(n)
	d.served.Add(int64(served))
}

// holdOnTime is hold on a thread of real-time priority where the
// process may have one (root, outside a cgroup that forbids it): on a
// loaded machine a thread of ordinary priority wakes late from its sleep,
// or loses the CPU as it spins, and the device would serve more than its
// delay (a 2 ms request took 2.7 ms on average here while another
// process kept a CPU busy).
func (d *SeekDisk) holdOnTime(start time.Time, delay time.Duration) time.Duration {
	runtime.LockOSThread()
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
		runtime.UnlockOSThread()
		d.ordinary.Add(1)
		return hold(start, delay, d.Spin)
	}
	served := hold(start, delay, d.Spin)
	// Back to ordinary priority before the thread runs anything else;
	// should that fail, the thread stays this goroutine's, and ends with
	// it.
	if unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}, 0) == nil {
		runtime.UnlockOSThread()
	}
	return served
}

// SeekCounts are what a SeekDisk served since its last Reset.
type SeekCounts struct {
	SeqReads, RandReads, SeqWrites, RandWrites int64
	Bytes                                      int64
	// Served is the time the head spent on requests, Span the time
	// from the first request's arrival to the last one's end: Served
	// near Span is a device that was never idle, the bottleneck.
	Served, Span time.Duration
	// MaxHeld is the most requests the daemon held at once.
	MaxHeld int64
	// Ordinary counts the requests held on a thread of ordinary
	// priority: the process may not have a real-time one.
	Ordinary int64
}

// Requests is the number of requests served.
func (c SeekCounts) Requests() int64 { return c.SeqReads + c.RandReads + c.SeqWrites + c.RandWrites }

// Busy is the share of Span the head was serving a request.
func (c SeekCounts) Busy() float64 {
	if c.Span <= 0 {
		return 0
	}
	return float64(c.Served) / float64(c.Span)
}

func (c SeekCounts) String() string {
	var size float64
	var served, idle time.Duration
	if r := c.Requests(); r > 0 {
		size, served, idle = float64(c.Bytes)/float64(r), c.Served/time.Duration(r), (c.Span-c.Served)/time.Duration(r)
	}
	prio := ""
	if c.Ordinary > 0 {
		prio = fmt.Sprintf(" (%d at ordinary priority)", c.Ordinary)
	}
	return fmt.Sprintf("reads %d seq + %d rand, writes %d seq + %d rand; per request %.0f B, served %v%s, idle %v; busy %.1f %% of %v, at most %d at once",
		c.SeqReads, c.RandReads, c.SeqWrites, c.RandWrites, size, served.Round(time.Microsecond), prio, idle.Round(time.Microsecond),
		100*c.Busy(), c.Span.Round(time.Millisecond), c.MaxHeld)
}

// Counts is what the disk served since the last Reset.
func (d *SeekDisk) Counts() SeekCounts {
	d.head.Lock()
	span := d.last.Sub(d.first)
	d.head.Unlock()
	return SeekCounts{SeqReads: d.seqReads.Load(), RandReads: d.randReads.Load(),
		SeqWrites: d.seqWrites.Load(), RandWrites: d.randWrites.Load(), Bytes: d.bytes.Load(),
		Served: time.Duration(d.served.Load()), Span: max(span, 0), MaxHeld: d.maxHeld.Load(), Ordinary: d.ordinary.Load()}
}

// Reset forgets what was served so far and where the head is; no
// request may be in flight.
func (d *SeekDisk) Reset() {
	d.head.Lock()
	defer d.head.Unlock()
	d.end, d.first, d.last = -1, time.Time{}, time.Time{}
	for _, c := range []*atomic.Int64{&d.maxHeld, &d.seqReads, &d.randReads, &d.seqWrites, &d.randWrites, &d.bytes, &d.served, &d.ordinary} {
		c.Store(0)
	}
}
