package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// CapacityDisk is a writable DiskFile that serves at most IOPS requests a
// second in total, reads and writes alike, whoever issues them: the
// capacity is the device's own, so that no cgroup (a child of a capped
// parent, a process in no cgroup at all) gets more. It stands in for a
// small cloud volume whose IOPS limit is what the systems on it share.
//
// The limit counts requests, whatever their size up to MaxRequest (128
// KiB unless told otherwise): a cloud volume's IOPS limit counts
// operations, each up to a size (256 KiB on the common SSD volumes), with
// a separate throughput limit for bytes; counting per 4 KiB would make
// it a bandwidth limit that punishes a database's 16 KiB pages four times
// over. The loop device splits larger requests at MaxRequest (its
// max_sectors_kb) and FUSE carries each whole (its max_read and
// max_write), so the requests limited here are the ones the block layer
// counts in the loop device's diskstats, one for one.
//
// A token bucket of rate IOPS holds Burst tokens (10 ms' worth, IOPS/100,
// unless told otherwise: a volume's queue slack, not a credit that lets
// a database run fast for seconds); a request takes one token, waiting
// its turn in arrival order when there is none. A request that has its
// turn is served at once from the backing file (sparse, normally in
// /dev/shm, so the data is kept in memory): the disk has no service time
// of its own, only the limit (and FUSE's round trip, tens of
// microseconds), and a request that waits for its turn waits a little
// longer: the runtime's timers wake a sleeper up to about a millisecond
// late. The schedule of turns does not drift with them.
//
// Besides its requests, the disk may limit bytes: a bucket of bytes that
// reads and writes both draw on, each its size (Bandwidth), stands for a
// volume's throughput limit, and with a peak for a volume whose burst
// credits count bytes; one that only writes draw on (WriteBandwidth),
// with a peak, stands for an SSD's fast write cache, filled at the peak
// and drained at the baseline (WriteCache): writes go fast for a
// stretch, then slow, reads as fast as before, and the cache empties
// while the disk idles. A request takes its turn in each bucket it draws
// on, one after the other: the requests' first, then the bytes'. Each
// bucket is a CapacityBucket, and its limit may change while the disk
// serves (SetLimit, SetCreditLimit): a volume that slows down midway.
//
// A flush (the loop device's flush request, which reaches the file as an
// fsync) is counted and costs no token unless FlushIsRequest: a cloud
// volume has no volatile cache, its writes are durable when done and
// a flush is free. Discards (mkfs, fstrim) punch holes in the backing
// file, counted and free.
type CapacityDisk struct {
	DiskFile
	backing        *os.File
	flushIsRequest bool

	own    *CapacityBucket
	bucket atomic.Pointer[CapacityBucket] // own, or one shared with other disks (UseBucket)
	// Buckets of bytes: one that reads and writes draw on, one that
	// writes only draw on (no limit unless set).
	bandwidth, writeBandwidth *CapacityBucket

	held, maxHeld                  atomic.Int64
	reads, writes, flushes         atomic.Int64
	readBytes, writeBytes, discard atomic.Int64
	waited, wait, largest          atomic.Int64 // wait: ns

	latMu   sync.Mutex
	latency hist.Histogram // of reads and writes, from arrival to served
}

var (
	_ = (fs.NodeReader)((*CapacityDisk)(nil))
	_ = (fs.NodeWriter)((*CapacityDisk)(nil))
	_ = (fs.NodeFsyncer)((*CapacityDisk)(nil))
	_ = (fs.NodeAllocater)((*CapacityDisk)(nil))
)

