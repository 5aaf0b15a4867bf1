package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/testenv"
)

// What the tests of the command wait for instead of sleeping: a run's
// capped child at work in its cgroup, a process reading its target, a
// cap cleanup that left nothing.

// cgroupProcs are the processes in the cgroups the run of pid made.
func cgroupProcs(c cgroup.Controller, pid int) []string {
	var all []string
	for _, g := range leftovers(c, pid) {
		b, _ := os.ReadFile(filepath.Join(g, "cgroup.procs"))
		all = append(all, strings.Fields(string(b))...)
	}
	return all
}

// countedIO matches a request counted in v1's blkio.throttle.io_serviced
// ("8:0 Read 12") or v2's io.stat ("8:0 rbytes=… rios=12 …").
var countedIO = regexp.MustCompile(`(?m)^\S+ (Read|Write) [1-9]|\b[rw]ios=[1-9]`)

// cgroupCounted tells whether the cgroups the run of pid made counted a
// request.
func cgroupCounted(c cgroup.Controller, pid int) bool {
	for _, g := range leftovers(c, pid) {
		for _, f := range []string{"blkio.throttle.io_serviced", "io.stat"} {
			if b, err := os.ReadFile(filepath.Join(g, f)); err == nil && countedIO.Match(b) {
				return true
			}
		}
	}
	return false
}

// waitCappedIO waits until the run of pid measures under its cap: its
// child is in the run's cgroup, which has counted its requests.
func waitCappedIO(t *testing.T, c cgroup.Controller, pid int) {
	t.Helper()
	testenv.Until(t, 30*time.Second, fmt.Sprintf("the capped child of %d doing I/O in its cgroup", pid), func() bool {
		return len(cgroupProcs(c, pid)) > 0 && cgroupCounted(c, pid)
	})
}

// cleanedUp runs cap cleanup until the cgroups the run of pid made are
// gone: a killed run's child leaves its cgroup only when it notices, and
// cleanup removes only empty groups.
func cleanedUp(t *testing.T, c cgroup.Controller, pid int) {
	t.Helper()
	testenv.WaitFor(t, 10*time.Second, "cap cleanup removing what the run left", func() error {
		if r := runIomatrix(t, iomatrixCmd(t, "cap", "cleanup")); r.code != 0 {
			t.Fatalf("cap cleanup: exit %d: %s", r.code, r.stderr)
		}
		if l := leftovers(c, pid); len(l) > 0 {
			return fmt.Errorf("left %v", l)
		}
		return nil
	})
}

// openDirect tells whether the process pid holds path open for direct
// I/O, as a run holds its target once it measures (the checks before
// open it without O_DIRECT, or not at all).
func openDirect(pid int, path string) bool {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err != nil || link != path {
			continue
		}
		info, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(fd)), "fdinfo", filepath.Base(fd)))
		for _, l := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(l, "flags:"); ok {
				if flags, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64); err == nil && flags&unix.O_DIRECT != 0 {
					return true
				}
			}
		}
	}
	return false
}

// waitMeasuring waits until the uncapped run of pid holds its target
// open for direct I/O: from then on, what happens to the target happens
// to the measurement.
func waitMeasuring(t *testing.T, pid int, target string) {
	t.Helper()
	testenv.Until(t, 30*time.Second, fmt.Sprintf("process %d opening %s for direct I/O", pid, target), func() bool { return openDirect(pid, target) })
}

// liveInGroup are the processes of process group pgid that have not
// exited (zombies, which wait for a parent to reap them, left out).
func liveInGroup(pgid int) []int {
	var live []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone since the glob
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces and parentheses.
		_, rest, _ := strings.Cut(string(b), ") ")
		fs := strings.Fields(rest)
		if len(fs) < 3 || fs[0] == "Z" || fs[0] == "X" || fs[2] != strconv.Itoa(pgid) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		live = append(live, pid)
	}
	return live
}
