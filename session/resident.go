package session

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// lockProgram faults in every file-backed page of this process — the
// executable and any shared library — and locks it in memory, so that no
// later page fault reads it from a device. The capped child calls it
// before it joins the cgroup: otherwise, on a disk that holds both the
// binary and the target, the kernel charges the cgroup with the child's
// own page faults (one request per cold run of the release binary, a
// hundred for a large test binary), which are not iomatrix's I/O.
//
// Locking needs CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK; without
// them the pages are still faulted in (MADV_POPULATE_READ), but may be
// evicted later: the error says so and the caller tells the user.
func lockProgram(sys sysfs.FS) (locked int64, err error) {
	maps, err := sys.SelfMaps()
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, m := range maps {
		if !m.FileBacked() || strings.HasPrefix(m.Perms, "---") {
			continue
		}
		n := m.End - m.Start
		if _, _, errno := unix.Syscall(unix.SYS_MLOCK, uintptr(m.Start), uintptr(n), 0); errno == 0 {
			locked += int64(n)
			continue
		} else if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("mlock %s: %w", m.Path, errno))
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(m.Start), uintptr(n), unix.MADV_POPULATE_READ); errno != 0 && len(errs) == 1 {
			errs = append(errs, fmt.Errorf("fault in %s: %w", m.Path, errno))
		}
	}
	switch len(errs) {
	case 0:
		return locked, nil
	case 1:
		return locked, errs[0]
	}
	return locked, fmt.Errorf("%w; %w", errs[0], errs[1])
}
