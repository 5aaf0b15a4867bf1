// Package testenv gates tests on what the machine offers. On a developer
// laptop a missing capability skips the test; under CI=true it fails it, so
// that CI, which has all of them, never hides a regression behind a skip.
//
// Every gate also marks an integration test: `go test -short` skips it
// (CI included), so the short tier runs unit tests, parsers, fixtures and
// fakes only.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// CI reports whether skips must become failures.
func CI() bool { return os.Getenv("CI") == "true" }

// Require skips (or, in CI, fails) the test when ok is false. Under -short
// it skips the test whatever ok is: a test that needs something of the
// machine is an integration test.
func Require(t testing.TB, ok bool, why string) {
	t.Helper()
	Integration(t)
	Need(t, ok, why)
}

// Need skips (or, in CI, fails) the test when ok is false, and runs it
// under -short too: for what every Linux machine has (/proc, a tmpfs at
// /dev/shm, a block device under the temp dir) and a unit test reads
// without root. Require is Need for an integration test.
func Need(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if CI() {
		t.Fatalf("CI=true, but %s", why)
	}
	t.Skip(why)
}

// InGuest is the device a guest test named in the environment variable
// env when it runs this test inside its guest (a disk with poll queues,
// an NVMe generic device: what this project's hosts lack). Anywhere
// else the test is not this suite's to run: runner, the guest test,
// runs it where the device exists (and fails under CI=true when it
// cannot boot its guest), so it is skipped here, CI or not.
func InGuest(t testing.TB, env, runner string) string {
	t.Helper()
	dev := os.Getenv(env)
	if dev == "" {
		t.Skip("run inside the cgroup v2 guest by " + runner + ", which sets " + env)
	}
	return dev
}

// Integration marks a test that does real I/O, starts processes or needs
// devices: -short skips it.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
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

// DirectIODir returns a fresh directory on a disk-backed filesystem where
// O_DIRECT works, or skips (fails in CI).
func DirectIODir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	ok := fs.Type != unix.TMPFS_MAGIC && fs.Type != unix.RAMFS_MAGIC
	if ok {
		fd, err := unix.Open(filepath.Join(dir, "probe"), unix.O_CREAT|unix.O_RDWR|unix.O_DIRECT, 0o644)
		ok = err == nil
		if ok {
			unix.Close(fd)
		}
	}
	Require(t, ok, "temp dir "+dir+" does not support O_DIRECT on a disk")
	return dir
}

// DirectIOLoopDevice is a LoopDevice whose file is in a DirectIODir. It
// needs root.
func DirectIOLoopDevice(t testing.TB, size int64) (dev, backing string) {
	t.Helper()
	Root(t)
	return LoopDevice(t, DirectIODir(t), size)
}

// LoopDevice attaches a zero-filled file of size bytes, created in dir, as
// a direct-I/O loop device, detached when the test ends. It needs root and
// losetup.
func LoopDevice(t testing.TB, dir string, size int64) (dev, backing string) {
	t.Helper()
	backing = filepath.Join(dir, "loop.img")
	return attachLoop(t, backing, size), backing
}

// RAMDisk attaches a direct-I/O loop device of size bytes over a file in
// /dev/shm, detached and removed when the test ends: a block device of its
// own, in memory. A test that asserts a rate measures there, with a cap far
// below what the device gives, so that nothing else loading the machine's
// disk (the suite's other packages, the go command's own builds and links,
// a user's fio) can take the device from under the cap: only a starved CPU
// could, and the caps the tests use leave it a wide margin.
func RAMDisk(t testing.TB, size int64) string {
	t.Helper()
	Root(t)
	shm, err := os.MkdirTemp("/dev/shm", "iomatrix-test-")
	Require(t, err == nil, "no /dev/shm to back a RAM disk")
	t.Cleanup(func() { os.RemoveAll(shm) })
	dev, _ := LoopDevice(t, shm, size)
	return dev
}

// RAMDir mounts a fresh ext4 filesystem made on a RAMDisk of size bytes and
// returns its mount point, unmounted when the test ends: files for the
// tests that assert a rate on a file target. The filesystem is initialized
// whole by mkfs, so that no lazy initialization writes to the device while
// a test measures it.
func RAMDir(t testing.TB, size int64) string {
	t.Helper()
	return MountExt4(t, RAMDisk(t, size), "-E", "lazy_itable_init=0,lazy_journal_init=0")
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
	t.Cleanup(func() { detach(t, losetup, dev) })
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
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", mnt, err)
		}
	})
	return mnt
}

