// Package target decides what a run may do to a path, and opens it: a
// file it lays out (and marks as its own), a block device it guards, or
// an NVMe namespace reached through its generic device; each with the
// facts of its disk.
//
// NewPlan inspects a path and decides, touching nothing, what will happen
// (Plan: create, lay out again, reuse, read in place, or a device), so
// that every refusal (an Err* of ErrBadTarget) comes before any I/O.
// Plan.Open lays a file out when it must and opens the target O_DIRECT
// (Target), which the engine, package iotest, runs patterns on.
package target

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// Errors about targets. Each wraps ErrBadTarget: the run cannot start, and
// nothing was created or changed.
var (
	ErrBadTarget   = errors.New("unusable target")
	ErrNoDirectIO  = fmt.Errorf("%w: no direct I/O", ErrBadTarget)
	ErrNoSpace     = fmt.Errorf("%w: not enough free space", ErrBadTarget)
	ErrNotOurs     = fmt.Errorf("%w: file was not laid out by iomatrix", ErrBadTarget)
	ErrDestructive = fmt.Errorf("%w: writes would destroy the device's data", ErrBadTarget)
	ErrInUse       = fmt.Errorf("%w: device in use", ErrBadTarget)
	ErrNoParent    = fmt.Errorf("%w: parent directory missing", ErrBadTarget)
	ErrNotTarget   = fmt.Errorf("%w: not a regular file, block device or NVMe generic device", ErrBadTarget)
)

// DefaultSize of a file target.
const DefaultSize = 16 << 30

// Options say what a run will do to its target.
type Options struct {
	// Size of a file target; for a block device a non-zero Size limits I/O
	// to the first Size bytes.
	Size int64
	// Writes is set when any pattern of the run writes.
	Writes bool
	// Force allows iomatrix to overwrite a file it did not lay out.
	Force bool
	// AllowDestructive allows writes to a block device (or an NVMe
	// namespace through its generic device).
	AllowDestructive bool
	// Sys is where the facts of the target's disk are read (required).
	Sys sysfs.FS
	// Shared opens a device without O_EXCL: for a worker process whose
	// parent already holds the exclusive open that guards the device.
	Shared bool
}

// Layout actions decided by NewPlan.
const (
	ActionCreate   = "create"   // new file, laid out before the first I/O
	ActionRelayout = "relayout" // our file, wrong size or unfinished layout
	ActionReuse    = "reuse"    // our file, laid out at this size
	ActionReadOnly = "read-existing"
	ActionDevice   = "device"
)

// Plan is what will happen to a target, decided without touching it.
type Plan struct {
	Path   string
	Action string
	Size   int64 // bytes addressed by the patterns
	Align  int64 // direct-I/O offset alignment: block sizes must be multiples
	Info   results.TargetInfo
	opts   Options
	dev    sysfs.DevNum // disk whose /proc/diskstats describe the I/O
	hasDev bool
	// ns addresses the namespace of a passthrough target; devNote says
	// why its disk's figures are not read.
	ns      *Namespace
	devNote string
}

// NewPlan inspects path and decides what a run may do with it. It
// creates, opens for writing or changes nothing, so every refusal comes
// before any I/O.
func NewPlan(path string, o Options) (*Plan, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := &Plan{Path: abs, opts: o, Info: results.TargetInfo{Path: abs}}
	var st unix.Stat_t
	err = unix.Stat(abs, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return p, p.planNewFile(o.Sys)
	case errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("%s: %w: a part of its path is a file, not a directory", path, ErrNotTarget)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return p, p.planExistingFile(o.Sys, &st)
	case unix.S_IFBLK:
		return p, p.planDevice(o.Sys, &st)
	case unix.S_IFCHR:
		return p, p.planPassthrough(o.Sys, &st)
	case unix.S_IFDIR:
		return nil, fmt.Errorf("%s: %w: it is a directory (give a file path inside it, e.g. %s)", path, ErrNotTarget, filepath.Join(path, "iomatrix.dat"))
	default:
		return nil, fmt.Errorf("%s: %w", path, ErrNotTarget)
	}
}

