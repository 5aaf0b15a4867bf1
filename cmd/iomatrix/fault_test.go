package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

	// --continue-on-error: every cell is measured or marked failed.
	r = runIomatrix(t, iomatrixCmd(t, "sweep", dev, "--profile", "cdm", "--allow-destructive", "--runtime", "1s", "--ramp", "0s",
		"--continue-on-error", "--out", filepath.Join(t.TempDir(), "c.json"), "--format", "json"))
	if r.code != exitFailure {
		t.Fatalf("--continue-on-error: exit %d: %s", r.code, r.stderr)
	}
	doc, err = iotest.ReadDocument(strings.NewReader(r.stdout))
	if err != nil || len(doc.Results) != 8 {
		t.Fatalf("--continue-on-error: %v, %d results", err, len(doc.Results))
	}
	var reads, fails int
	for _, res := range doc.Results {
		if res.Error != nil {
			fails++
			if res.Error.Op != "write" {
				t.Errorf("%s failed on %s", res.Name, res.Error.Op)
			}
		} else if res.Pattern.ReadPct == 100 {
			reads++
		}
	}
	if fails == 0 || reads != 4 {
		t.Errorf("--continue-on-error: %d failed cells, %d read cells measured", fails, reads)
	}

	// The same error under a cap: it reaches the parent from the worker in
	// the cgroup, and the cgroup is gone afterwards (runCounted; a cgroup
	// that still holds a task cannot be removed, so the worker is gone too).
	c := capController(t)
	capped := filepath.Join(t.TempDir(), "capped.json")
	r = runCounted(t, c, "sweep", dev, "--profile", "cdm", "--allow-destructive", "--runtime", "1s", "--ramp", "0s",
		"--cap", "riops=1000000,wiops=1000000", "--out", capped)
	if r.code != exitFailure || !strings.Contains(r.stderr, "no space left on device") {
		t.Fatalf("capped: exit %d, want 1 with ENOSPC: %s", r.code, r.stderr)
	}
	doc, err = iotest.ReadDocumentFile(capped)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Cap == nil || len(doc.Results) == 0 {
		t.Fatalf("capped: cap %+v, %d results", doc.Cap, len(doc.Results))
	}
	if e := doc.Results[len(doc.Results)-1].Error; e == nil || e.Op != "write" || e.Errno != int(unix.ENOSPC) {
		t.Errorf("capped: last result error %+v", e)
	}
}

// The results directory turning read-only mid-sweep: the sweep stops with
// the error, and the last good results file stays intact.
func TestResultsDirTurnsReadOnly(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "t.dat")
	if r := runIomatrix(t, iomatrixCmd(t, "run", target, "--size", "32MiB", "--runtime", "100ms", "--ramp", "0s")); r.code != 0 {
		t.Fatal(r.stderr)
	}
	resdir := filepath.Join(dir, "results")
	os.Mkdir(resdir, 0o755)
	if err := unix.Mount("tmpfs", resdir, "tmpfs", 0, "size=4M"); err != nil {
		testenv.Require(t, false, "cannot mount tmpfs: "+err.Error())
	}
	defer unix.Unmount(resdir, unix.MNT_DETACH)
	out := filepath.Join(resdir, "r.json")
	cmd := iomatrixCmd(t, "sweep", target, "--profile", "quick", "--runtime", "200ms", "--ramp", "0s", "--out", out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	if err := unix.Mount("", resdir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	good, _ := os.ReadFile(out) // what is there once nothing can change it
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitFailure {
		t.Fatalf("exit %d, want 1: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "read-only file system") || !strings.Contains(last, out) {
		t.Errorf("last line %q does not name the file and the error", last)
	}
	now, _ := os.ReadFile(out)
	if !bytes.Equal(good, now) {
		t.Error("the results file changed after the directory became read-only")
	}
	doc, err := iotest.ReadDocumentFile(out)
	if err != nil || len(doc.Results) == 0 || len(doc.Results) >= 14 {
		t.Fatalf("last good file: %v, %d results", err, len(doc.Results))
	}
	t.Logf("stopped after %d saved results: %s", len(doc.Results), lines[len(lines)-1])
}

// The target vanishing mid-run: truncated under a run, the file's reads
// come back short, and the run stops with a clear error instead of
// measuring nothing; deleted, the open file still holds its blocks and the
// run completes.
func TestTargetVanishes(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	for _, how := range []string{"truncate", "delete"} {
		target := filepath.Join(dir, how+".dat")
		if r := runIomatrix(t, iomatrixCmd(t, "run", target, "--size", "64MiB", "--runtime", "100ms", "--ramp", "0s")); r.code != 0 {
			t.Fatal(r.stderr)
		}
		cmd := iomatrixCmd(t, "run", target, "--rw", "randread", "--qd", "4", "--runtime", "2s", "--ramp", "0s")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if how == "truncate" {
			os.Truncate(target, 0)
		} else {
			os.Remove(target)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s: hung", how)
		}
		code := cmd.ProcessState.ExitCode()
		switch how {
		case "truncate":
			if code != exitFailure || !strings.Contains(stderr.String(), "short read") || !strings.Contains(stderr.String(), target) {
				t.Errorf("truncated: exit %d, stderr %q", code, stderr.String())
			}
		case "delete":
			if code != 0 {
				t.Errorf("deleted: exit %d, stderr %q", code, stderr.String())
			}
		}
	}
}
