package cgroup

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// ErrNoBlockDevice means the target's filesystem has no single block
// device a cap could apply to.
var ErrNoBlockDevice = errors.New("no single block device to cap")

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
		return dev, "", fmt.Errorf("%s: %w: it is on %s (device %s), which has no block device of its own", path, ErrNoBlockDevice, kind, dev)
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
	switch t {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	case unix.NFS_SUPER_MAGIC:
		return "NFS"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs (possibly several devices)"
	case unix.FUSE_SUPER_MAGIC:
		return "a FUSE filesystem"
	}
	return fmt.Sprintf("a filesystem of type 0x%x", t)
}
