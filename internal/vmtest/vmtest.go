// Package vmtest boots a small Linux guest under qemu, with a real
// cgroup v2 kernel, and runs test cases inside it: the io controller, its
// io.max and io.stat, the memory controller's writeback, on a kernel the
// host's hybrid cgroups cannot offer.
//
// A guest is data: its drives, its kernel command line and a list of
// cases, each a shell script. One boot runs every case in order. Each
// case's exit status, stdout and stderr come back framed on a serial port
// of their own (base64, one line per case), never scraped from the
// console; a kernel panic, a hung guest or a missing frame fails the test
// with the console's tail.
//
// The kernel is Debian's cloud kernel (NVMe, cgroup2, blk-throttle,
// iocost and memcg built in, no modules to load) and the guest's shell is
// busybox, both from Debian packages fetched with apt-get download and
// unpacked with dpkg -x into a cache, never installed. The guest's rules
// are a real host's: its init mounts /proc, /sys, /dev, /tmp and cgroup2
// at /sys/fs/cgroup, and configures nothing for iomatrix.
package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// Drive is an emulated NVMe drive backed by a sparse file. Drives[n] is
// $VMTEST_DRIVEn in the cases (matched by serial, vmtestN): usually
// /dev/nvme0n1 for the first and /dev/nvme1n1 for the second, but the
// kernel probes controllers in no fixed order.
type Drive struct {
	Size int64
	// Ext4 formats the drive on the host; the guest mounts it at
	// /mnt/nvmeXn1.
	Ext4 bool
	// Multipath puts the drive's controller in an NVMe subsystem of its
	// own, which the controller then says may have more than one: the
	// kernel's native multipath makes /dev/nvmeXn1 the namespace's head,
	// a bio-based device without blk-mq (its one path, nvmeXcYn1, is
	// hidden).
	Multipath bool
	// IOPS holds the drive to that many requests a second, reads and
	// writes together (qemu's throttling.iops-total), however fast the
	// emulation runs: a device of known capacity, so that what a case
	// measures of how the drive is shared does not move with the host's
	// load. 0: as fast as the emulation goes.
	IOPS int
}

// Case is one script run in the guest by busybox sh, with iomatrix at
// /bin/iomatrix.
type Case struct {
	Name   string
	Script string
}

// Result is what a case printed and how it ended.
type Result struct {
	Name           string
	Exit           int
	Stdout, Stderr string
	Elapsed        time.Duration // in the guest, by its own clock
}

// Guest is one boot.
type Guest struct {
	Drives []Drive
	// KernelArgs are added to the kernel's command line (for instance
	// cgroup_disable=memory).
	KernelArgs []string
	// Timeout bounds the whole boot; a guest still running then fails
	// the test. Default 3 minutes.
	Timeout time.Duration
	// Memory in MiB; default 2048.
	Memory int
	// Files are placed in the guest's root, by path, in a directory it
	// has (for instance "bin/guesttool", a StaticBuild): tools the cases
	// need that busybox lacks.
	Files map[string][]byte
	// Systemd boots Debian 12 with systemd as PID 1 instead of busybox
	// (systemd.go): the cases run as a service, under /bin/sh (dash).
	Systemd bool
}

// Boot runs the cases in one boot of g and returns their results, one per
// case in order. It skips the test where the guest cannot be made (no
// qemu, no apt-get), except under CI=true, where that fails it.
func Boot(t testing.TB, g Guest, cases []Case) []Result {
	t.Helper()
	testenv.Integration(t) // boots nothing with -short
	testenv.Root(t)
	if g.Systemd {
		return bootSystemd(t, g, cases)
	}
	a := assets(t)
	dir := t.TempDir()
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := writeInitramfs(initrd, a, g.Files, cases); err != nil {
		t.Fatalf("vmtest: initramfs: %v", err)
	}
	args := append(qemuArgs(a, g, dir), "-kernel", a.kernel, "-initrd", initrd,
		"-append", strings.Join(append([]string{"console=ttyS0", "panic=-1", "quiet"}, g.KernelArgs...), " "))
	args = append(args, drives(t, dir, g.Drives)...)
	results, _ := runGuest(t, a, g, dir, args, cases)
	return results
}

// qemuArgs are the machine's: emulated CPUs and memory, no display, the
// console and the frames on two serial ports, files in dir.
func qemuArgs(a *guestAssets, g Guest, dir string) []string {
	return []string{"-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2", "-m", strconv.Itoa(cmpOr(g.Memory, 2048)),
		"-display", "none", "-monitor", "none", "-no-reboot", "-nodefaults",
		"-serial", "file:" + filepath.Join(dir, "console"), "-serial", "file:" + filepath.Join(dir, "frames")}
}

