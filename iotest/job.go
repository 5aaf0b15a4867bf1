package iotest

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe" // and for go:linkname

	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"

	"golang.org/x/sys/unix"
)

// nanotime is the runtime's monotonic clock: one vDSO call, no allocation,
// about half the cost of time.Now, which also reads the wall clock.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// clock holds the phase boundaries of one run in nanotime units. Every
// stream reads both on every completion (plain loads on the hardware this
// runs on); an auto window moves them while the streams run, only ever to
// a time still ahead (see run.judgeRounds): the start to a later round
// when the window restarts, the end to just ahead of now when it
// converges.
type clock struct {
	base    int64        // the run starts here: set before the streams start
	rampEnd atomic.Int64 // measured window starts here
	end     atomic.Int64 // and ends here
}

// stats is owned by exactly one goroutine while the run lasts and merged by
// the coordinator afterwards: no lock or atomic on the per-I/O path except
// the progress counter, which only its owner writes.
type stats struct {
	readHist, writeHist   hist.Histogram
	readIOs, writeIOs     uint64 // completed inside the measured window
	readBytes, writeBytes uint64
	allReads, allWrites   uint64 // every completion: ramp, window and drain
	subReads, subWrites   uint64 // every submission
	badReads, badWrites   uint64 // completions that failed
	reReads, reWrites     uint64 // I/Os the kernel cancelled and that were issued again
	// sqThreads and sqCPU are the SQPOLL rings' kernel submission threads
	// found, and their CPU time over the stream's life (see sqThread).
	sqThreads int
	sqCPU     time.Duration
	timeline  []uint64
	// sizeIOs counts the window's I/Os by size index (see mixTable), reads
	// then writes; hot1 and hot10 those drawn from the hottest 1 % and
	// 10 % of a skewed distribution.
	sizeIOs     [2][pattern.MaxSplitSizes]uint64
	hot1, hot10 uint64
	open        *openStats // an open-loop run's own figures; nil in a closed loop
	lat         *latStream // the latency log's buffers; nil without one
	sync        syncStats  // a durable-write pattern's syncs (fdatasync:N, fsync:N)
	err         *results.IOError
	// window is the start (rampEnd) the window figures above count from;
	// second is the latest second of the timeline counted in.
	window, second int64
	progress       atomic.Uint64
	// sealed is the number of whole seconds of the timeline this stream
	// has left behind for good, and sealedIn the window they belong to: an
	// auto window reads those seconds while the run goes on.
	sealed, sealedIn atomic.Int64
	_                [40]byte // keep progress counters of workers on separate cache lines
}

func newStats(seconds int) *stats {
	s := &stats{timeline: make([]uint64, seconds)}
	// Touch every page now: otherwise pages of the histograms and the
	// timeline fault in one by one as rarer latencies and later seconds
	// are first recorded, and a long run's memory creeps up.
	s.readHist.Touch()
	s.writeHist.Touch()
	for i := 0; i < len(s.timeline); i += 512 {
		s.timeline[i] = 0
	}
	return s
}

// account books one completed I/O at time now, and tells whether it fell
// in the window.
func (s *stats) account(c *clock, write bool, bytes uint64, start, now int64) bool {
	if write {
		s.allWrites++
	} else {
		s.allReads++
	}
	rampEnd := c.rampEnd.Load()
	if now < rampEnd || now >= c.end.Load() {
		return false
	}
	if rampEnd != s.window {
		s.restartWindow(rampEnd)
	}
	lat := now - start
	if write {
		s.writeIOs++
		s.writeBytes += bytes
		s.writeHist.Record(lat)
	} else {
		s.readIOs++
		s.readBytes += bytes
		s.readHist.Record(lat)
	}
	i := (now - rampEnd) / 1e9
	if i > s.second {
		s.second = i
		s.sealed.Store(i)
		if s.lat != nil {
			s.lat.handOver() // the writer takes it at its next tick
		}
	}
	if i < int64(len(s.timeline)) {
		s.timeline[i]++
	}
	return true
}

