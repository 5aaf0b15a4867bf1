package sysfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CgroupEntry is one line of /proc/PID/cgroup: the cgroup of the process
// in one hierarchy.
type CgroupEntry struct {
	ID          int      // hierarchy ID; 0 for the unified (v2) hierarchy
	Controllers []string // v1 controllers of the hierarchy; empty for v2
	Path        string   // relative to the hierarchy's root as this process's cgroup namespace sees it
}

// ParseProcCgroup parses the format of /proc/PID/cgroup (cgroups(7)):
// "hierarchy-ID:controller-list:cgroup-path" per line.
func ParseProcCgroup(r io.Reader) ([]CgroupEntry, error) {
	return parseLines(r, "cgroup", func(line string) (CgroupEntry, error) {
		id, rest, ok := strings.Cut(line, ":")
		ctrls, path, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 {
			return CgroupEntry{}, errors.New(`want "ID:controllers:path"`)
		}
		n, err := strconv.Atoi(id)
		if err != nil || n < 0 {
			return CgroupEntry{}, fmt.Errorf("hierarchy ID %q", id)
		}
		if !strings.HasPrefix(path, "/") {
			return CgroupEntry{}, fmt.Errorf("path %q is not absolute", path)
		}
		e := CgroupEntry{ID: n, Path: path}
		if ctrls != "" {
			e.Controllers = strings.Split(ctrls, ",")
		}
		return e, nil
	})
}

// Cgroups returns the cgroups of process pid (0: this process).
func (fs FS) Cgroups(pid int) ([]CgroupEntry, error) {
	return parseFile(filepath.Join(fs.proc, procDir(pid), "cgroup"), ParseProcCgroup)
}

// ProcessName is the command name of process pid (/proc/PID/comm), "" when
// it cannot be read.
func (fs FS) ProcessName(pid int) string {
	data, err := os.ReadFile(filepath.Join(fs.proc, strconv.Itoa(pid), "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// ProcessExists tells whether process pid exists (a zombie counts).
func (fs FS) ProcessExists(pid int) bool {
	_, err := os.Stat(filepath.Join(fs.proc, strconv.Itoa(pid)))
	return err == nil
}