// drives are the guest's NVMe drives' arguments, their sparse files in
// dir; serial vmtestN for Drives[N].
func drives(t testing.TB, dir string, ds []Drive) []string {
	t.Helper()
	var args []string
	for i, d := range ds {
		img := filepath.Join(dir, fmt.Sprintf("nvme%d.img", i))
		if err := os.WriteFile(img, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img, d.Size); err != nil {
			t.Fatal(err)
		}
		if d.Ext4 {
			if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", img).CombinedOutput(); err != nil {
				t.Fatalf("vmtest: mkfs.ext4: %v: %s", err, out)
			}
		}
		drive := fmt.Sprintf("file=%s,if=none,id=d%d,format=raw,cache=none,aio=io_uring", img, i)
		if d.IOPS > 0 {
			drive += fmt.Sprintf(",throttling.iops-total=%d", d.IOPS)
		}
		args = append(args, "-drive", drive)
		if d.Multipath {
			args = append(args, "-device", fmt.Sprintf("nvme-subsys,id=ss%d,nqn=vmtest%d", i, i),
				"-device", fmt.Sprintf("nvme,id=c%d,serial=vmtest%d,subsys=ss%d", i, i, i),
				"-device", fmt.Sprintf("nvme-ns,drive=d%d,bus=c%d,nsid=1", i, i))
			continue
		}
		args = append(args, "-device", fmt.Sprintf("nvme,drive=d%d,serial=vmtest%d", i, i))
	}
	return args
}

// runGuest runs qemu with args until the guest powers off, and returns
// the cases' results and the raw frames; anything short of every case
// reporting back fails the test with the console's tail.
func runGuest(t testing.TB, a *guestAssets, g Guest, dir string, args []string, cases []Case) ([]Result, []byte) {
	t.Helper()
	timeout := cmpOr(g.Timeout, 3*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, a.qemu, args...)
	var qemuOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &qemuOut, &qemuOut
	err := cmd.Run()
	console, _ := os.ReadFile(filepath.Join(dir, "console"))
	frames, _ := os.ReadFile(filepath.Join(dir, "frames"))
	t.Logf("vmtest: guest ran %v (%d cases)", time.Since(start).Round(100*time.Millisecond), len(cases))
	fail := func(format string, v ...any) {
		t.Helper()
		t.Fatalf("vmtest: %s\nqemu: %s\nconsole tail:\n%s", fmt.Sprintf(format, v...), bytes.TrimSpace(qemuOut.Bytes()), tail(console, 40))
	}
	if ctx.Err() != nil {
		fail("the guest was still running after %v", timeout)
	}
	if err != nil {
		fail("qemu: %v", err)
	}
	if bytes.Contains(console, []byte("Kernel panic")) {
		fail("the guest's kernel panicked")
	}
	results, kernel, err := parseFrames(frames)
	if err != nil {
		fail("%v", err)
	}
	if kernel != "" {
		t.Logf("vmtest: guest kernel %s", kernel)
	}
	if len(results) != len(cases) {
		fail("%d of %d cases reported back", len(results), len(cases))
	}
	for i, r := range results {
		if r.Name != cases[i].Name {
			fail("case %d reported as %q, want %q", i, r.Name, cases[i].Name)
		}
	}
	return results, frames
}

func cmpOr[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Frames on the second serial port, one line each, fields separated by
// spaces: "@@KERNEL release", "@@CASE name exit elapsed-ms stdout
// stderr" (the outputs base64, "-" when empty), "@@DONE".
func parseFrames(b []byte) (rs []Result, kernel string, err error) {
	done := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		f := strings.Fields(strings.TrimRight(sc.Text(), "\r"))
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "@@KERNEL":
			if len(f) > 1 {
				kernel = f[1]
			}
		case "@@CASE":
			if len(f) != 6 {
				return rs, kernel, fmt.Errorf("a malformed frame: %q", strings.Join(f, " "))
			}
			r := Result{Name: f[1]}
			if r.Exit, err = strconv.Atoi(f[2]); err != nil {
				return rs, kernel, fmt.Errorf("case %s: exit status %q", f[1], f[2])
			}
			ms, _ := strconv.Atoi(f[3])
			r.Elapsed = time.Duration(ms) * time.Millisecond
			for i, dst := range []*string{&r.Stdout, &r.Stderr} {
				if f[4+i] == "-" {
					continue
				}
				out, err := base64.StdEncoding.DecodeString(f[4+i])
				if err != nil {
					return rs, kernel, fmt.Errorf("case %s: %w", f[1], err)
				}
				*dst = string(out)
			}
			rs = append(rs, r)
		case "@@DONE":
			done = true
		}
	}
	if !done {
		return rs, kernel, errors.New("the guest never reported the end of its cases")
	}
	return rs, kernel, nil
}

