package vmtest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// The systemd guest: Debian 12 (bookworm) with systemd as PID 1, for the
// cases that depend on how systemd lays out and manages the cgroup tree
// (scopes, delegation, units' cgroups, daemon-reload).
//
// Its root filesystem is made once with mmdebstrap from the host's own apt
// sources (so that the mirror is whatever the machine uses, and no host
// name is written anywhere in the project), turned into an ext4 image and
// kept in the cache. The guest boots it read-write over a snapshot, so the
// cached image never changes. A unit baked into the image mounts a small
// per-run drive holding iomatrix, the cases and their runner, runs them as
// a service and powers off; the runner frames the results on ttyS1 as the
// busybox guest's init does.
//
// The drives, in the order qemu attaches them: the root, the guest's own
// Drives (serial vmtestN), the cases. NVMe controllers are probed
// asynchronously, so a drive's name (/dev/nvmeXn1) is not known in
// advance: the root is found by its partition's UUID, the cases drive by
// its label, and the runner exports VMTEST_DRIVEn=/dev/nvmeXn1 for the
// guest's Drives[n], matched by serial. An Ext4 drive is mounted at
// /mnt/nvmeXn1, as in the busybox guest.

// systemdPackages are added to mmdebstrap's minbase: systemd as the init,
// udev, without which systemd's device units never appear, and logind's
// needs (D-Bus, and pam_systemd, which registers a login with it), so
// that a login puts its shell in a session scope as on any host.
var systemdPackages = []string{"systemd", "systemd-sysv", "udev", "dbus", "libpam-systemd"}

// The root partition's identity: an MBR disk signature, which the kernel
// accepts as root=PARTUUID=<signature>-<partition>.
const (
	rootDiskSignature = 0x10a7e57d
	rootPartUUID      = "10a7e57d-01"
	casesLabel        = "vmcases"
)

// bakedUnit runs the cases as a service once the system is up. After
// multi-user.target, so that the cases start on a booted system; no
// getty, so that nothing else talks to the serial ports.
const bakedUnit = `[Unit]
Description=iomatrix guest test cases
After=multi-user.target

[Service]
Type=simple
ExecStart=/usr/local/sbin/vmtest-start
StandardOutput=journal+console
StandardError=journal+console
`

// bakedStart mounts the per-run drive and hands over to its runner; a
// drive that does not mount powers the guest off at once, so the test
// fails with the console's tail instead of waiting for its timeout.
const bakedStart = `#!/bin/sh
mkdir -p /run/vmtest
for i in $(seq 50); do
	mount -o ro LABEL=` + casesLabel + ` /run/vmtest && exec /bin/sh /run/vmtest/run
	sleep 0.2
done
echo "vmtest: the cases drive did not mount" >&2
systemctl poweroff -ff
`

// bakedFiles are written into the root filesystem after mmdebstrap; a
// symlink's content starts with "->".
var bakedFiles = []struct{ path, content string }{
	{"etc/hostname", "vmtest\n"},
	{"etc/systemd/system/vmtest.service", bakedUnit},
	{"etc/systemd/system/multi-user.target.wants/vmtest.service", "->/etc/systemd/system/vmtest.service"},
	{"etc/systemd/system/getty.target", "->/dev/null"},
	{"usr/local/sbin/vmtest-start", bakedStart},
	// Units (systemd-run --unit) find iomatrix on the manager's PATH.
	{"usr/local/bin/iomatrix", "->/run/vmtest/bin/iomatrix"},
}

// systemdRunner is the per-run runner: the busybox init's framing, run
// under dash from the root image. @@BOOTED is the guest's uptime when the
// first case starts.
const systemdRunner = `#!/bin/sh
exec 3>/dev/ttyS1
echo "@@KERNEL $(uname -r)" >&3
` + driveNames + `echo "@@BOOTED $(awk '{printf "%d", $1*1000}' /proc/uptime)" >&3
CASES=/run/vmtest/cases OUT=/run
` + caseLoop + "systemctl poweroff -ff\n"

