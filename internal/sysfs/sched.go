package sysfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ParseRunDelay is the run-queue delay in a schedstat file
// (/proc/PID/schedstat or a task's): its second field, in nanoseconds.
func ParseRunDelay(data []byte) (time.Duration, error) {
	return schedstatField(data, 1, "run delay")
}

// MachineTimes is how the machine's CPUs have spent their time so far,
// summed over them: /proc/stat's first line (proc(5)).
type MachineTimes struct {
	// Busy is user, nice, system, irq, softirq and steal time (guest time
	// is part of user and nice). Steal is time the hypervisor gave this
	// machine's CPUs to others: busy for whoever waited for them.
	Busy time.Duration
	// Steal is the steal time alone, part of Busy.
	Steal time.Duration
	// Idle is idle and iowait time.
	Idle time.Duration
}

// Total is all the CPUs' time so far, busy or idle.
func (m MachineTimes) Total() time.Duration { return m.Busy + m.Idle }

// ParseMachineTimes reads a /proc/stat file's first line, whose times are
// clock ticks of 10 ms (USER_HZ is 100). It allocates nothing but its
// error.
func ParseMachineTimes(data []byte) (MachineTimes, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	var busy, steal, idle int64
	n := 0
	for f := range fieldsOf(data) {
		if n == 0 {
			if string(f) != "cpu" {
				return MachineTimes{}, fmt.Errorf("stat: first line starts with %q, want cpu", f)
			}
			n++
			continue
		}
		ticks, ok := parseCount(f)
		if !ok {
			return MachineTimes{}, fmt.Errorf("stat: cpu field %d %q is not a count of ticks", n, f)
		}
		switch n {
		case 1, 2, 3, 6, 7: // user nice system irq softirq
			busy += ticks
		case 8: // steal
			busy += ticks
			steal += ticks
		case 4, 5: // idle iowait
			idle += ticks
		}
		n++
	}
	if n < 9 {
		return MachineTimes{}, fmt.Errorf("stat: the cpu line has %d times, want at least 8", max(n-1, 0))
	}
	tick := 10 * time.Millisecond
	return MachineTimes{Busy: time.Duration(busy) * tick, Steal: time.Duration(steal) * tick, Idle: time.Duration(idle) * tick}, nil
}

// ParseMachineBusy is the CPU time the machine's CPUs have spent busy, in
// a /proc/stat file: MachineTimes.Busy. It allocates nothing but its
// error.
func ParseMachineBusy(data []byte) (time.Duration, error) {
	m, err := ParseMachineTimes(data)
	return m.Busy, err
}

// ParseChildren parses a task's children file (/proc/PID/task/TID/children):
// process ids separated by spaces.
func ParseChildren(data []byte) ([]int, error) { return appendChildren(nil, data) }

// appendChildren appends the pids of a children file to dst, allocating
// nothing where dst has room.
func appendChildren(dst []int, data []byte) ([]int, error) {
	for f := range fieldsOf(data) {
		pid, ok := parseCount(f)
		if !ok || pid <= 0 {
			return nil, fmt.Errorf("children: %q is not a process id", f)
		}
		dst = append(dst, int(pid))
	}
	return dst, nil
}

// FUSEDevice is the device a FUSE daemon reads its requests from.
const FUSEDevice = "/dev/fuse"

// FUSEDaemons lists the processes that hold FUSEDevice open: the servers
// of the FUSE mounts. Which mount each serves cannot be told from procfs,
// so all are listed. A process that ends, or whose descriptors may not be
// read, while they are listed is left out.
func (fs FS) FUSEDaemons() ([]int, error) {
	entries, err := os.ReadDir(fs.proc)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if fs.holds(pid, FUSEDevice) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// holds tells whether process pid has a descriptor open on path.
func (fs FS) holds(pid int, path string) bool {
	dir := filepath.Join(fs.proc, strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && link == path {
			return true
		}
	}
	return false
}

// LoopBackingFile is the file behind loop device name ("loop0"), as the
// kernel names it; ErrNotExist when name is not a bound loop device.
func (fs FS) LoopBackingFile(name string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(fs.sys, "block", name, "loop", "backing_file"))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s is not a bound loop device: %w", name, os.ErrNotExist)
	}
	if err != nil {
		return "", err
	}
	// The path is printed raw, so only the final newline is not part of it.
	return strings.TrimSuffix(string(raw), "\n"), nil
}