// The guest's init: mounts, then each case with its output captured and
// framed on ttyS1, then power off.
const initScript = `#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t cgroup2 none /sys/fs/cgroup
` + driveNames + `exec 3>/dev/ttyS1
echo "@@KERNEL $(uname -r)" >&3
CASES=/cases OUT=/tmp
` + caseLoop + "poweroff -f\n"

// driveNames exports VMTEST_DRIVEn=/dev/nvmeXn1 for the guest's
// Drives[n], matched by serial (vmtestN): NVMe controllers are probed
// asynchronously, so a name is not known in advance. It mounts an ext4
// drive at /mnt/nvmeXn1. The busybox init and the systemd guest's runner
// share it.
const driveNames = `for s in /sys/block/nvme*n1; do
	[ -e "$s/device/serial" ] || continue
	serial=$(cat "$s/device/serial" | tr -d ' ')
	case $serial in vmtest[0-9]*) ;; *) continue ;; esac
	d=/dev/$(basename "$s")
	export VMTEST_DRIVE${serial#vmtest}=$d
	m=/mnt/$(basename "$s")
	mkdir -p $m
	mount -t ext4 $d $m 2>/dev/null || rmdir $m
done
`

// caseLoop runs each case of $CASES with its output captured in $OUT and
// frames it on fd 3, then @@DONE (see parseFrames): the part of the
// busybox init and the systemd guest's runner that must stay alike.
const caseLoop = `b64() { if [ -s "$1" ]; then base64 -w0 "$1"; else printf -; fi; }
for c in $CASES/*; do
	name=$(cat $c/name)
	t0=$(cut -d' ' -f1 /proc/uptime)
	sh $c/script >$OUT/case.out 2>$OUT/case.err </dev/null
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	ms=$(awk "BEGIN{printf \"%d\", ($t1-$t0)*1000}")
	echo "@@CASE $name $rc $ms $(b64 $OUT/case.out) $(b64 $OUT/case.err)" >&3
done
echo "@@DONE" >&3
sync
`

