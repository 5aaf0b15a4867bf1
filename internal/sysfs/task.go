package sysfs

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Task is a thread of a process, as /proc/PID/task lists it.
type Task struct {
	TID  int
	Comm string // its command name (task/TID/comm)
}

// Tasks lists the threads of process pid (0: this process) with their
// names. A thread that ends while they are listed is left out.
func (fs FS) Tasks(pid int) ([]Task, error) {
	dir := filepath.Join(fs.proc, procDir(pid), "task")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	tasks := make([]Task, 0, len(entries))
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(dir, e.Name(), "comm"))
		if err != nil {
			continue
		}
		tasks = append(tasks, Task{TID: tid, Comm: strings.TrimSpace(string(comm))})
	}
	return tasks, nil
}

// TaskCPU is the CPU time thread tid of process pid (0: this process)
// has used: its schedstat's where the kernel keeps one, else its stat's.
func (fs FS) TaskCPU(pid, tid int) (time.Duration, error) {
	dir := filepath.Join(fs.proc, procDir(pid), "task", strconv.Itoa(tid))
	if data, err := os.ReadFile(filepath.Join(dir, "schedstat")); err == nil {
		if d, err := ParseSchedstat(data); err == nil {
			return d, nil
		}
	}
	return readFile(filepath.Join(dir, "stat"), ParseStatCPU)
}

// ParseSchedstat is the CPU time in a schedstat file (/proc/PID/schedstat
// or a task's): its first field, in nanoseconds.
func ParseSchedstat(data []byte) (time.Duration, error) {
	return schedstatField(data, 0, "CPU time")
}

// schedstatField is field i of a schedstat file, what it holds, in
// nanoseconds. It allocates nothing but its error.
func schedstatField(data []byte, i int, what string) (time.Duration, error) {
	n := 0
	for f := range fieldsOf(data) {
		if n == i {
			ns, ok := parseCount(f)
			if !ok {
				return 0, fmt.Errorf("schedstat: %s %q is not a count of nanoseconds", what, f)
			}
			return time.Duration(ns), nil
		}
		n++
	}
	return 0, fmt.Errorf("schedstat has %d fields, want at least %d", n, i+1)
}

// fieldsOf yields the fields of data separated by spaces, tabs or
// newlines, allocating nothing.
func fieldsOf(data []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		start := -1
		for i := 0; i <= len(data); i++ {
			if i == len(data) || data[i] == ' ' || data[i] == '\t' || data[i] == '\n' {
				if start >= 0 && !yield(data[start:i]) {
					return
				}
				start = -1
			} else if start < 0 {
				start = i
			}
		}
	}
}

// parseCount parses a decimal count that fits an int64.
func parseCount(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = 10*v + int64(c-'0')
	}
	return v, true
}

// ParseStatCPU is the CPU time in a stat file (/proc/PID/stat or a
// task's, proc(5)): utime plus stime, in clock ticks of 10 ms (USER_HZ
// is 100). A tick count that does not parse counts as none.
func ParseStatCPU(data []byte) (time.Duration, error) {
	// The command may hold spaces: the fields after it follow the last ')'.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("stat has %d fields after the command, want at least 13", len(f))
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond, nil
}

// procDir is the name of process pid's directory in procfs ("self" for 0).
func procDir(pid int) string {
	if pid == 0 {
		return "self"
	}
	return strconv.Itoa(pid)
}