// accountKind books one completed I/O as account does, and its size and
// hotness (see kindSize) when it fell in the window.
func (s *stats) accountKind(c *clock, write bool, kind uint8, bytes uint64, start, now int64) bool {
	if !s.account(c, write, bytes, start, now) {
		return false
	}
	d := 0
	if write {
		d = 1
	}
	s.sizeIOs[d][kind&kindSize]++
	if kind&kindHot10 != 0 {
		s.hot10++
		if kind&kindHot1 != 0 {
			s.hot1++
		}
	}
	return true
}

// restartWindow drops the window figures: the window now starts at
// rampEnd, and what came before it was ramp.
func (s *stats) restartWindow(rampEnd int64) {
	s.readHist, s.writeHist = hist.Histogram{}, hist.Histogram{}
	s.readIOs, s.writeIOs, s.readBytes, s.writeBytes = 0, 0, 0, 0
	s.sizeIOs, s.hot1, s.hot10 = [2][pattern.MaxSplitSizes]uint64{}, 0, 0
	if s.sync.hist != nil {
		*s.sync.hist = hist.Histogram{}
	}
	clear(s.timeline)
	s.window, s.second = rampEnd, 0
	s.sealed.Store(0)
	s.sealedIn.Store(rampEnd)
}

// submitted counts an I/O handed to the kernel.
func (s *stats) submitted(write bool) {
	if write {
		s.subWrites++
	} else {
		s.subReads++
	}
}

// reissued counts an I/O the kernel cancelled on its own and that was
// issued again (see ringStream.reissue).
func (s *stats) reissued(write bool) {
	if write {
		s.reWrites++
	} else {
		s.reReads++
	}
}

func (s *stats) fail(write bool, off int64, res int, expected int) {
	if write {
		s.badWrites++
	} else {
		s.badReads++
	}
	if s.err != nil {
		return // the first error is the one reported
	}
	op := "read"
	if write {
		op = "write"
	}
	if res < 0 {
		errno := syscall.Errno(-res)
		s.err = &results.IOError{Op: op, Offset: off, Errno: int(errno), Msg: errno.Error()}
		return
	}
	s.err = &results.IOError{Op: op, Offset: off, Msg: fmt.Sprintf("short %s: %d of %d bytes", op, res, expected)}
}

// failNVMe records a passthrough command that the drive completed with
// an NVMe status other than success: status is the kernel's, the
// completion's status field without its phase bit (status code in bits
// 0-7, status code type in 8-10, do-not-retry in 14).
func (s *stats) failNVMe(write bool, off int64, status int) {
	if write {
		s.badWrites++
	} else {
		s.badReads++
	}
	if s.err != nil {
		return
	}
	op := "read"
	if write {
		op = "write"
	}
	s.err = &results.IOError{Op: op, Offset: off, NVMeStatus: status,
		Msg: fmt.Sprintf("NVMe status 0x%x (status code type %d, status code 0x%02x)", status, status>>8&7, status&0xff)}
}

func (s *stats) merge(o *stats) {
	s.readHist.Merge(&o.readHist)
	s.writeHist.Merge(&o.writeHist)
	s.readIOs += o.readIOs
	s.writeIOs += o.writeIOs
	s.readBytes += o.readBytes
	s.writeBytes += o.writeBytes
	s.allReads += o.allReads
	s.allWrites += o.allWrites
	s.subReads += o.subReads
	s.subWrites += o.subWrites
	s.badReads += o.badReads
	s.badWrites += o.badWrites
	s.reReads += o.reReads
	s.reWrites += o.reWrites
	s.sqThreads += o.sqThreads
	s.sqCPU += o.sqCPU
	for d := range s.sizeIOs {
		for k := range s.sizeIOs[d] {
			s.sizeIOs[d][k] += o.sizeIOs[d][k]
		}
	}
	s.hot1 += o.hot1
	s.hot10 += o.hot10
	for i := range o.timeline {
		if i < len(s.timeline) {
			s.timeline[i] += o.timeline[i]
		}
	}
	s.sync.merge(&o.sync)
	if o.open != nil {
		if s.open == nil {
			s.open = new(openStats)
		}
		s.open.merge(o.open)
	}
	if s.err == nil {
		s.err = o.err
	}
}

