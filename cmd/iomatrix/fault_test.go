package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest"
)

// A write error in the middle of a run: a loop device over a sparse file
// on a 64 MiB tmpfs fails writes with ENOSPC once the tmpfs is full.
func TestWriteErrorENOSPC(t *testing.T) {
	testenv.Root(t)
	losetup := testenv.Command(t, "losetup")
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=64M"); err != nil {
		testenv.Require(t, false, "cannot mount tmpfs: "+err.Error())
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	backing := filepath.Join(mnt, "sparse.img")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Truncate(backing, 256<<20)
	out, err := exec.Command(losetup, "-f", "--show", "--direct-io=on", backing).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	defer exec.Command(losetup, "-d", dev).Run()

	results := filepath.Join(t.TempDir(), "r.json")
	r := runIomatrix(t, iomatrixCmd(t, "sweep", dev, "--profile", "cdm", "--allow-destructive", "--runtime", "3s", "--ramp", "0s", "--out", results))
	if r.code != exitFailure {
		t.Fatalf("exit %d, want 1; stderr %s", r.code, r.stderr)
	}
	last := strings.Split(strings.TrimSpace(r.stderr), "\n")
	line := last[len(last)-1]
	if !strings.Contains(line, dev) || !strings.Contains(line, "no space left on device") {
		t.Errorf("last stderr line %q does not name the device and the error", line)
	}
	doc, err := iotest.ReadDocumentFile(results)
	if err != nil {
		t.Fatal(err)
	}
	n := len(doc.Results)
	if n == 0 {
		t.Fatal("no results kept")
	}
	failed := doc.Results[n-1]
	if failed.Error == nil || failed.Error.Op != "write" || failed.Error.Errno != int(unix.ENOSPC) {
		t.Fatalf("last result error %+v", failed.Error)
	}
	for _, res := range doc.Results[:n-1] {
		if res.Error != nil {
			t.Errorf("%s: %+v", res.Name, res.Error)
		}
	}
	t.Logf("%d results kept; %s failed: %s", n-1, failed.Name, failed.Error)
}
