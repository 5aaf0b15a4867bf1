package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// DiskFile is a read-only FUSE file of Size bytes, read with direct I/O
// (each read of the loop device reaches Read, not a cache). Embed it in a
// type that adds Read (fs.NodeReader) to decide what the device answers.
type DiskFile struct {
	fs.Inode
	Size int64
}

var (
	_ = (fs.NodeOpener)((*DiskFile)(nil))
	_ = (fs.NodeGetattrer)((*DiskFile)(nil))
)

func (d *DiskFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (d *DiskFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(d.Size)
	return 0
}

// FUSELoop serves file as the only file of a FUSE mount and attaches it
// read-only as a loop device: a block device whose every read is answered
// by file's Read method (see DiskFile), to stand in for a device that fails or stops
// answering. Both are gone when the test ends; a Read that blocks must be
// released first (by a cleanup registered after this call, which runs
// before these), or the loop device cannot detach. It needs root,
// /dev/fuse and losetup.
func FUSELoop(t testing.TB, file fs.InodeEmbedder) (dev string) {
	t.Helper()
	return fuseLoop(t, file, fuse.MountOptions{}, "-r")
}

// WritableFUSELoop is FUSELoop attached read-write, for a file that also
// implements fs.NodeWriter (SeekDisk). The loop device is attached
// without direct I/O (stated, whatever losetup's default): its worker
// then hands the file one request at a time, in dispatch order, and
// waits for it. The test holds a BSD lock on the device while it runs:
// udev, which probes a device after a writer closes it, puts off its
// probe of a locked one until it is unlocked (systemd's block device
// locking), so that no read of its own reaches the file between runs.
func WritableFUSELoop(t testing.TB, file fs.InodeEmbedder) (dev string) {
	t.Helper()
	dev = fuseLoop(t, file, fuse.MountOptions{}, "--direct-io=off")
	lockDevice(t, dev)
	return dev
}

// lockDevice holds a BSD lock on dev until the test ends, which keeps
// udev's probes off it (see WritableFUSELoop). Call it after the device
// is attached: its cleanup then runs before the detach.
func lockDevice(t testing.TB, dev string) {
	t.Helper()
	f, err := os.Open(dev)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
	}
	if err != nil {
		t.Fatalf("lock %s: %v", dev, err)
	}
	t.Cleanup(func() { _ = f.Close() })
}

// fuseLoop mounts a FUSE file system whose only file is file, with mount
// (its DirectMount, AllowOther and FsName are set here), and attaches
// that file as a loop device with losetupArgs.
func fuseLoop(t testing.TB, file fs.InodeEmbedder, mount fuse.MountOptions, losetupArgs ...string) (dev string) {
	t.Helper()
	Root(t)
	_, err := os.Stat("/dev/fuse")
	Require(t, err == nil, "no /dev/fuse")
	losetup := Command(t, "losetup")
	mnt := t.TempDir()
	root := &fs.Inode{}
	mount.DirectMount, mount.AllowOther, mount.FsName = true, true, "iomatrix-test"
	server, err := fs.Mount(mnt, root, &fs.Options{
		MountOptions: mount,
		OnAdd: func(ctx context.Context) {
			root.AddChild("disk.img", root.NewPersistentInode(ctx, file, fs.StableAttr{Mode: syscall.S_IFREG}), true)
		},
	})
	if err != nil {
		Require(t, false, "cannot mount FUSE: "+err.Error())
	}
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			// A loop device still held (a test that failed with the
			// device open) keeps the file busy: detached, the mount
			// leaves the tree now and goes when the loop device lets
			// go of the file, not with the machine's next reboot.
			t.Logf("unmount FUSE at %s: %v; detached: %v", mnt, err, unix.Unmount(mnt, unix.MNT_DETACH))
		}
	})
	args := append([]string{"-f", "--show"}, losetupArgs...)
	out, err := exec.Command(losetup, append(args, filepath.Join(mnt, "disk.img"))...).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v %s", err, out)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { detach(t, losetup, dev) })
	return dev
}

// DelayDisk is a DiskFile whose every read is answered a set delay after
// the daemon receives it: a device of known service time. Go's timers
// wake a sleeper up to a millisecond late, and the kernel's tens of
// microseconds, more on a loaded machine, so Read sleeps until Spin
// before its deadline and spins the rest on the
// clock; it records the delay it actually served (Served) and counts its
// reads, so that a test can tell each I/O reached it (no page cache
// between) and how exact the delay was.
type DelayDisk struct {
	DiskFile
	// Spin is how long before the deadline Read stops sleeping (default
	// 300µs).
	Spin time.Duration

	delay       atomic.Int64 // ns
	next, reads atomic.Int64
	served      []int64 // ns, of the first len(served) reads since Reset
}

var _ = (fs.NodeReader)((*DelayDisk)(nil))

// NewDelayDisk is a DelayDisk of size bytes answering after delay, that
// records the served delays of its first keep reads.
func NewDelayDisk(size int64, delay time.Duration, keep int) *DelayDisk {
	d := &DelayDisk{DiskFile: DiskFile{Size: size}, served: make([]int64, keep)}
	d.delay.Store(int64(delay))
	return d
}

func (d *DelayDisk) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	served := hold(time.Now(), time.Duration(d.delay.Load()), d.Spin)
	if i := d.next.Add(1) - 1; i < int64(len(d.served)) {
		d.served[i] = int64(served)
	}
	d.reads.Add(1)
	end := min(off+int64(len(dest)), d.Size)
	return fuse.ReadResultData(dest[:max(end-off, 0)]), 0
}

// Reset forgets the reads so far and sets the delay of the next; no read
// may be in flight.
func (d *DelayDisk) Reset(delay time.Duration) {
	d.delay.Store(int64(delay))
	d.next.Store(0)
	d.reads.Store(0)
}

// Reads is the number of reads answered since the last Reset.
func (d *DelayDisk) Reads() int64 { return d.reads.Load() }

// Served is the delays served to the reads since the last Reset (as
// many as were kept), in nanoseconds.
func (d *DelayDisk) Served() []int64 {
	return d.served[:min(d.reads.Load(), int64(len(d.served)))]
}

// defaultSpin is how long before its deadline a device stops sleeping
// and spins, unless told otherwise.
const defaultSpin = 300 * time.Microsecond

// hold returns delay after start, and how long after start it returned:
// it sleeps in the kernel until spin (0: defaultSpin) before the
// deadline and spins the rest on the clock.
func hold(start time.Time, delay, spin time.Duration) (served time.Duration) {
	if spin == 0 {
		spin = defaultSpin
	}
	if delay > spin {
		// The thread sleeps in the kernel (an hrtimer): the runtime's
		// timers wake a goroutine up to a millisecond late (measured
		// here: time.Sleep(700µs) 390µs late at the median, nanosleep
		// 74µs).
		ts := unix.NsecToTimespec(int64(delay - spin))
		for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		}
	}
	deadline := start.Add(delay)
	for time.Now().Before(deadline) {
	}
	return time.Since(start)
}