// bootSystemd is Boot for a Guest with Systemd set.
func bootSystemd(t testing.TB, g Guest, cases []Case) []Result {
	t.Helper()
	a := assets(t)
	root := systemdImage(t)
	dir := t.TempDir()
	casesImg := filepath.Join(dir, "cases.img")
	if err := writeCasesDrive(casesImg, dir, a.binary, cases); err != nil {
		t.Fatalf("vmtest: the cases drive: %v", err)
	}
	args := qemuArgs(a, g, dir)
	args = append(args, "-kernel", a.kernel,
		"-append", strings.Join(append([]string{"console=ttyS0", "root=PARTUUID=" + rootPartUUID, "rootfstype=ext4", "rw", "rootwait",
			"panic=-1", "quiet", "systemd.show_status=error"}, g.KernelArgs...), " "),
		// The root over a snapshot: the guest writes to it, the cache
		// never changes.
		"-drive", fmt.Sprintf("file=%s,if=none,id=root,format=raw,snapshot=on", root),
		"-device", "nvme,drive=root,serial=vmroot")
	args = append(args, drives(t, dir, g.Drives)...)
	args = append(args, "-drive", fmt.Sprintf("file=%s,if=none,id=cases,format=raw,readonly=on", casesImg),
		"-device", "nvme,drive=cases,serial="+casesLabel)
	results, frames := runGuest(t, a, g, dir, args, cases)
	if ms, ok := bootedFrame(frames); ok {
		t.Logf("vmtest: systemd guest booted to its first case in %v (guest uptime)", (time.Duration(ms) * time.Millisecond).Round(100*time.Millisecond))
	}
	return results
}

// bootedFrame is the guest's uptime in ms from the @@BOOTED frame.
func bootedFrame(frames []byte) (int, bool) {
	sc := bufio.NewScanner(bytes.NewReader(frames))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "@@BOOTED "); ok {
			ms, err := strconv.Atoi(v)
			return ms, err == nil
		}
	}
	return 0, false
}

// writeCasesDrive makes the per-run drive: an ext4 image of iomatrix, the
// runner and the cases, made with mkfs.ext4 -d from a directory under
// tmp.
func writeCasesDrive(img, tmp, binary string, cases []Case) error {
	src, err := os.MkdirTemp(tmp, "cases-")
	if err != nil {
		return err
	}
	iomatrix, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	files := map[string][]byte{"bin/iomatrix": iomatrix, "run": []byte(systemdRunner)}
	for i, c := range cases {
		if err := checkCaseName(c.Name); err != nil {
			return err
		}
		d := fmt.Sprintf("cases/%03d/", i)
		files[d+"name"], files[d+"script"] = []byte(c.Name), []byte(c.Script)
	}
	for p, b := range files {
		p = filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			return err
		}
	}
	// Room for the files and ext4's own: the binary dominates.
	size := int64(len(iomatrix))*2 + 16<<20
	return mkfsFrom(img, src, casesLabel, 0, size)
}

func checkCaseName(name string) error {
	if strings.ContainsAny(name, " \t\n") || name == "" {
		return fmt.Errorf("case name %q: one word", name)
	}
	return nil
}

