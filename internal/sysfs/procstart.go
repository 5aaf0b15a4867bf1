package sysfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcStart is where a process comes from: its parent, and when it
// started.
type ProcStart struct {
	PPID int
	// Age is how long the process has run, when it was read: the
	// machine's uptime less the process's start time since boot, both to
	// the clock tick (10 ms).
	Age time.Duration
}

// ParseStatStart reads a stat file's (/proc/PID/stat, proc(5)) parent
// and start time since boot, in clock ticks of 10 ms (USER_HZ is 100).
func ParseStatStart(data []byte) (ppid int, start time.Duration, err error) {
	// The command may hold spaces and parentheses: the fields after it
	// follow the last ')'.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("stat has %d fields after the command, want at least 20", len(f))
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil || ppid < 0 {
		return 0, 0, fmt.Errorf("parent %q is not a process id", f[1])
	}
	ticks, err := strconv.ParseUint(f[19], 10, 63)
	if err != nil {
		return 0, 0, fmt.Errorf("start time %q is not a tick count", f[19])
	}
	return ppid, time.Duration(ticks) * 10 * time.Millisecond, nil
}

// ParseUptime reads /proc/uptime's first figure: seconds since boot,
// to the hundredth.
func ParseUptime(data []byte) (time.Duration, error) {
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, errors.New("uptime is empty")
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil || secs < 0 {
		return 0, fmt.Errorf("uptime %q is not a number of seconds", f[0])
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// ProcessStart reads process pid's parent and age.
func (fs FS) ProcessStart(pid int) (ProcStart, error) {
	type parsed struct {
		ppid  int
		start time.Duration
	}
	st, err := readFile(filepath.Join(fs.proc, procDir(pid), "stat"), func(b []byte) (parsed, error) {
		ppid, start, err := ParseStatStart(b)
		return parsed{ppid, start}, err
	})
	if err != nil {
		return ProcStart{}, err
	}
	up, err := readFile(filepath.Join(fs.proc, "uptime"), ParseUptime)
	if err != nil {
		return ProcStart{}, err
	}
	return ProcStart{PPID: st.ppid, Age: up - st.start}, nil
}

// ProcessCwd is process pid's working directory (reading it takes the
// right to trace the process: root, or its owner).
func (fs FS) ProcessCwd(pid int) (string, error) {
	return os.Readlink(filepath.Join(fs.proc, procDir(pid), "cwd"))
}
