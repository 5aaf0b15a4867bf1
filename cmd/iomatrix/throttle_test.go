package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// A COMMAND that cannot be run gets the shell's status, 127 or 126, and
// one line; nothing is created before it is found.
func TestThrottleCommandNotFound(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		command string
		code    int
		line    string
	}{
		{"no-such-command-here", 127, "iomatrix: no-such-command-here: command not found"},
		{filepath.Join(dir, "absent"), 127, "iomatrix: " + filepath.Join(dir, "absent") + ": command not found"},
		{dir, 126, "iomatrix: " + dir + ": cannot execute: is a directory"},
		{plain, 126, "iomatrix: " + plain + ": cannot execute: permission denied"},
	}
	for _, c := range cases {
		r := runInProcess("throttle", "--cap", "riops=100", "--", c.command, "arg")
		if r.code != c.code || strings.TrimRight(r.stderr, "\n") != c.line || r.stdout != "" {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", c.command, r.code, r.stderr, c.code, c.line)
		}
	}
}

// Without --device, throttle caps the current directory's device: when
// that cannot be capped, the message says so instead of blaming a
// --device that was never given.
func TestThrottleDefaultDeviceOnTmpfs(t *testing.T) {
	var fs unix.Statfs_t
	err := unix.Statfs("/dev/shm", &fs)
	testenv.Need(t, err == nil && fs.Type == unix.TMPFS_MAGIC, "/dev/shm is not a tmpfs here")
	t.Chdir("/dev/shm")
	r := runInProcess("throttle", "--cap", "riops=100", "--", "true")
	checkRefused(t, r, "the current directory /dev/shm (default of --device) is on tmpfs")
	if strings.HasPrefix(r.stderr, "iomatrix: --device:") {
		t.Errorf("stderr %q blames --device", r.stderr)
	}
}