func (p *Plan) planNewFile(sys sysfs.FS) error {
	if p.opts.Size <= 0 {
		p.opts.Size = DefaultSize
	}
	dir := filepath.Dir(p.Path)
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: %w: %s does not exist", p.Path, ErrNoParent, dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("%s: %w: cannot create files in %s: %w", p.Path, ErrBadTarget, dir, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	if err := checkFSType(p.Path, &fs); err != nil {
		return err
	}
	var dst unix.Stat_t
	if err := unix.Stat(dir, &dst); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	p.describeBacking(sys, sysfs.DevNumFromDev(dst.Dev), filesystemName(&fs))
	p.Align = p.guessAlign()
	if err := p.checkSize(); err != nil {
		return err
	}
	if free := int64(fs.Bavail) * int64(fs.Bsize); free < p.opts.Size {
		return fmt.Errorf("%s: %w: %w", p.Path, ErrNoSpace, mentionf("%s %s needs %s, %s has %s free", "size",
			units.FormatSize(p.opts.Size), units.FormatSize(p.opts.Size), dir, units.FormatSize(free)))
	}
	p.Action = ActionCreate
	p.Size = p.opts.Size
	p.Info.Kind = "file"
	p.Info.SizeBytes = p.Size
	return nil
}

func (p *Plan) planExistingFile(sys sysfs.FS, st *unix.Stat_t) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(p.Path, &fs); err != nil {
		return fmt.Errorf("statfs %s: %w", p.Path, err)
	}
	if err := checkFSType(p.Path, &fs); err != nil {
		return err
	}
	p.describeBacking(sys, sysfs.DevNumFromDev(st.Dev), filesystemName(&fs))
	p.Info.Kind = "file"
	p.Align = p.guessAlign()
	if a := statxDIOAlign(p.Path); a > 0 {
		p.Align = a
	}
	m, ours := readMarker(p.Path)
	sizeSet := p.opts.Size > 0
	switch {
	case sizeSet:
	case ours && m.size > 0:
		p.opts.Size = m.size // finish the layout that was interrupted
	default:
		p.opts.Size = DefaultSize
	}
	switch {
	case ours && m.complete && m.size == st.Size && (!sizeSet || st.Size == p.opts.Size):
		p.Action = ActionReuse
		p.Size = st.Size
	case ours || p.opts.Force:
		if err := p.checkSize(); err != nil {
			return err
		}
		// Space already allocated to the file is reused by the layout.
		need := p.opts.Size - st.Blocks*512
		if free := int64(fs.Bavail) * int64(fs.Bsize); need > free {
			return fmt.Errorf("%s: %w: %w", p.Path, ErrNoSpace, mentionf("%s %s needs %s more, %s free", "size",
				units.FormatSize(p.opts.Size), units.FormatSize(need), units.FormatSize(free)))
		}
		p.Action = ActionRelayout
		p.Size = p.opts.Size
	case !p.opts.Writes && !sizeSet && st.Size > 0:
		// Reading a file in place never changes it: measure it as it is.
		p.Action = ActionReadOnly
		p.Size = st.Size / p.Align * p.Align
	default:
		return fmt.Errorf("%s: %w; %w", p.Path, ErrNotOurs, mentionf("iomatrix will not overwrite it (pass %s to lay it out anyway, destroying its contents)", "force"))
	}
	p.Info.SizeBytes = p.Size
	return nil
}

func (p *Plan) planDevice(sys sysfs.FS, st *unix.Stat_t) error {
	dev := sysfs.DevNumFromDev(uint64(st.Rdev))
	p.Info.Kind = "block"
	p.Action = ActionDevice
	f, err := os.OpenFile(p.Path, os.O_RDONLY, 0)
	if err != nil {
		return err // names the operation and the path already
	}
	defer f.Close()
	size, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
	if err != nil {
		return fmt.Errorf("%s: size of block device: %w", p.Path, err)
	}
	lbs, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKSSZGET)
	if err != nil {
		return fmt.Errorf("%s: logical block size: %w", p.Path, err)
	}
	p.Align = int64(lbs)
	if a := statxDIOAlign(p.Path); a > p.Align {
		p.Align = a
	}
	p.Size = int64(size)
	if p.opts.Size > 0 && p.opts.Size < p.Size {
		p.Size = p.opts.Size / p.Align * p.Align
	}
	p.Info.SizeBytes = p.Size
	p.describeBacking(sys, dev, "")
	if p.Info.LogicalBlockSize == 0 {
		p.Info.LogicalBlockSize = lbs
	}
	if p.opts.Writes {
		if !p.opts.AllowDestructive {
			return fmt.Errorf("%s: %w: %w", p.Path, ErrDestructive, mentionf("a write pattern on a block device overwrites its data; pass %s if that is intended", "allow-destructive"))
		}
		reasons, err := sys.InUse(dev)
		if err != nil {
			return fmt.Errorf("%s: check whether the device is in use: %w", p.Path, err)
		}
		if len(reasons) > 0 {
			return fmt.Errorf("%s: %w: %s; %w", p.Path, ErrInUse, strings.Join(reasons, ", "), mentionf("refusing to write even with %s", "allow-destructive"))
		}
	}
	return nil
}