// CapacityOptions shapes a CapacityDisk: the inputs of a test, not
// constants.
type CapacityOptions struct {
	// IOPS is how many requests the disk serves a second, reads and
	// writes together; 0 serves each at once (SetLimit changes it, e.g.
	// after a test has filled the disk).
	IOPS int
	// Burst is how many tokens the bucket holds: how many requests an
	// idle disk serves at once. 0 is IOPS/100, at least 1.
	Burst int
	// PeakIOPS, above IOPS, makes the requests' bucket a volume's burst
	// credits (CapacityBucket): IOPS is then the baseline, Burst the
	// credits, PeakIOPS the fastest the disk serves while they last. 0:
	// no peak.
	PeakIOPS int
	// Bandwidth is a bucket of bytes that reads and writes both draw
	// on, each its size: Baseline bytes a second (a throughput limit),
	// Credits and Peak its bandwidth burst. The zero value: no limit.
	Bandwidth CreditLimit
	// WriteBandwidth is a bucket of bytes that only writes draw on: with
	// a peak, a cache-like volume (WriteCache builds its limit). The
	// zero value: no limit.
	WriteBandwidth CreditLimit
	// Size is the disk's size in bytes, a multiple of 4096.
	Size int64
	// MaxRequest is the largest request in bytes, a multiple of 4096
	// from 4 KiB to 1 MiB; 0 is 128 KiB.
	MaxRequest int
	// FlushIsRequest makes a flush take a token like a read or a write.
	FlushIsRequest bool
	// Dir is where the sparse backing file is made; "" is a fresh
	// directory in /dev/shm (memory: the disk's data stays off the
	// machine's disk). It is removed when the test ends.
	Dir string
}

const defaultMaxRequest = 128 << 10

func (o *CapacityOptions) check() error {
	if o.MaxRequest == 0 {
		o.MaxRequest = defaultMaxRequest
	}
	switch {
	case o.IOPS < 0 || o.Burst < 0 || o.PeakIOPS < 0:
		return fmt.Errorf("IOPS %d, burst %d and peak %d must not be negative", o.IOPS, o.Burst, o.PeakIOPS)
	case o.PeakIOPS > 0 && o.IOPS > 0 && o.PeakIOPS <= o.IOPS:
		return fmt.Errorf("peak %d IOPS is not above the baseline, %d", o.PeakIOPS, o.IOPS)
	case !o.Bandwidth.check():
		return fmt.Errorf("bandwidth %+v: negative, or its peak not above its baseline", o.Bandwidth)
	case !o.WriteBandwidth.check():
		return fmt.Errorf("write bandwidth %+v: negative, or its peak not above its baseline", o.WriteBandwidth)
	case o.Size <= 0 || o.Size%4096 != 0:
		return fmt.Errorf("size %d is not a positive multiple of 4096", o.Size)
	case o.MaxRequest < 4096 || o.MaxRequest > 1<<20 || o.MaxRequest%4096 != 0:
		return fmt.Errorf("largest request %d is not a multiple of 4096 from 4 KiB to 1 MiB", o.MaxRequest)
	}
	return nil
}

// NewCapacityDisk is a CapacityDisk serving from backing, an open
// read-write file of opts.Size bytes that the caller closes after the
// disk's last request. CapacityLoop makes one and its loop device.
func NewCapacityDisk(backing *os.File, opts CapacityOptions) (*CapacityDisk, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	d := &CapacityDisk{DiskFile: DiskFile{Size: opts.Size}, backing: backing, flushIsRequest: opts.FlushIsRequest,
		own:       NewCreditBucket(Requests, CreditLimit{}),
		bandwidth: NewCreditBucket(Bytes, CreditLimit{}), writeBandwidth: NewCreditBucket(Bytes, CreditLimit{})}
	d.bucket.Store(d.own)
	d.setLimits(opts)
	return d, nil
}

// setLimits sets the limits of opts on the disk's buckets.
func (d *CapacityDisk) setLimits(opts CapacityOptions) {
	d.Bucket().SetCreditLimit(CreditLimit{Baseline: int64(opts.IOPS), Credits: int64(opts.Burst), Peak: int64(opts.PeakIOPS)})
	d.bandwidth.SetCreditLimit(opts.Bandwidth)
	d.writeBandwidth.SetCreditLimit(opts.WriteBandwidth)
}