// sequence draws offsets and directions. Each job (psync: each worker) owns
// one, seeded from the run seed, so a seed repeats the whole sequence.
type sequence struct {
	rng       rand.PCG // offsets and directions
	data      rand.PCG // write scrambling, kept apart so offsets do not depend on block size
	blocks    uint64   // random: number of blocks in the target
	bs        int64
	readPct   uint64
	random    bool
	seqStart  int64         // sequential: region of this job
	seqLen    int64         // a whole number of blocks
	seqPos    int64         // uring: private cursor
	seqShared *atomic.Int64 // psync: cursor shared by the workers of a job
	budget    *atomic.Int64 // I/Os the job may still issue; nil = no limit
	// mix is set for a block-size mix or a skewed distribution (shared by
	// the job's streams); rotation turns the job's scattered ranks.
	mix      *mixTable
	rotation uint64
	// content is set when the pattern's writes carry data that
	// compresses or repeats; nil for random, unique data.
	content *content
}

// take claims the next I/O of the job's budget; false when it is spent.
func (q *sequence) take() bool {
	return q.budget == nil || q.budget.Add(-1) >= 0
}

// newSequence is the sequence of one stream, with a table of its own
// (see newMix); a run shares one table among its streams
// (newSequenceWith).
func newSequence(seed uint64, job, worker int, p results.Pattern, size int64) *sequence {
	m, err := newMix(p, size)
	if err != nil {
		panic(err) // a pattern that passed pattern.Validate parses
	}
	return newSequenceWith(seed, job, worker, p, size, m)
}

func newSequenceWith(seed uint64, job, worker int, p results.Pattern, size int64, m *mixTable) *sequence {
	q := &sequence{bs: p.BlockSize, readPct: uint64(p.ReadPct), random: p.Access == results.Random, mix: m}
	if m != nil && m.skew.kind != "" {
		// Per job, not per stream: a job's streams load the same hot set.
		q.rotation = m.skew.rotation(rand.NewPCG(seed^0x5ce3, uint64(job)))
	}
	q.rng.Seed(seed, uint64(job)<<32|uint64(worker)+0x9e3779b97f4a7c15)
	q.data.Seed(seed^0xda7a, uint64(job)<<32|uint64(worker))
	q.content = newContent(p, seed, job, worker, &q.data)
	q.blocks = uint64(size / p.BlockSize)
	region := size / int64(p.Jobs) / p.BlockSize * p.BlockSize
	q.seqStart = int64(job) * region
	q.seqLen = region
	return q
}

// uint64n is Lemire's unbiased bounded draw.
func (q *sequence) uint64n(n uint64) uint64 {
	hi, lo := bits.Mul64(q.rng.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(q.rng.Uint64(), n)
		}
	}
	return hi
}

// next returns the direction and offset of the next I/O.
func (q *sequence) next() (write bool, off int64) {
	write, off, _, _ = q.draw()
	return write, off
}

// draw returns the direction, offset, size and kind (see kindSize) of the
// next I/O. A pattern of one size and uniform offsets draws exactly as it
// always has: the direction, then the offset.
func (q *sequence) draw() (write bool, off, size int64, kind uint8) {
	switch q.readPct {
	case 100:
	case 0:
		write = true
	default:
		write = q.uint64n(100) >= q.readPct
	}
	off, size, kind = q.drawFor(write)
	return write, off, size, kind
}

// drawFor returns the offset, size and kind of the next I/O, whose
// direction is already known: drawn by draw, or an open-loop schedule's
// per direction.
func (q *sequence) drawFor(write bool) (off, size int64, kind uint8) {
	m := q.mix
	if m == nil {
		if q.random {
			return int64(q.uint64n(q.blocks)) * q.bs, q.bs, 0
		}
		return q.seqNext(q.bs), q.bs, 0
	}
	if m.entries[0] > 1 || m.entries[1] > 1 {
		kind = m.size(write, q.uint64n(100))
	}
	size = m.sizes[kind]
	if !q.random {
		return q.seqNext(size), size, kind
	}
	if m.skew.kind == "" {
		return int64(q.uint64n(uint64(m.fit[kind]))) * m.unit, size, kind
	}
	block, hot := q.skewed()
	// The few blocks too near the end for a larger size start it at the
	// last offset that fits.
	return min(int64(block)*m.unit, m.last[kind]), size, kind | hot
}

