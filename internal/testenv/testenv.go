// Package testenv gates tests on what the machine offers. On a developer
// laptop a missing capability skips the test; under CI=true it fails it, so
// that CI, which has all of them, never hides a regression behind a skip.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	backing = filepath.Join(dir, "loop.img")
	return attachLoop(t, backing, size), backing
}

// LoopPartition attaches a zero-filled file of size bytes, created in dir,
// as a direct-I/O loop device that accepts partitions, and adds partition
// 1 over sectors [start, start+sectors) with BLKPG (util-linux addpart):
// no partition table is written or parsed, so this works on kernels built
// without partition-table support. Both are gone when the test ends.
func LoopPartition(t testing.TB, dir string, size, start, sectors int64) (disk, part, backing string) {
	t.Helper()
	backing = filepath.Join(dir, "disk.img")
	disk = attachLoop(t, backing, size, "--partscan")
	out, err := exec.Command(Command(t, "addpart"), disk, "1", strconv.FormatInt(start, 10), strconv.FormatInt(sectors, 10)).CombinedOutput()
	Require(t, err == nil, "addpart failed: "+strings.TrimSpace(string(out)))
	part = disk + "p1"
	// udev may create the node a moment after the ioctl returns.
	for i := 0; i < 50; i++ {
		if _, err := os.Stat(part); err == nil {
			return disk, part, backing
		}
		time.Sleep(20 * time.Millisecond)
	}
	Require(t, false, "no "+part+" after addpart")
	return
}

// attachLoop creates backing as a zero-filled file of size bytes and
// attaches it as a direct-I/O loop device (with extra losetup options),
// detached when the test ends.
func attachLoop(t testing.TB, backing string, size int64, extra ...string) (dev string) {
	t.Helper()
	Root(t)
	losetup := Command(t, "losetup")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(losetup, append([]string{"-f", "--show", "--direct-io=on"}, append(extra, backing)...)...).CombinedOutput()
	Require(t, err == nil, "losetup failed: "+strings.TrimSpace(string(out)))
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command(losetup, "-d", dev).Run() })
	return dev
}

// MountExt4 makes an ext4 filesystem on dev (extra mkfs.ext4 options
// first) and mounts it on a fresh temp dir, unmounted when the test ends.
func MountExt4(t testing.TB, dev string, mkfsArgs ...string) (mnt string) {
	t.Helper()
	Root(t)
	mkfs := Command(t, "mkfs.ext4")
	if out, err := exec.Command(mkfs, append(append([]string{"-q", "-F"}, mkfsArgs...), dev)...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v %s", dev, err, out)
	}
	mnt = t.TempDir()
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s: %v", dev, err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
}

// Integration skips the test under go test -short: it needs real devices
// or takes seconds.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
}