// planPassthrough plans a namespace reached through its generic
// character device: its size, block size and id are the block device's
// of the same namespace, and writes are guarded as the block device's
// would be.
func (p *Plan) planPassthrough(sys sysfs.FS, st *unix.Stat_t) error {
	g, err := sys.NVMeGeneric(sysfs.DevNumFromDev(uint64(st.Rdev)))
	if errors.Is(err, sysfs.ErrNotNVMeGeneric) {
		return fmt.Errorf("%s: %w: a character device, but not an NVMe generic device (ngXnY)", p.Path, ErrNotTarget)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p.Path, err)
	}
	disk := g.Disk
	nsid := g.NSID
	if nsid == 0 {
		if nsid, err = namespaceID(p.Path); err != nil {
			return err
		}
	}
	maxBytes := g.MaxHWSectorsKB * 1024
	if disk.MaxSegments > 0 {
		// A page of iomatrix's buffers is a segment of its own unless
		// it happens to follow the one before in physical memory: a
		// command of more pages than the disk takes segments may or may
		// not fit (512 KiB did on QEMU's drive, of 127 segments, where
		// 1 MiB, past max_hw_sectors_kb, always fails).
		maxBytes = min(maxBytes, disk.MaxSegments*pageSize)
	}
	if p.ns, err = newNamespace(nsid, disk.LogicalBlockSize, maxBytes); err != nil {
		return fmt.Errorf("%s: %w: %w", p.Path, ErrBadTarget, err)
	}
	p.Action = ActionDevice
	p.Align = int64(disk.LogicalBlockSize)
	p.Size = disk.SizeBytes / p.Align * p.Align
	if p.opts.Size > 0 && p.opts.Size < p.Size {
		p.Size = p.opts.Size / p.Align * p.Align
	}
	// The disk is the namespace's block device; the commands bypass its
	// scheduler and are never split, so neither is recorded.
	p.Info = results.TargetInfo{Path: p.Path, Kind: KindPassthrough, Device: disk.Dev.String(), Disk: disk.Name,
		SizeBytes: p.Size, LogicalBlockSize: disk.LogicalBlockSize, Rotational: disk.Rotational, NSID: nsid}
	if g.PassthroughStats {
		p.dev, p.hasDev = disk.Disk, true
	} else {
		p.devNote = fmt.Sprintf("not counted: this kernel leaves NVMe passthrough commands out of /proc/diskstats (%s has no queue/iostats_passthrough)", disk.Name)
		if g.StatsAttr != "" {
			p.devNote = fmt.Sprintf("not counted: %s's queue/iostats_passthrough is %s, so the kernel leaves NVMe passthrough commands out of /proc/diskstats", disk.Name, g.StatsAttr)
		}
	}
	if p.opts.Writes {
		if !p.opts.AllowDestructive {
			return fmt.Errorf("%s: %w: %w", p.Path, ErrDestructive, mentionf("a write pattern on an NVMe namespace overwrites its data; pass %s if that is intended", "allow-destructive"))
		}
		reasons, err := sys.InUse(disk.Dev)
		if err != nil {
			return fmt.Errorf("%s: check whether %s is in use: %w", p.Path, disk.Name, err)
		}
		if len(reasons) > 0 {
			return fmt.Errorf("%s: %w: its block device %s: %s; %w", p.Path, ErrInUse, disk.Name, strings.Join(reasons, ", "), mentionf("refusing to write even with %s", "allow-destructive"))
		}
	}
	return nil
}