// SetLimit sets the rate (0: no limit) and the burst (0: IOPS/100, at
// least 1) of the requests that arrive from now on, on the bucket the
// disk serves under (shared or not); those already waiting keep their
// turns, and the next follows the last at the new rate, with the tokens
// the bucket held (see CapacityBucket).
func (d *CapacityDisk) SetLimit(iops, burst int) { d.Bucket().SetLimit(iops, burst) }

// Limit is the rate (0: none) and burst of the bucket the disk serves
// under.
func (d *CapacityDisk) Limit() (iops, burst int) { return d.Bucket().Limit() }

// Bucket is the bucket of requests the disk serves under: its own, or
// the one it shares.
func (d *CapacityDisk) Bucket() *CapacityBucket { return d.bucket.Load() }

// Bandwidth is the disk's bucket of bytes that reads and writes draw on
// (CapacityOptions.Bandwidth).
func (d *CapacityDisk) Bandwidth() *CapacityBucket { return d.bandwidth }

// WriteBandwidth is the disk's bucket of bytes that only writes draw on
// (CapacityOptions.WriteBandwidth).
func (d *CapacityDisk) WriteBandwidth() *CapacityBucket { return d.writeBandwidth }

// UseBucket makes the disk serve the requests that arrive from now on
// under b, shared with the other disks that use it; nil puts it back
// under its own, as its own was left. A bucket of bytes there is a
// bandwidth shared by the disks.
func (d *CapacityDisk) UseBucket(b *CapacityBucket) {
	if b == nil {
		b = d.own
	}
	d.bucket.Store(b)
}

// turn is when a read or a write of size bytes that arrives at now may
// be served: its turn in each bucket it draws on, taken in one after
// the other.
func (d *CapacityDisk) turn(now time.Time, size int, write bool) time.Time {
	at := d.Bucket().turn(now, size)
	at = d.bandwidth.turn(at, size)
	if write {
		at = d.writeBandwidth.turn(at, size)
	}
	return at
}

// admit holds a read or a write of size bytes until its turn.
func (d *CapacityDisk) admit(ctx context.Context, size int, write bool) {
	now := time.Now()
	d.waitTurn(ctx, now, d.turn(now, size, write))
}

// waitTurn holds a request that arrived at now until its turn, at.
func (d *CapacityDisk) waitTurn(ctx context.Context, now, at time.Time) {
	if wait := at.Sub(now); wait > 0 {
		d.waited.Add(1)
		d.wait.Add(int64(wait))
		timer := time.NewTimer(wait)
		// The kernel interrupts a request only when its issuer is
		// killed; the turn is then given up (the bucket keeps it spent).
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
		}
	}
}

// enter counts a request in the disk; the returned function counts it
// out.
func (d *CapacityDisk) enter() (leave func()) {
	held := d.held.Add(1)
	for m := d.maxHeld.Load(); held > m && !d.maxHeld.CompareAndSwap(m, held); m = d.maxHeld.Load() {
	}
	return func() { d.held.Add(-1) }
}

// served records the latency of a read or a write that arrived at
// start: its wait for its turn and its service, the volume's own latency
// as a cloud provider's metrics give it (a wait in the kernel before the
// request reached the volume, a cgroup's throttle, is not in it).
func (d *CapacityDisk) served(start time.Time) {
	took := time.Since(start)
	d.latMu.Lock()
	d.latency.Record(int64(took))
	d.latMu.Unlock()
}

// Latency is the histogram of the latencies of the reads and writes
// served since the last Reset, from their arrival at the disk to their
// end (a copy).
func (d *CapacityDisk) Latency() *hist.Histogram {
	var h hist.Histogram
	d.latMu.Lock()
	h.Merge(&d.latency)
	d.latMu.Unlock()
	return &h
}

func (d *CapacityDisk) sized(n int) {
	for m := d.largest.Load(); int64(n) > m && !d.largest.CompareAndSwap(m, int64(n)); m = d.largest.Load() {
	}
}

func (d *CapacityDisk) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o644
	out.Size = uint64(d.Size)
	return 0
}

