package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// ErrNoBlockDevice means the target's filesystem has no single block
// device a cap could apply to.
var ErrNoBlockDevice = errors.New("no single block device to cap")

// NoBlockDeviceError is ErrNoBlockDevice for one path, with the filesystem
// it is on, so a caller can say why in its own terms.
type NoBlockDeviceError struct {
	Path       string
	Dev        sysfs.DevNum
	Filesystem string // "tmpfs", "overlay", or "a filesystem of type 0x..."
}

func (e *NoBlockDeviceError) Error() string {
	return fmt.Sprintf("%s: %v: it is on %s (device %s), which has no block device of its own", e.Path, ErrNoBlockDevice, e.Filesystem, e.Dev)
}

func (e *NoBlockDeviceError) Unwrap() error { return ErrNoBlockDevice }

// ResolveDevice finds the device a cap on path must name: for a file its
// filesystem's device, for a block device itself; a partition is replaced
// by its whole disk (the kernel refuses throttle rules on partitions with
// ENODEV), and notice says so.
func ResolveDevice(sys sysfs.FS, path string) (dev sysfs.DevNum, notice string, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return dev, "", fmt.Errorf("%s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		dev = sysfs.DevNumFromDev(st.Rdev)
	case unix.S_IFCHR:
		if g, err := sys.NVMeGeneric(sysfs.DevNumFromDev(st.Rdev)); err == nil {
			return g.Disk.Dev, "", &PassthroughError{Path: path, Disk: g.Disk.Name}
		}
		dev = sysfs.DevNumFromDev(st.Dev) // as for a file: the filesystem it is on
	default:
		dev = sysfs.DevNumFromDev(st.Dev)
	}
	bd, err := sys.BlockDevice(dev)
	if err != nil {
		var fs unix.Statfs_t
		kind := "this filesystem"
		if unix.Statfs(path, &fs) == nil {
			kind = fsKind(fs.Type)
		}
		return dev, "", &NoBlockDeviceError{Path: path, Dev: dev, Filesystem: kind}
	}
	if bd.Partition {
		where := "is on partition " + bd.Name
		if st.Mode&unix.S_IFMT == unix.S_IFBLK {
			where = "is a partition"
		}
		return bd.Disk, fmt.Sprintf("%s %s: capping its disk %s (%s), since the kernel throttles whole disks", path, where, bd.DiskName, bd.Disk), nil
	}
	return bd.Dev, "", nil
}

// TargetPath is where the device of a target is found (ResolveDevice):
// the path itself, or for a file that does not exist yet its directory,
// on whose device it will live.
func TargetPath(path string) string {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return filepath.Dir(path)
	}
	return path
}

// ErrPassthrough means the path is an NVMe generic device, whose
// commands no cgroup I/O limit reaches.
var ErrPassthrough = errors.New("NVMe passthrough bypasses cgroup I/O limits")

// PassthroughError is ErrPassthrough for one path: an NVMe generic
// device (ngXnY), whose commands go to the driver without passing
// through the block layer, where blk-throttle (io.max, blkio.throttle.*)
// and iocost act. Disk is the namespace's block device, which can be
// capped.
type PassthroughError struct {
	Path, Disk string
}

func (e *PassthroughError) Error() string {
	return fmt.Sprintf("%s is an NVMe passthrough device: its commands bypass the block layer, whose throttle enforces cgroup I/O limits, so no cap applies to them (a cap on /dev/%s limits I/O through the block device only)", e.Path, e.Disk)
}

func (e *PassthroughError) Unwrap() error { return ErrPassthrough }

func fsKind(t int64) string {
	name := sysfs.FilesystemName(t)
	switch {
	case t == unix.BTRFS_SUPER_MAGIC:
		return name + " (possibly several devices)"
	case strings.HasPrefix(name, "0x"):
		return "a filesystem of type " + name
	}
	return name
}