// seqNext is the offset of the next sequential I/O of size bytes; one
// that would cross the end of the job's region starts it again.
func (q *sequence) seqNext(size int64) int64 {
	var pos int64
	if q.seqShared != nil {
		pos = q.seqShared.Add(size) - size
	} else {
		pos = q.seqPos
		q.seqPos += size
	}
	pos %= q.seqLen
	if pos+size > q.seqLen {
		pos = 0
	}
	return q.seqStart + pos
}

// scramble makes every write unique so that deduplicating or compressing
// storage cannot shortcut it: the first 16 bytes of each 512-byte sector get
// fresh random bits. The rest of the buffer is random from the start. A
// pattern whose data compresses or repeats writes its content instead.
func (q *sequence) scramble(buf []byte) {
	if q.content != nil {
		q.content.write(&q.data, buf)
		return
	}
	for i := 0; i+16 <= len(buf); i += 512 {
		a, b := q.data.Uint64(), q.data.Uint64()
		putU64(buf[i:], a)
		putU64(buf[i+8:], b)
	}
}

func putU64(b []byte, v uint64) {
	_ = b[7]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	b[4], b[5], b[6], b[7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
}

// arena is page-aligned I/O memory outside the Go heap, so the collector
// never scans or moves it and O_DIRECT alignment holds.
type arena struct {
	mem   []byte
	whole []byte // the mapping mem lies in, unmapped by free
	// contiguous is set when mem lies on small pages that are physically
	// contiguous 512 at a time (contiguousArena).
	contiguous bool
	stride     int
	bs         int
	// keep is set when a request given up on may still complete into the
	// arena: the kernel writes a read's data into it whenever the device
	// answers (a request the ring has not issued yet even resolves the
	// address only then), and were it unmapped and the addresses reused by
	// then, that would overwrite unrelated memory. A kept arena is never
	// unmapped: a leak bounded by the run's buffers, paid only after a
	// device stopped answering.
	keep atomic.Bool
}

// newArena is n buffers of bs bytes each, filled from fill: on
// physically contiguous small pages when contiguous is set and the kernel
// can give them (contiguousArena), else on small pages faulted in one by
// one. Only buffers that will be registered with a ring may be
// contiguous: the block layer merges the contiguous pages of a buffer
// named by address into one segment, and the requests an I/O makes would
// then depend on the layout (see contiguousArena), whose pages are checked
// in sys's smaps.
func newArena(sys sysfs.FS, n int, bs int64, fill *rand.PCG, contiguous bool) (*arena, error) {
	stride := (int(bs) + pageSize - 1) / pageSize * pageSize
	size := n * stride
	if contiguous && stride > pageSize {
		if a := contiguousArena(sys, size, fill); a != nil {
			a.stride, a.bs = stride, int(bs)
			return a, nil
		}
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("allocate %d I/O buffers of %d bytes: %w", n, bs, err)
	}
	// Small pages only: see contiguousArena.
	_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE)
	fillRandom(mem, fill)
	return &arena{mem: mem, whole: mem, stride: stride, bs: int(bs)}, nil
}

// hugeSize is the size of a transparent huge page (x86-64, and arm64
// with 4 KiB pages).
const hugeSize = 2 << 20