// mkfsFrom writes an ext4 filesystem of size bytes holding src's tree
// into img at offset.
func mkfsFrom(img, src, label string, offset, size int64) error {
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		return err
	}
	if err := os.Truncate(img, offset+size); err != nil {
		return err
	}
	args := []string{"-q", "-F", "-L", label, "-d", src}
	if offset > 0 {
		args = append(args, "-E", "offset="+strconv.FormatInt(offset, 10))
	}
	args = append(args, img, strconv.FormatInt(size>>10, 10)+"k")
	if out, err := exec.Command("mkfs.ext4", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4 %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

var (
	systemdOnce  sync.Once
	systemdPath  string
	systemdBuilt string // how the build went, logged by the first test
	systemdErr   error
)

// systemdImage is the cached root image, built on first use.
func systemdImage(t testing.TB) string {
	t.Helper()
	first := false
	systemdOnce.Do(func() { first = true; systemdPath, systemdBuilt, systemdErr = buildSystemdImage(CacheDir()) })
	var missing *missingError
	if errors.As(systemdErr, &missing) {
		testenv.Require(t, false, missing.Error())
	}
	if systemdErr != nil {
		t.Fatalf("vmtest: the systemd root image: %v", systemdErr)
	}
	if first && systemdBuilt != "" {
		t.Logf("vmtest: %s", systemdBuilt)
	}
	return systemdPath
}

// The root image's size: minbase with systemd takes about 250 MiB; the
// rest is room for what the cases write.
const (
	rootImageSize   = 2 << 30
	rootImageOffset = 1 << 20
)

// buildSystemdImage makes (or finds) the cached root image. Its name
// carries a hash of what is baked into it, so a change to the baked unit
// makes a new image instead of using a stale one; it is renamed into place
// whole, so a build cut short is never used.
func buildSystemdImage(cache string) (img, built string, err error) {
	h := sha256.New()
	fmt.Fprintln(h, systemdPackages, rootPartUUID, rootImageSize, rootImageOffset)
	for _, f := range bakedFiles {
		fmt.Fprintf(h, "%s\x00%s\x00", f.path, f.content)
	}
	img = filepath.Join(cache, fmt.Sprintf("systemd-bookworm-%x.img", h.Sum(nil)[:6]))
	if _, err := os.Stat(img); err == nil {
		return img, "", nil
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return "", "", &missingError{"mmdebstrap is not installed (Debian package mmdebstrap)"}
	}
	sources, err := aptSources("/etc/apt")
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", "", err
	}
	work, err := os.MkdirTemp(cache, "systemd-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(work)
	root := filepath.Join(work, "root")
	start := time.Now()
	args := append([]string{"--quiet", "--variant=minbase", "--include=" + strings.Join(systemdPackages, ","), "bookworm", root}, sources...)
	if out, err := exec.Command("mmdebstrap", args...).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("mmdebstrap %s: %w: %s", strings.Join(args, " "), err, out)
	}
	debootstrapped := time.Since(start)
	for _, f := range bakedFiles {
		p := filepath.Join(root, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", "", err
		}
		os.Remove(p)
		if target, ok := strings.CutPrefix(f.content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(f.content), 0o755)
		}
		if err != nil {
			return "", "", fmt.Errorf("bake %s: %w", f.path, err)
		}
	}
	tmp := filepath.Join(work, "root.img")
	if err := mkfsFrom(tmp, root, "vmroot", rootImageOffset, rootImageSize-rootImageOffset); err != nil {
		return "", "", err
	}
	if err := writeMBR(tmp, rootDiskSignature, rootImageOffset, rootImageSize-rootImageOffset); err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, img); err != nil {
		return "", "", err
	}
	return img, fmt.Sprintf("built %s in %v (mmdebstrap %v)", img,
		time.Since(start).Round(100*time.Millisecond), debootstrapped.Round(100*time.Millisecond)), nil
}

// aptSources are the machine's apt sources files under etc (sources.list
// and sources.list.d's *.list and *.sources), which mmdebstrap copies into
// the new system as its mirrors.
func aptSources(etc string) ([]string, error) {
	var found []string
	if fi, err := os.Stat(filepath.Join(etc, "sources.list")); err == nil && fi.Size() > 0 {
		found = append(found, filepath.Join(etc, "sources.list"))
	}
	for _, ext := range []string{"*.list", "*.sources"} {
		m, _ := filepath.Glob(filepath.Join(etc, "sources.list.d", ext))
		found = append(found, m...)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no apt sources in %s: mmdebstrap needs the machine's mirror: %w", etc, fs.ErrNotExist)
	}
	return found, nil
}

// writeMBR writes a DOS partition table with one Linux partition of size
// bytes at offset, so that the kernel finds the root by PARTUUID without
// an initramfs.
func writeMBR(img string, signature uint32, offset, size int64) error {
	mbr := make([]byte, 512)
	binary.LittleEndian.PutUint32(mbr[440:], signature)
	p := mbr[446:462]
	p[4] = 0x83 // Linux
	binary.LittleEndian.PutUint32(p[8:], uint32(offset/512))
	binary.LittleEndian.PutUint32(p[12:], uint32(size/512))
	mbr[510], mbr[511] = 0x55, 0xaa
	f, err := os.OpenFile(img, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(mbr, 0); err != nil {
		f.Close()
		return fmt.Errorf("write the partition table of %s: %w", img, err)
	}
	return f.Close()
}