// CgroupV2 returns the mount point of this machine's real cgroup v2
// hierarchy when it offers controller (the tests of the v2 tree
// mechanics use hugetlb in io's place), and holds a lock on it until the
// test ends: tests of several packages change that tree (controllers
// enabled for children, cgroups made and removed) and must not overlap.
// When the test ends, controller is disabled again in the root's
// subtree_control if it was not enabled before, so the tree is left as
// found.
func CgroupV2(t testing.TB, controller string) string {
	t.Helper()
	Root(t)
	mnt := ""
	for _, dir := range []string{filepath.Join(sysfs.CgroupRoot, "unified"), sysfs.CgroupRoot} {
		var fs unix.Statfs_t
		if unix.Statfs(dir, &fs) == nil && fs.Type == unix.CGROUP2_SUPER_MAGIC {
			mnt = dir
			break
		}
	}
	Require(t, mnt != "", "no cgroup v2 hierarchy mounted")
	data, err := os.ReadFile(filepath.Join(mnt, "cgroup.controllers"))
	Require(t, err == nil && strings.Contains(" "+strings.TrimSpace(string(data))+" ", " "+controller+" "),
		"the cgroup v2 hierarchy at "+mnt+" offers no "+controller+" controller")
	LockCgroupV2(t)
	sub := filepath.Join(mnt, "cgroup.subtree_control")
	before, _ := os.ReadFile(sub)
	// Registered after the lock's release, so it runs before it.
	t.Cleanup(func() {
		if !strings.Contains(" "+strings.TrimSpace(string(before))+" ", " "+controller+" ") {
			if err := os.WriteFile(sub, []byte("-"+controller), 0); err != nil {
				t.Errorf("leave %s as found: disable %s: %v", mnt, controller, err)
			}
		}
	})
	return mnt
}

// LockCgroupV2 holds, until the test ends, the lock that the tests which
// change the machine's cgroup v2 tree take (CgroupV2): a test that
// compares the tree before and after something holds it too, so that no
// other package's test changes the tree in between.
func LockCgroupV2(t testing.TB) {
	t.Helper()
	// Read-only: flock needs no more, and a user who is not root can open
	// the file root made.
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "iomatrix-cgroup-v2-tests.lock"), os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		lock.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() }) // releases the lock
}

// BlkioGroup makes a v1 blkio cgroup for a test, named after name and the
// test process, and removes it when the test ends (once the processes in
// it are gone, waiting up to 10 s for them). It needs root and the v1
// blkio hierarchy at /sys/fs/cgroup/blkio.
func BlkioGroup(t testing.TB, name string) string {
	t.Helper()
	Root(t)
	base := "/sys/fs/cgroup/blkio"
	_, err := os.Stat(filepath.Join(base, "blkio.throttle.io_serviced"))
	Require(t, err == nil, "no v1 blkio hierarchy at "+base)
	dir := filepath.Join(base, fmt.Sprintf("iomatrix-test-%s-%d", name, os.Getpid()))
	Must(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if !Poll(ctx, func() bool { err := os.Remove(dir); return err == nil || os.IsNotExist(err) }) {
			t.Errorf("cgroup %s left behind", dir)
		}
	})
	return dir
}

// RemoveCgroup removes a cgroup directory tree made by a test, moving any
// process still in it to the hierarchy's root (mnt) first.
func RemoveCgroup(t testing.TB, mnt, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			RemoveCgroup(t, mnt, filepath.Join(dir, e.Name()))
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
		for _, pid := range strings.Fields(string(data)) {
			_ = os.WriteFile(filepath.Join(mnt, "cgroup.procs"), []byte(pid), 0) // the removal below says if it failed
		}
	}
	for try := 0; try < 50; try++ {
		err := os.Remove(dir)
		if err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("leave the cgroup tree as found: %s cannot be removed", dir)
}

// detach detaches a loop device a test attached, saying so when it cannot
// (a device left attached is found by the next test that counts them).
func detach(t testing.TB, losetup, dev string) {
	if out, err := exec.Command(losetup, "-d", dev).CombinedOutput(); err != nil {
		t.Logf("detach %s: %v %s", dev, err, strings.TrimSpace(string(out)))
	}
}

// Must fails the test on a setup step's error: a test whose setup failed
// silently could pass without testing anything.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