// describeBacking fills the target's device facts. Files on filesystems
// without a single block device (tmpfs, overlay, NFS) simply have none.
func (p *Plan) describeBacking(sys sysfs.FS, dev sysfs.DevNum, fsName string) {
	p.Info.Device = dev.String()
	p.Info.Filesystem = fsName
	bd, err := sys.BlockDevice(dev)
	if err != nil {
		return
	}
	p.Info.Disk = bd.DiskName
	p.Info.LogicalBlockSize = bd.LogicalBlockSize
	p.Info.Rotational = bd.Rotational
	p.Info.Scheduler = bd.Scheduler
	p.Info.MaxSectorsKB, p.Info.MaxSegments = bd.MaxSectorsKB, bd.MaxSegments
	p.dev, p.hasDev = bd.Disk, true
}

// CheckPoll refuses, before any I/O, a target whose disk cannot poll for
// completions: a polled ring (IOPOLL) needs the disk's queue to have poll
// queues (queue/io_poll 1), which an NVMe drive has when its driver was
// given some (nvme.poll_queues=N on the kernel's command line, or the
// nvme module's poll_queues parameter). Elsewhere every I/O would fail.
// Its error is a *pattern.FieldError of the field poll.
func (p *Plan) CheckPoll() error { return checkPoll(p.opts.Sys, p.Info) }

// CheckPoll is the open target's Plan.CheckPoll.
func (t *Target) CheckPoll() error { return checkPoll(t.sys, t.Info) }

func checkPoll(sys sysfs.FS, info results.TargetInfo) error {
	if info.Disk == "" {
		return pattern.Fieldf("poll", "%s is on no block device that could poll: polled completions need a disk with poll queues", info.Path)
	}
	poll, file, err := sys.QueueAttr(info.Disk, "io_poll")
	if err != nil {
		return pattern.Fieldf("poll", "%s: cannot read %s (%v): polled completions need a disk with poll queues", info.Path, file, err)
	}
	if poll != "1" {
		return pattern.Fieldf("poll", "%s's disk %s cannot poll for completions (%s is %s): polled completions need poll queues, which an NVMe drive has when its driver is given some (nvme.poll_queues=N on the kernel's command line, or the nvme module's poll_queues parameter)",
			info.Path, info.Disk, file, poll)
	}
	return nil
}

func (p *Plan) guessAlign() int64 {
	if p.Info.LogicalBlockSize > 0 {
		return int64(p.Info.LogicalBlockSize)
	}
	return pattern.MinBlockSize
}

func (p *Plan) checkSize() error {
	if p.opts.Size%p.Align != 0 {
		return pattern.Fieldf("size", "%d bytes is not a multiple of the direct-I/O alignment %d", p.opts.Size, p.Align)
	}
	return nil
}

// checkFSType refuses filesystems where O_DIRECT does not reach a device.
// Recent kernels accept O_DIRECT on tmpfs, but the data still lives in the
// page cache, so a run there would measure memory, not a disk.
func checkFSType(path string, fs *unix.Statfs_t) error {
	switch int64(fs.Type) {
	case unix.TMPFS_MAGIC, unix.RAMFS_MAGIC:
		return fmt.Errorf("%s: %w: %s keeps data in memory, so O_DIRECT cannot reach a disk; use a path on a disk-backed filesystem or a block device", path, ErrNoDirectIO, filesystemName(fs))
	case unix.PROC_SUPER_MAGIC, unix.SYSFS_MAGIC, unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC, unix.DEVPTS_SUPER_MAGIC:
		return fmt.Errorf("%s: %w: %s is a virtual filesystem", path, ErrNotTarget, filesystemName(fs))
	}
	return nil
}

func filesystemName(fs *unix.Statfs_t) string {
	return sysfs.FilesystemName(int64(fs.Type))
}

// statxDIOAlign asks the kernel for the file's O_DIRECT offset alignment
// (Linux 6.1+); 0 when unknown.
func statxDIOAlign(path string) int64 {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_DIOALIGN, &stx); err != nil {
		return 0
	}
	if stx.Mask&unix.STATX_DIOALIGN == 0 {
		return 0
	}
	return int64(stx.Dio_offset_align)
}

// The layout marker records that iomatrix created a file and finished
// writing it. It lives in an extended attribute, or in a hidden file beside
// the target where the filesystem has no user xattrs.
const markerXattr = "user.iomatrix.layout"

type marker struct {
	size     int64
	complete bool
}

func (m marker) String() string {
	state := "incomplete"
	if m.complete {
		state = "complete"
	}
	return fmt.Sprintf("iomatrix-layout v1 size=%d state=%s", m.size, state)
}