// Open asks for direct I/O (no page cache between the loop device and
// the disk) and lets writes in parallel, as reads are: the kernel would
// otherwise hold the file's lock across each write.
func (d *CapacityDisk) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES, 0
}

func (d *CapacityDisk) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	defer d.enter()()
	defer d.served(time.Now())
	n := max(min(off+int64(len(dest)), d.Size)-off, 0)
	d.admit(ctx, int(n), false)
	got, err := d.backing.ReadAt(dest[:n], off)
	if err != nil && int64(got) < n {
		return nil, fs.ToErrno(err)
	}
	d.reads.Add(1)
	d.readBytes.Add(n)
	d.sized(len(dest))
	return fuse.ReadResultData(dest[:n]), 0
}

func (d *CapacityDisk) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	defer d.enter()()
	defer d.served(time.Now())
	n := max(min(off+int64(len(data)), d.Size)-off, 0)
	d.admit(ctx, int(n), true)
	if _, err := d.backing.WriteAt(data[:n], off); err != nil {
		return 0, fs.ToErrno(err)
	}
	d.writes.Add(1)
	d.writeBytes.Add(n)
	d.sized(len(data))
	return uint32(n), 0
}

// Fsync is the loop device's flush. The backing file is not synced: it
// lives as long as the test, and a crash of the machine is not what the
// disk models.
func (d *CapacityDisk) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	defer d.enter()()
	if d.flushIsRequest {
		// A request for the requests' bucket, no bytes for the others.
		now := time.Now()
		d.waitTurn(ctx, now, d.Bucket().turn(now, 0))
	}
	d.flushes.Add(1)
	return 0
}

// Allocate is the loop device's discard and write-zeroes: a hole in the
// backing file.
func (d *CapacityDisk) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	if err := unix.Fallocate(int(d.backing.Fd()), mode, int64(off), int64(size)); err != nil {
		return fs.ToErrno(err)
	}
	d.discard.Add(1)
	return 0
}

// CapacityCounts are what a CapacityDisk served since its last Reset.
type CapacityCounts struct {
	// Reads and Writes are the requests served, each one token.
	Reads, Writes         int64
	ReadBytes, WriteBytes int64
	// Flushes are the fsyncs of the file: the loop device's flush
	// requests. Discards are its discards and write-zeroes.
	Flushes, Discards int64
	// Waited is how many requests waited for their turn, Wait how long
	// in all: a disk at its limit makes nearly every request wait.
	Waited int64
	Wait   time.Duration
	// MaxHeld is the most requests the disk held at once (waiting or
	// served), Largest the largest request in bytes.
	MaxHeld, Largest int64
}

// Requests is the number of reads and writes served: what the limit
// counts, and what the loop device's diskstats count as its reads and
// writes completed.
func (c CapacityCounts) Requests() int64 { return c.Reads + c.Writes }

func (c CapacityCounts) String() string {
	var wait time.Duration
	if c.Waited > 0 {
		wait = c.Wait / time.Duration(c.Waited)
	}
	return fmt.Sprintf("reads %d (%d B), writes %d (%d B), flushes %d, discards %d; %d waited, %v on average; at most %d at once, largest %d B",
		c.Reads, c.ReadBytes, c.Writes, c.WriteBytes, c.Flushes, c.Discards, c.Waited, wait.Round(time.Microsecond), c.MaxHeld, c.Largest)
}

// Counts is what the disk served since the last Reset.
func (d *CapacityDisk) Counts() CapacityCounts {
	return CapacityCounts{Reads: d.reads.Load(), Writes: d.writes.Load(),
		ReadBytes: d.readBytes.Load(), WriteBytes: d.writeBytes.Load(),
		Flushes: d.flushes.Load(), Discards: d.discard.Load(),
		Waited: d.waited.Load(), Wait: time.Duration(d.wait.Load()),
		MaxHeld: d.maxHeld.Load(), Largest: d.largest.Load()}
}

