package cgroup

import (
	"errors"
	"fmt"
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
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		dev = sysfs.DevNumFromDev(st.Rdev)
	} else {
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
