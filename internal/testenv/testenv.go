// Package testenv gates tests on what the machine offers. On a developer
// laptop a missing capability skips the test; under CI=true it fails it, so
// that CI, which has all of them, never hides a regression behind a skip.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CI reports whether skips must become failures.
func CI() bool { return os.Getenv("CI") == "true" }

// Require skips (or, in CI, fails) the test when ok is false.
func Require(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if CI() {
		t.Fatalf("CI=true, but %s", why)
	}
	t.Skip(why)
}

// Root requires uid 0.
func Root(t testing.TB) {
	t.Helper()
	Require(t, os.Geteuid() == 0, "test needs root")
}

// Command requires an executable on PATH.
func Command(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	Require(t, err == nil, name+" not on PATH")
	return p
}

// LoopDevice attaches a zero-filled file of size bytes, created in dir, as
// a direct-I/O loop device, detached when the test ends. It needs root and
// losetup.
func LoopDevice(t testing.TB, dir string, size int64) (dev, backing string) {
	t.Helper()
	Root(t)
	losetup := Command(t, "losetup")
	backing = filepath.Join(dir, "loop.img")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(losetup, "-f", "--show", "--direct-io=on", backing).CombinedOutput()
	Require(t, err == nil, "losetup failed: "+strings.TrimSpace(string(out)))
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command(losetup, "-d", dev).Run() })
	return dev, backing
}