// Reset forgets what was served so far; the bucket is left as it is.
func (d *CapacityDisk) Reset() {
	for _, c := range []*atomic.Int64{&d.reads, &d.writes, &d.readBytes, &d.writeBytes, &d.flushes,
		&d.discard, &d.waited, &d.wait, &d.maxHeld, &d.largest} {
		c.Store(0)
	}
	d.latMu.Lock()
	d.latency = hist.Histogram{}
	d.latMu.Unlock()
}

// CapacityLoop makes a CapacityDisk over a sparse backing file and
// attaches it as a writable loop device with direct I/O: the loop device
// hands each of its requests to the disk as one read or write, many in
// flight at once, so that they wait their turns in the disk and not in
// the loop device's worker. The loop device's largest request is set to
// the disk's (max_sectors_kb). All is undone when the test ends: the
// loop device detached, FUSE unmounted, the backing file removed. It
// needs root, /dev/fuse and losetup.
func CapacityLoop(t testing.TB, opts CapacityOptions) (disk *CapacityDisk, dev string) {
	t.Helper()
	Root(t)
	if err := opts.check(); err != nil {
		t.Fatalf("testenv.CapacityLoop: %v", err)
	}
	dir := opts.Dir
	if dir == "" {
		shm, err := os.MkdirTemp("/dev/shm", "iomatrix-test-")
		Require(t, err == nil, "no /dev/shm to back a capacity disk")
		t.Cleanup(func() { os.RemoveAll(shm) })
		dir = shm
	}
	backing, err := os.OpenFile(filepath.Join(dir, "capacity.img"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	Must(t, err)
	t.Cleanup(func() {
		_ = backing.Close() // read and written only; nothing to lose
		_ = os.Remove(backing.Name())
	})
	Must(t, backing.Truncate(opts.Size))
	disk, err = NewCapacityDisk(backing, opts)
	Must(t, err)
	// The loop device's direct I/O is asynchronous; FUSE passes it on
	// as such only with the ASYNC_DIO capability, and otherwise holds
	// the loop device's worker (one per cgroup) for each request, so
	// that the requests would queue there, out of the disk's sight.
	// MaxBackground bounds the asynchronous requests in the daemon: its
	// default, 12, would also queue a deeper load in the kernel.
	dev = fuseLoop(t, disk, fuse.MountOptions{MaxWrite: opts.MaxRequest, MaxBackground: 256,
		ExtraCapabilities: fuse.CAP_ASYNC_DIO}, "--direct-io=on")
	lockDevice(t, dev)
	name := filepath.Base(dev)
	dio, err := os.ReadFile(filepath.Join(sysfs.SysRoot, "block", name, "loop", "dio"))
	Require(t, err == nil && string(dio) == "1\n", "loop device "+dev+" over FUSE does not use direct I/O")
	kb := strconv.Itoa(opts.MaxRequest >> 10)
	if got, file, err := sysfs.Default().SetQueueAttr(name, "max_sectors_kb", kb); err != nil || got != kb {
		t.Fatalf("set %s to %s: read back %q, %v", file, kb, got, err)
	}
	return disk, dev
}

// CapacityDir is a CapacityLoop with an ext4 file system on it, mounted
// on a fresh temp dir: a volume for a database. The file system is made
// whole (no lazy initialization writing while a test measures) at no
// limit, and the limits of opts are set once it is mounted, the buckets
// full (and the counts reset); unmounting it when the test ends comes before the loop
// device's detach and FUSE's unmount, failed test or not. A test that
// fills the volume (installs a database, creates its tables) does so
// at no limit too, SetLimit(0, 0), and sets the limit before it
// measures: installing MariaDB alone takes about 10 s at 200 IOPS.
func CapacityDir(t testing.TB, opts CapacityOptions) (disk *CapacityDisk, dev, mnt string) {
	t.Helper()
	limited := opts
	opts.IOPS, opts.PeakIOPS, opts.Bandwidth, opts.WriteBandwidth = 0, 0, CreditLimit{}, CreditLimit{}
	disk, dev = CapacityLoop(t, opts)
	mnt = MountExt4(t, dev, "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard")
	disk.setLimits(limited)
	disk.Reset()
	return disk, dev, mnt
}
