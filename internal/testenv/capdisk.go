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

	held, maxHeld                  atomic.Int64
	reads, writes, flushes         atomic.Int64
	readBytes, writeBytes, discard atomic.Int64
	waited, wait, largest          atomic.Int64 // wait: ns

	latMu   sync.Mutex
	latency hist.Histogram // of reads and writes, from arrival to served
}

// CapacityBucket is the limit a CapacityDisk serves under: a token bucket
// of a rate and a burst (see CapacityDisk). Each disk has its own; disks
// that share one (UseBucket) are one volume's capacity, whichever of
// them a request arrives on: two loop devices that draw on one bucket
// are two systems' devices on one cloud volume, each with its own
// counts, and the volume's limit on them together.
//
// With a peak (SetPeak), the bucket is a volume's burst credits, as the
// credit buckets of cloud volumes sold with a burst: its rate is the
// baseline, earned whether the volume is busy or idle, its burst the
// credits it holds at most, and the peak the fastest it serves while
// credits last. A volume that has idled serves at the peak until the
// credits are spent (burst I/Os above the baseline: at the peak P and
// baseline b, for burst/(P-b) seconds), then at the baseline, and earns
// its credits back at the baseline while idle.
type CapacityBucket struct {
	mu        sync.Mutex
	interval  time.Duration
	tolerance time.Duration // (burst-1) * interval
	tat       time.Time     // the theoretical arrival time of the next request
	burst     int
	// The peak's own bucket (peakInterval 0: none): a burst of
	// max(peak/100, 1) requests.
	peakInterval, peakTolerance time.Duration
	peakTAT                     time.Time
}

// SetPeak makes the bucket serve at most iops requests a second however
// many credits it holds (0: no peak, as before): see CapacityBucket.
func (b *CapacityBucket) SetPeak(iops int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.peakInterval, b.peakTolerance = 0, 0
	if iops > 0 {
		b.peakInterval = time.Second / time.Duration(iops)
		b.peakTolerance = time.Duration(max(iops/100, 1)-1) * b.peakInterval
	}
}

// NewCapacityBucket is a bucket of iops requests a second (0: no limit)
// holding burst tokens (0: iops/100, at least 1).
func NewCapacityBucket(iops, burst int) *CapacityBucket {
	b := &CapacityBucket{}
	b.SetLimit(iops, burst)
	return b
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
	case o.IOPS < 0 || o.Burst < 0:
		return fmt.Errorf("IOPS %d and burst %d must not be negative", o.IOPS, o.Burst)
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
		own: NewCapacityBucket(opts.IOPS, opts.Burst)}
	d.bucket.Store(d.own)
	return d, nil
}

// SetLimit sets the rate (0: no limit) and the burst (0: IOPS/100, at
// least 1) of the requests that arrive from now on, on the bucket the
// disk serves under (shared or not); those already waiting keep their
// turns.
func (d *CapacityDisk) SetLimit(iops, burst int) { d.Bucket().SetLimit(iops, burst) }

// Limit is the rate (0: none) and burst of the bucket the disk serves
// under.
func (d *CapacityDisk) Limit() (iops, burst int) { return d.Bucket().Limit() }

// Bucket is the bucket the disk serves under: its own, or the one it
// shares.
func (d *CapacityDisk) Bucket() *CapacityBucket { return d.bucket.Load() }

// UseBucket makes the disk serve the requests that arrive from now on
// under b, shared with the other disks that use it; nil puts it back
// under its own, as its own was left.
func (d *CapacityDisk) UseBucket(b *CapacityBucket) {
	if b == nil {
		b = d.own
	}
	d.bucket.Store(b)
}

// SetLimit sets the bucket's rate (0: no limit) and burst (0: IOPS/100,
// at least 1) for the requests that arrive from now on; those already
// waiting keep their turns.
func (b *CapacityBucket) SetLimit(iops, burst int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if burst <= 0 {
		burst = max(iops/100, 1)
	}
	b.interval, b.burst = 0, burst
	if iops > 0 {
		b.interval = time.Second / time.Duration(iops)
	}
	b.tolerance = time.Duration(burst-1) * b.interval
}

// Limit is the bucket's rate (0: none) and burst.
func (b *CapacityBucket) Limit() (iops, burst int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.interval > 0 {
		iops = int(time.Second / b.interval)
	}
	return iops, b.burst
}

// turn is when a request that arrives at now may be served. The bucket
// is kept as the theoretical arrival time of the next request (the
// generic cell rate algorithm): a request may go tolerance before it,
// and each moves it on by one interval. Turns are handed out under the
// lock, so they follow the arrival order.
//
// With a peak, the turn the credits give is then held to the peak's own
// bucket, kept the same way.
func (b *CapacityBucket) turn(now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	at := gcra(&b.tat, now, b.interval, b.tolerance)
	if b.peakInterval > 0 {
		at = gcra(&b.peakTAT, at, b.peakInterval, b.peakTolerance)
	}
	return at
}

// gcra is the turn of a request arriving at now at a bucket of one
// request every interval, tolerance before its theoretical arrival time
// tat, which it moves on (interval 0: no limit, at once).
func gcra(tat *time.Time, now time.Time, interval, tolerance time.Duration) time.Time {
	if interval == 0 {
		return now
	}
	if tat.Before(now) {
		*tat = now
	}
	at := tat.Add(-tolerance)
	*tat = tat.Add(interval)
	if at.Before(now) {
		return now
	}
	return at
}

// admit holds a request until its turn.
func (d *CapacityDisk) admit(ctx context.Context) {
	now := time.Now()
	at := d.Bucket().turn(now)
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
	d.admit(ctx)
	n := max(min(off+int64(len(dest)), d.Size)-off, 0)
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
	d.admit(ctx)
	n := max(min(off+int64(len(data)), d.Size)-off, 0)
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
		d.admit(ctx)
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
// limit, and the limit of opts is set once it is mounted (and the
// counts reset); unmounting it when the test ends comes before the loop
// device's detach and FUSE's unmount, failed test or not. A test that
// fills the volume (installs a database, creates its tables) does so
// at no limit too, SetLimit(0, 0), and sets the limit before it
// measures: installing MariaDB alone takes about 10 s at 200 IOPS.
func CapacityDir(t testing.TB, opts CapacityOptions) (disk *CapacityDisk, dev, mnt string) {
	t.Helper()
	limited := opts
	opts.IOPS = 0
	disk, dev = CapacityLoop(t, opts)
	mnt = MountExt4(t, dev, "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard")
	disk.SetLimit(limited.IOPS, limited.Burst)
	disk.Reset()
	return disk, dev, mnt
}