// writeInitramfs writes a newc cpio archive: busybox, iomatrix, the init
// and the cases. It is not compressed: gzip took 12 s a boot for the
// 90 MB archive in a test binary built with -race (CI's), and the
// emulated guest booted 2 s sooner without having to inflate it.
func writeInitramfs(path string, a *guestAssets, files map[string][]byte, cases []Case) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	cw := &cpioWriter{w: bw}
	for _, d := range []string{"bin", "proc", "sys", "dev", "tmp", "mnt", "cases", "etc"} {
		cw.dir(d)
	}
	busybox, err := os.ReadFile(a.busybox)
	if err != nil {
		return err
	}
	iomatrix, err := os.ReadFile(a.binary)
	if err != nil {
		return err
	}
	cw.file("bin/busybox", busybox, 0o755)
	cw.file("bin/iomatrix", iomatrix, 0o755)
	cw.file("init", []byte(initScript), 0o755)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasPrefix(name, "/") || strings.Contains(name, "..") || name == "init" || name == "bin/busybox" || name == "bin/iomatrix" {
			return fmt.Errorf("guest file %q: a path inside the guest's root that is not the harness's own", name)
		}
		cw.file(name, files[name], 0o755)
	}
	for i, c := range cases {
		if strings.ContainsAny(c.Name, " \t\n") || c.Name == "" {
			return fmt.Errorf("case name %q: one word", c.Name)
		}
		d := fmt.Sprintf("cases/%03d", i)
		cw.dir(d)
		cw.file(d+"/name", []byte(c.Name), 0o644)
		cw.file(d+"/script", []byte(c.Script), 0o755)
	}
	cw.trailer()
	if cw.err != nil {
		return cw.err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// guestAssets are the files a boot needs.
type guestAssets struct {
	qemu, kernel, busybox, binary string
}

var (
	assetsOnce sync.Once
	assetsVal  *guestAssets
	assetsErr  error
)

// assets finds qemu, fetches the kernel and busybox into the cache once,
// and builds (or takes) the static iomatrix.
func assets(t testing.TB) *guestAssets {
	t.Helper()
	assetsOnce.Do(func() { assetsVal, assetsErr = prepare() })
	var missing *missingError
	if errors.As(assetsErr, &missing) {
		testenv.Require(t, false, missing.Error())
	}
	if assetsErr != nil {
		t.Fatalf("vmtest: %v", assetsErr)
	}
	return assetsVal
}

// missingError: a tool the guest needs is not installed; a skip on a
// laptop, a failure in CI.
type missingError struct{ what string }

func (e *missingError) Error() string { return e.what }

// CacheDir holds the kernel and busybox between runs: $IOMATRIX_VMCACHE,
// or /var/cache/iomatrix-vmtest.
func CacheDir() string {
	if d := os.Getenv("IOMATRIX_VMCACHE"); d != "" {
		return d
	}
	return "/var/cache/iomatrix-vmtest"
}

func prepare() (*guestAssets, error) {
	a, err := fetch()
	if err != nil {
		return nil, err
	}
	if a.binary, err = staticBinary(); err != nil {
		return nil, err
	}
	return a, nil
}

// Prepare fills the cache as the first guest tests would: the kernel and
// busybox, and the systemd guest's root image. .ci/run runs it beside the
// lint, so that the suite finds them ready (the image takes 40-50 s of
// mmdebstrap on a fresh machine).
func Prepare() error {
	if _, err := fetch(); err != nil {
		return err
	}
	img, built, err := buildSystemdImage(CacheDir())
	if built != "" {
		fmt.Println("vmtest:", built)
	} else if err == nil {
		fmt.Println("vmtest: cached", img)
	}
	return err
}

// fetch finds qemu and the tools, and fetches the kernel and busybox into
// the cache once.
func fetch() (*guestAssets, error) {
	a := &guestAssets{}
	var err error
	if a.qemu, err = exec.LookPath("qemu-system-x86_64"); err != nil {
		return nil, &missingError{"qemu-system-x86_64 is not installed (Debian package qemu-system-x86)"}
	}
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, &missingError{tool + " is not installed"}
		}
	}
	cache := CacheDir()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	a.kernel = filepath.Join(cache, "vmlinuz")
	if _, err := os.Stat(a.kernel); err != nil {
		// The cloud kernel's metapackage names the versioned image.
		out, err := exec.Command("apt-cache", "depends", "linux-image-cloud-amd64").Output()
		if err != nil {
			return nil, fmt.Errorf("apt-cache depends linux-image-cloud-amd64: %w", err)
		}
		var pkg string
		for _, l := range strings.Split(string(out), "\n") {
			if p, ok := strings.CutPrefix(strings.TrimSpace(l), "Depends: "); ok && strings.HasPrefix(p, "linux-image-") {
				pkg = p
				break
			}
		}
		if pkg == "" {
			return nil, fmt.Errorf("no kernel image among linux-image-cloud-amd64's dependencies:\n%s", out)
		}
		if err := unpack(cache, pkg, "boot/vmlinuz-*", a.kernel); err != nil {
			return nil, err
		}
	}
	a.busybox = filepath.Join(cache, "busybox")
	if _, err := os.Stat(a.busybox); err != nil {
		if err := unpack(cache, "busybox-static", "bin/busybox", a.busybox); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// unpack downloads pkg, extracts it and copies the file matching glob to
// dst (atomically: a half-written cache entry is never used).
func unpack(cache, pkg, glob, dst string) error {
	work, err := os.MkdirTemp(cache, "fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dl := exec.Command("apt-get", "download", pkg)
	dl.Dir = work
	if out, err := dl.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get download %s: %w: %s", pkg, err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(work, "*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download %s: %d packages", pkg, len(debs))
	}
	if out, err := exec.Command("dpkg", "-x", debs[0], filepath.Join(work, "x")).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg -x %s: %w: %s", debs[0], err, out)
	}
	found, _ := filepath.Glob(filepath.Join(work, "x", glob))
	if len(found) == 0 {
		return fmt.Errorf("%s: no %s in the package", pkg, glob)
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// staticBinary is $IOMATRIX_STATIC_BINARY (.ci/run builds it for the
// image test too), or a CGO_ENABLED=0 build of the command into a
// temporary directory, once per test binary.
func staticBinary() (string, error) {
	if p := os.Getenv("IOMATRIX_STATIC_BINARY"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	dir, err := os.MkdirTemp("", "iomatrix-vmtest-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "iomatrix")
	return out, build("./cmd/iomatrix", out)
}

// StaticBuild is a CGO_ENABLED=0 build of a main package of this module
// (for instance "./internal/vmtest/guesttool"), for Guest.Files.
func StaticBuild(t testing.TB, pkg string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if err := build(pkg, out); err != nil {
		t.Fatalf("vmtest: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// StaticTestBuild is StaticBuild of pkg's test binary (go test -c): tests
// that must run inside the guest, as its process, driven by a case.
func StaticTestBuild(t testing.TB, pkg string) []byte {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("vmtest: %v", err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(pkg)+".test")
	cmd := exec.Command("go", "test", "-c", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("vmtest: build the tests of %s statically: %v: %s", pkg, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// build makes a static binary of pkg: the guest has no C library.
func build(pkg, out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s statically: %w: %s", pkg, err, b)
	}
	return nil
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
