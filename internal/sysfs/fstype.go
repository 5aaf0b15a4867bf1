package sysfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// filesystemNames names the statfs(2) f_type magics a user is likely to
// meet, by the name mount(8) shows, so messages and results say "proc"
// rather than 0x9fa0. ext2, ext3 and ext4 share one magic.
var filesystemNames = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.F2FS_SUPER_MAGIC:      "f2fs",
	unix.BCACHEFS_SUPER_MAGIC:  "bcachefs",
	unix.EXFAT_SUPER_MAGIC:     "exfat",
	unix.MSDOS_SUPER_MAGIC:     "vfat",
	unix.NILFS_SUPER_MAGIC:     "nilfs2",
	unix.REISERFS_SUPER_MAGIC:  "reiserfs",
	unix.OCFS2_SUPER_MAGIC:     "ocfs2",
	unix.ZONEFS_MAGIC:          "zonefs",
	unix.SQUASHFS_MAGIC:        "squashfs",
	unix.ISOFS_SUPER_MAGIC:     "iso9660",
	unix.UDF_SUPER_MAGIC:       "udf",
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.RAMFS_MAGIC:           "ramfs",
	unix.HUGETLBFS_MAGIC:       "hugetlbfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlay",
	unix.FUSE_SUPER_MAGIC:      "fuse",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.CIFS_SUPER_MAGIC:      "cifs",
	unix.SMB2_SUPER_MAGIC:      "smb3",
	unix.CEPH_SUPER_MAGIC:      "ceph",
	unix.V9FS_MAGIC:            "9p",
	unix.AFS_FS_MAGIC:          "afs",
	unix.PROC_SUPER_MAGIC:      "proc",
	unix.SYSFS_MAGIC:           "sysfs",
	unix.CGROUP_SUPER_MAGIC:    "cgroup",
	unix.CGROUP2_SUPER_MAGIC:   "cgroup2",
	unix.DEVPTS_SUPER_MAGIC:    "devpts",
	unix.DEBUGFS_MAGIC:         "debugfs",
	unix.TRACEFS_MAGIC:         "tracefs",
	unix.SECURITYFS_MAGIC:      "securityfs",
	unix.BPF_FS_MAGIC:          "bpf",
	unix.PSTOREFS_MAGIC:        "pstore",
	unix.EFIVARFS_MAGIC:        "efivarfs",
	unix.AUTOFS_SUPER_MAGIC:    "autofs",
}

// FilesystemName names the filesystem of a statfs(2) f_type, or gives the
// magic in hex ("0x1234abcd") when the table does not know it.
func FilesystemName(magic int64) string {
	if name, ok := filesystemNames[magic]; ok {
		return name
	}
	return fmt.Sprintf("0x%x", magic)
}
