package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// CheckSavable refuses an output file that could not be saved, before
// any I/O, instead of finding out after the first pattern or the whole
// run ("" is no file, and fine). WriteBytesAtomic writes a temporary file
// beside path and renames it over path, so the directory must take new
// files (checkDir). An existing path must be a regular file that may be
// written: the rename would replace a device, a pipe or a read-only file
// even so (a device node replaced by a plain file, for every program on
// the host), which a shell redirect would not do.
func CheckSavable(path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("directory %s does not exist", dir)
	}
	if fi, err := os.Stat(path); err == nil { // a link is judged by its file
		switch {
		case fi.IsDir():
			return fmt.Errorf("%s is a directory", path)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file (%s): iomatrix replaces its output files whole", path, fileKind(fi.Mode()))
		}
		if err := unix.Access(path, unix.W_OK); err != nil {
			return fmt.Errorf("%s cannot be replaced: %w", path, err)
		}
	}
	return checkDir(dir)
}

// CheckDirSavable refuses, before any I/O, a directory that files are to
// be saved in when it could not take them: an existing one must take new
// files, and a missing one is made (os.MkdirAll) in the nearest directory
// above it that exists, which must take new files ("" is none, and
// fine).
func CheckDirSavable(dir string) error {
	if dir == "" {
		return nil
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s is not a directory", d)
		case err == nil:
			return checkDir(d)
		case !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) || d == filepath.Dir(d):
			return fmt.Errorf("directory %s: %w", dir, err)
		}
	}
}

// checkDir refuses a directory that cannot take new files: unix.Access
// reports missing permission and a read-only mount (EROFS), but root
// passes it on the kernel's own file systems, where no file can be made
// (sysfs, procfs, cgroupfs: the rename fails after the run).
func checkDir(dir string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("cannot create files in directory %s: %w", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil {
		if name, ok := kernelFS[int64(st.Type)]; ok {
			return fmt.Errorf("cannot create files in directory %s: it is on %s, where only the kernel makes files", dir, name)
		}
	}
	return nil
}

// kernelFS are the file systems that only the kernel makes files in,
// by their statfs magic number.
var kernelFS = map[int64]string{
	unix.SYSFS_MAGIC: "sysfs", unix.PROC_SUPER_MAGIC: "procfs", unix.CGROUP_SUPER_MAGIC: "cgroupfs",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2", unix.DEBUGFS_MAGIC: "debugfs", unix.TRACEFS_MAGIC: "tracefs",
	unix.SECURITYFS_MAGIC: "securityfs", unix.BPF_FS_MAGIC: "bpffs", unix.PSTOREFS_MAGIC: "pstore",
	unix.EFIVARFS_MAGIC: "efivarfs", unix.DEVPTS_SUPER_MAGIC: "devpts",
}

// fileKind names what a path that is no regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a plain file"
}