// contiguousArena is an arena of size bytes, filled from fill, on small
// pages that are physically contiguous 512 at a time; nil where the
// kernel cannot give that (transparent huge pages off, none free, or a
// huge page it would not split), and the caller then faults small pages
// in one by one, wherever the allocator has them.
//
// Small pages, because a huge page would let io_uring's registered
// buffers and the block layer take 2 MiB as one segment, and how many
// requests an I/O becomes would then depend on the memory allocator
// rather than the device (caps count requests, and the cap model counts
// a buffer's pages: sysfs.BlockDevice). Registered buffers only: a ring
// hands the block layer a registered buffer page by page, and the split
// counts pages, but pread (psync) and a ring's unregistered READ name the
// buffer by address, and the block layer then merges its contiguous pages
// into one segment (a 1 MiB read on a loop device would be one request,
// not the model's two). Contiguous, because the driver
// hands a request to the device in runs of contiguous memory: a virtio
// disk takes one descriptor a run, and its host reads each run on its
// own. Pages faulted one by one came in runs of 1.1-1.2 pages in
// iomatrix's buffers and 1.7-3.5 in fio's (read from /proc/PID/pagemap
// while each ran), and on the test VM's virtio disk 1 MiB random reads at
// QD16 ran at 0.62-0.98x fio's IOPS (median 0.72-0.88, sessions of 5-9
// pairs), at 850 against 1,100-1,500 IOPS over 10 s: the host's cost per
// run. The request count is the same either way: a registered buffer's
// request is split at max_segments pages, contiguous or not (a 1 MiB read
// there is 1,016 KiB and 8 KiB for both tools).
//
// How: each 2 MiB stretch is faulted in as one transparent huge page,
// filled (the kernel maps an all-zero small page of a huge page it
// splits to the shared zero page, which would undo the point), and then
// split into small pages by a madvise that covers part of it (MADV_COLD
// on its first page: the kernel splits a huge page it is asked to
// deactivate in part). The huge pages are checked in /proc/self/smaps
// before the split and found gone after it.
func contiguousArena(sys sysfs.FS, size int, fill *rand.PCG) *arena {
	span := (size + hugeSize - 1) / hugeSize * hugeSize
	// The region starts on a huge-page boundary with at least a page of
	// the mapping on either side of it, so that it is always a mapping of
	// its own once madvised, never merged with a neighbour: smaps finds
	// it by its start.
	whole, err := unix.Mmap(-1, 0, span+hugeSize+pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil
	}
	skip := hugeSize - int(uintptr(unsafe.Pointer(&whole[0])))%hugeSize // 1 page to 2 MiB
	region := whole[skip : skip+span : skip+span]
	ok := unix.Madvise(region, unix.MADV_HUGEPAGE) == nil
	if ok {
		for off := 0; off < span; off += hugeSize {
			region[off] = 0 // fault the stretch in: a huge page if one is free
		}
		ok = hugeBytes(sys, region) == span
	}
	// Never a huge page from here on: khugepaged would otherwise build
	// them again while a run measures.
	ok = unix.Madvise(region, unix.MADV_NOHUGEPAGE) == nil && ok
	if ok {
		fillRandom(region[:size], fill)
		for off := 0; off < span; off += hugeSize {
			_ = unix.Madvise(region[off:off+pageSize], unix.MADV_COLD)
		}
		ok = hugeBytes(sys, region) == 0
	}
	if !ok {
		_ = unix.Munmap(whole)
		return nil
	}
	return &arena{mem: region[:size:size], whole: whole, contiguous: true}
}

// hugeBytes is how much of the mapping that starts at region's first byte
// is backed by transparent huge pages (smaps' AnonHugePages); -1 when it
// cannot be read.
func hugeBytes(sys sysfs.FS, region []byte) int {
	n, err := sys.SelfAnonHuge(uint64(uintptr(unsafe.Pointer(&region[0]))))
	if err != nil {
		return -1
	}
	return n
}

// bufs are the first n buffers.
func (a *arena) bufs(n int) [][]byte {
	b := make([][]byte, n)
	for i := range b {
		b[i] = a.buf(i)
	}
	return b
}

func (a *arena) buf(i int) []byte {
	return a.mem[i*a.stride : i*a.stride+a.bs : i*a.stride+a.bs]
}

func (a *arena) free() {
	if a != nil && a.mem != nil && !a.keep.Load() {
		_ = unix.Munmap(a.whole)
		a.mem, a.whole = nil, nil
	}
}

const pageSize = 4096

func fillRandom(b []byte, r *rand.PCG) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		putU64(b[i:], r.Uint64())
	}
	for ; i < len(b); i++ {
		b[i] = byte(r.Uint64())
	}
}