func parseMarker(s string) (marker, bool) {
	f := strings.Fields(strings.TrimSpace(s))
	if len(f) != 4 || f[0] != "iomatrix-layout" || f[1] != "v1" {
		return marker{}, false
	}
	var m marker
	sz, ok := strings.CutPrefix(f[2], "size=")
	if !ok {
		return marker{}, false
	}
	n, err := strconv.ParseInt(sz, 10, 64)
	if err != nil || n < 0 {
		return marker{}, false
	}
	m.size = n
	switch f[3] {
	case "state=complete":
		m.complete = true
	case "state=incomplete":
	default:
		return marker{}, false
	}
	return m, true
}

func sidecarPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".iomatrix")
}

func readMarker(path string) (marker, bool) {
	buf := make([]byte, 128)
	n, err := unix.Getxattr(path, markerXattr, buf)
	if err == nil {
		return parseMarker(string(buf[:n]))
	}
	data, err := os.ReadFile(sidecarPath(path))
	if err != nil {
		return marker{}, false
	}
	return parseMarker(string(data))
}

func writeMarker(fd int, path string, m marker) error {
	err := unix.Fsetxattr(fd, markerXattr, []byte(m.String()), 0)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOTSUP) && !errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("mark %s: %w", path, err)
	}
	if err := os.WriteFile(sidecarPath(path), []byte(m.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("mark %s: %w", path, err)
	}
	return nil
}

// Target is an open O_DIRECT target, ready for iotest.Run.
type Target struct {
	Path   string
	Size   int64
	Align  int64
	Info   results.TargetInfo
	fd     int
	write  bool
	dev    sysfs.DevNum
	hasDev bool
	sys    sysfs.FS
	// A passthrough target's namespace (nil for any other), why its
	// disk's figures are not read, and the exclusive open of its block
	// device that guards a written namespace (-1: none).
	ns      *Namespace
	devNote string
	guard   int
}

// Fd is the open target's file descriptor, which the engine issues its
// I/O on.
func (t *Target) Fd() int { return t.fd }

// Writable tells whether the target was opened for writing.
func (t *Target) Writable() bool { return t.write }

// Sys is where the facts of the target's disk, and of this process, are
// read.
func (t *Target) Sys() sysfs.FS { return t.sys }

// ServedByFUSE tells whether a FUSE daemon answers the target's I/O: a
// file on a FUSE mount, or a loop device over one. Its threads then wait
// for a CPU on the I/O's path as the engine's own do.
func (t *Target) ServedByFUSE() bool {
	if t.Info.Kind == "file" {
		return t.Info.Filesystem == "fuse"
	}
	if !strings.HasPrefix(t.Info.Disk, "loop") {
		return false
	}
	backing, err := t.sys.LoopBackingFile(t.Info.Disk)
	var fs unix.Statfs_t
	return err == nil && unix.Statfs(backing, &fs) == nil && filesystemName(&fs) == "fuse"
}

// Namespace addresses a passthrough target's NVMe namespace; nil for
// any other target.
func (t *Target) Namespace() *Namespace { return t.ns }

// Uncounted says why the disk's figures (DiskStats) do not count the
// target's I/O; "" when they do, or when there is no disk.
func (t *Target) Uncounted() string { return t.devNote }

// DiskStats reads the counters of the target's disk now; false when the
// target has no disk whose counters hold its I/O, or they cannot be read.
func (t *Target) DiskStats() (sysfs.DiskStats, bool) {
	if !t.hasDev {
		return sysfs.DiskStats{}, false
	}
	d, err := t.sys.DiskStats(t.dev)
	return d, err == nil
}

// LayoutProgress reports bytes laid out so far.
type LayoutProgress func(done, total int64)

// Open lays the file out when the plan says so and opens the target with
// O_DIRECT. It never falls back to buffered I/O.
func (p *Plan) Open(ctx context.Context, progress LayoutProgress) (*Target, error) {
	switch p.Action {
	case ActionCreate, ActionRelayout:
		if err := p.layout(ctx, progress); err != nil {
			return nil, err
		}
	}
	if p.ns != nil {
		return p.openPassthrough()
	}
	flags := unix.O_RDONLY
	if p.opts.Writes {
		flags = unix.O_RDWR
		if p.Action == ActionDevice && !p.opts.Shared {
			// The kernel refuses an exclusive open of a device that is
			// mounted or held: a last guard against racing a mount.
			flags |= unix.O_EXCL
		}
	}
	fd, err := unix.Open(p.Path, flags|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	// udev probes a device for a moment after it was written and closed:
	// an exclusive open that meets such a transient holder retries briefly
	// before calling the device held.
	for try := 0; errors.Is(err, unix.EBUSY) && flags&unix.O_EXCL != 0 && try < 20; try++ {
		time.Sleep(100 * time.Millisecond)
		fd, err = unix.Open(p.Path, flags|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			return nil, fmt.Errorf("%s: %w: the filesystem rejects O_DIRECT", p.Path, ErrNoDirectIO)
		}
		if errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("%s: %w: exclusive open failed (mounted or held)", p.Path, ErrInUse)
		}
		return nil, fmt.Errorf("open %s: %w", p.Path, err)
	}
	t := p.target(fd)
	if a := statxDIOAlign(p.Path); a > t.Align {
		t.Align = a
	}
	t.Info.DirectIOAlign = t.Align
	return t, nil
}

// target is the open target of the plan, on fd.
func (p *Plan) target(fd int) *Target {
	return &Target{Path: p.Path, Size: p.Size, Align: p.Align, Info: p.Info, fd: fd, write: p.opts.Writes, dev: p.dev, hasDev: p.hasDev,
		sys: p.opts.Sys, ns: p.ns, devNote: p.devNote, guard: -1}
}

// openPassthrough opens a generic NVMe device, without O_DIRECT: its
// commands never pass through a cache. A namespace to be written is
// guarded as a block device is: its block device is held open
// exclusively (no I/O goes through it), which the kernel refuses while
// it is mounted or held, and which keeps it from being mounted meanwhile.
func (p *Plan) openPassthrough() (*Target, error) {
	guard := -1
	if p.opts.Writes && !p.opts.Shared {
		node := "/dev/" + p.Info.Disk
		fd, err := unix.Open(node, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
		for try := 0; errors.Is(err, unix.EBUSY) && try < 20; try++ {
			time.Sleep(100 * time.Millisecond) // udev's probe after a write (see Open)
			fd, err = unix.Open(node, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
		}
		switch {
		case errors.Is(err, unix.EBUSY):
			return nil, fmt.Errorf("%s: %w: exclusive open of its block device %s failed (mounted or held)", p.Path, ErrInUse, node)
		case err == nil:
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && sysfs.DevNumFromDev(uint64(st.Rdev)).String() == p.Info.Device {
				guard = fd
			} else {
				unix.Close(fd) // another device by that name: no guard, the plan's checks stand
			}
		}
		// A block device without a node in /dev: the plan's checks stand.
	}
	flags := unix.O_RDONLY
	if p.opts.Writes {
		flags = unix.O_RDWR
	}
	fd, err := unix.Open(p.Path, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		if guard >= 0 {
			unix.Close(guard)
		}
		return nil, fmt.Errorf("open %s: %w", p.Path, err)
	}
	t := p.target(fd)
	t.guard = guard
	t.Info.DirectIOAlign = t.Align
	return t, nil
}

// Close releases the target.
func (t *Target) Close() error {
	if t.guard >= 0 {
		unix.Close(t.guard)
		t.guard = -1
	}
	if t.fd < 0 {
		return nil
	}
	err := unix.Close(t.fd)
	t.fd = -1
	return err
}

const layoutChunk = 4 << 20

// layout writes every block of the file with incompressible data, as fio
// does: allocate first (to fail early on a full disk), then really write,
// because reads of unwritten extents never reach the device.
func (p *Plan) layout(ctx context.Context, progress LayoutProgress) (err error) {
	created := p.Action == ActionCreate
	flags := unix.O_WRONLY | unix.O_DIRECT | unix.O_CLOEXEC
	if created {
		flags |= unix.O_CREAT | unix.O_EXCL
	}
	fd, err := unix.Open(p.Path, flags, 0o644)
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("%s: %w: the filesystem rejects O_DIRECT", p.Path, ErrNoDirectIO)
		}
		return fmt.Errorf("create %s: %w", p.Path, err)
	}
	defer func() {
		unix.Close(fd)
		if err != nil && created {
			// Never leave a half-written file behind that looks usable.
			os.Remove(p.Path)
			os.Remove(sidecarPath(p.Path))
		}
	}()
	if err := p.allocate(fd); err != nil {
		return err
	}
	if err := p.writeRandom(ctx, fd, progress); err != nil {
		return err
	}
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("sync %s: %w", p.Path, err)
	}
	if err := writeMarker(fd, p.Path, marker{size: p.Size, complete: true}); err != nil {
		return err
	}
	return unix.Fsync(fd)
}

// allocate gives the file all of its blocks. The marker goes first, saying
// incomplete, so that a layout cut short anywhere later is taken up again at
// the same size.
func (p *Plan) allocate(fd int) error {
	size := p.Size
	if err := writeMarker(fd, p.Path, marker{size: size}); err != nil {
		return err
	}
	if err := unix.Ftruncate(fd, size); err != nil {
		return fmt.Errorf("size %s to %s: %w", p.Path, units.FormatSize(size), err)
	}
	if err := unix.Fallocate(fd, 0, 0, size); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("%s: %w: allocating %s: %w", p.Path, ErrNoSpace, units.FormatSize(size), err)
		}
		return fmt.Errorf("allocate %s: %w", p.Path, err)
	}
	return nil
}

// writeRandom writes every block of the file once, in chunks of fresh
// random data, reporting progress after each.
func (p *Plan) writeRandom(ctx context.Context, fd int, progress LayoutProgress) error {
	size := p.Size
	mem, err := unix.Mmap(-1, 0, 2*layoutChunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("layout buffer: %w", err)
	}
	defer func() { _ = unix.Munmap(mem) }() // our own mapping: cannot fail
	var seed [32]byte
	for i := 0; i < len(seed); i += 8 {
		binary.LittleEndian.PutUint64(seed[i:], rand.Uint64())
	}
	src := rand.NewChaCha8(seed)
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("layout of %s interrupted: %w", p.Path, err)
		}
		n := min(int64(layoutChunk), size-off)
		buf := mem[:n]
		_, _ = src.Read(buf) // fresh random data: no two blocks alike
		w, err := unix.Pwrite(fd, buf, off)
		for errors.Is(err, unix.EINTR) {
			w, err = unix.Pwrite(fd, buf, off) // a signal came first
		}
		if err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return fmt.Errorf("%s: %w during layout at %s: %w", p.Path, ErrNoSpace, units.FormatSize(off), err)
			}
			return fmt.Errorf("layout %s at offset %d: %w", p.Path, off, err)
		}
		if w != int(n) {
			return fmt.Errorf("layout %s at offset %d: short write %d of %d", p.Path, off, w, n)
		}
		off += n
		if progress != nil {
			progress(off, size)
		}
	}
	return nil
}

// fsIocFiemap is FS_IOC_FIEMAP (include/uapi/linux/fs.h).
const fsIocFiemap = 0xC020660B

// fiemapHeader is struct fiemap without its extent array.
type fiemapHeader struct {
	start, length        uint64
	flags, mappedExtents uint32
	extentCount, _       uint32
}

// LoadMetadata reads into memory what the filesystem needs to find the
// blocks of a file target: its whole extent map, through FIEMAP with no
// room for extents (the kernel walks every extent to count them). Direct
// I/O then finds each block without reading metadata from the device, so
// a process that joins a capped cgroup afterwards issues only its own
// requests there. Block devices need nothing; a filesystem without FIEMAP
// is left as it is (its metadata is read on demand, and cap verify counts
// what it costs).
func (t *Target) LoadMetadata() error {
	if t.Info.Kind != "file" {
		return nil
	}
	h := fiemapHeader{length: ^uint64(0)}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(t.fd), fsIocFiemap, uintptr(unsafe.Pointer(&h)))
	switch errno {
	case 0, unix.EOPNOTSUPP, unix.ENOTTY:
		return nil
	}
	return fmt.Errorf("read the extent map of %s: %w", t.Path, errno)
}

// mentionf is a message that names the option (the first verb of format)
// as the reader's front end spells it (fault.Mention): the target's
// refusals tell what would let them pass.
func mentionf(format, option string, args ...any) *fault.Mention {
	return fault.NewMention(func(n fault.Namer) string {
		return fmt.Sprintf(format, append([]any{n(option)}, args...)...)
	})
}
