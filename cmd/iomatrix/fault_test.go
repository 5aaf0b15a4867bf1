package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// fullDevice is a loop device over a sparse file of 256 MiB on a 64 MiB
// tmpfs: its writes fail with ENOSPC once the tmpfs is full.
func fullDevice(t *testing.T) string {
	t.Helper()
	testenv.Root(t)
	losetup := testenv.Command(t, "losetup")
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=64M"); err != nil {
		testenv.Require(t, false, "cannot mount tmpfs: "+err.Error())
	}
	t.Cleanup(func() { testenv.Must(t, unix.Unmount(mnt, unix.MNT_DETACH)) })
	backing := filepath.Join(mnt, "sparse.img")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Must(t, os.Truncate(backing, 256<<20))
	out, err := exec.Command(losetup, "-f", "--show", "--direct-io=on", backing).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { testenv.Must(t, exec.Command(losetup, "-d", dev).Run()) })
	return dev
}

// A write error in the middle of a run: a loop device over a sparse file
// on a 64 MiB tmpfs fails writes with ENOSPC once the tmpfs is full.
func TestWriteErrorENOSPC(t *testing.T) {
	dev := fullDevice(t)

	resultsFile := filepath.Join(t.TempDir(), "r.json")
	r := runIomatrix(t, iomatrixCmd(t, "sweep", dev, "--profile", "cdm", "--allow-destructive", "--runtime", "3s", "--ramp", "0s", "--out", resultsFile))
	if r.code != exitFailure {
		t.Fatalf("exit %d, want 1; stderr %s", r.code, r.stderr)
	}
	last := strings.Split(strings.TrimSpace(r.stderr), "\n")
	line := last[len(last)-1]
	if !strings.Contains(line, dev) || !strings.Contains(line, "no space left on device") {
		t.Errorf("last stderr line %q does not name the device and the error", line)
	}
	doc, err := results.ReadDocumentFile(resultsFile)
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
	doc, err = results.ReadDocument(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatalf("--continue-on-error: %v", err)
	}
	if len(doc.Results) != 8 {
		t.Fatalf("--continue-on-error: %d results", len(doc.Results))
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
	testenv.Must(t, os.Mkdir(resdir, 0o755))
	if err := unix.Mount("tmpfs", resdir, "tmpfs", 0, "size=4M"); err != nil {
		testenv.Require(t, false, "cannot mount tmpfs: "+err.Error())
	}
	defer func() { testenv.Must(t, unix.Unmount(resdir, unix.MNT_DETACH)) }()
	out := filepath.Join(resdir, "r.json")
	cmd := iomatrixCmd(t, "sweep", target, "--profile", "quick", "--runtime", "200ms", "--ramp", "0s", "--out", out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForResults(t, out, 1)
	if err := unix.Mount("", resdir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	good, _ := os.ReadFile(out) // what is there once nothing can change it
	_ = cmd.Wait()              // the exit status is read from ProcessState
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
	doc, err := results.ReadDocumentFile(out)
	if err != nil {
		t.Fatalf("last good file: %v", err)
	}
	if len(doc.Results) == 0 || len(doc.Results) >= 14 {
		t.Fatalf("last good file: %d results", len(doc.Results))
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
		waitMeasuring(t, cmd.Process.Pid, target)
		if how == "truncate" {
			testenv.Must(t, os.Truncate(target, 0))
		} else {
			os.Remove(target)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }() // the exit status is read from ProcessState
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

// The same fault, capped and uncapped, ends the same way: the same exit
// status, the same first and last lines on stderr (offsets of failed I/O
// aside where timing picks them), the same error recorded. Under a cap
// the error is raised in the child inside the cgroup and crosses a pipe
// to its parent; it must lose nothing on the way (kind, errno, op, offset).
func TestFaultsCappedAsUncapped(t *testing.T) {
	c := capController(t)
	// Ramp and runtime already aligned to the throttle's slices: no notice
	// under the cap, so stderr can be compared line for line.
	timing := []string{"--ramp", "250ms", "--runtime", "2s"}
	dir := t.TempDir()
	laidOut := func(name string) string {
		target := filepath.Join(dir, name)
		if r := runIomatrix(t, iomatrixCmd(t, "run", target, "--size", "64MiB", "--runtime", "100ms", "--ramp", "0s")); r.code != 0 {
			t.Fatal(r.stderr)
		}
		return target
	}
	type fault struct {
		name string
		// setup prepares one run: the arguments, and what to do while it
		// runs, given its process id and whether it is capped (nil:
		// nothing).
		setup  func(t *testing.T) (args []string, during func(pid int, capped bool))
		offset bool // the failed offset depends on timing
	}
	faults := []fault{
		{name: "EIO", setup: func(t *testing.T) ([]string, func(int, bool)) {
			dev := flakyDevice(t, 64<<20, 32<<20)
			return append([]string{"run", dev, "--rw", "randread", "--qd", "1", "--seed", "7"}, timing...), nil
		}},
		{name: "ENOSPC", setup: func(t *testing.T) ([]string, func(int, bool)) {
			dev := fullDevice(t)
			return []string{"run", dev, "--rw", "randwrite", "--qd", "1", "--seed", "7", "--allow-destructive", "--runtime", "20s", "--ramp", "250ms"}, nil
		}},
		{name: "truncated target", offset: true, setup: func(t *testing.T) ([]string, func(int, bool)) {
			target := laidOut("trunc.dat")
			return append([]string{"run", target, "--rw", "randread", "--qd", "1"}, timing...), func(pid int, capped bool) {
				// Once it measures: under a cap, its child reads in the
				// cgroup.
				if capped {
					waitCappedIO(t, c, pid)
				} else {
					waitMeasuring(t, pid, target)
				}
				testenv.Must(t, os.Truncate(target, 0))
			}
		}},
		{name: "read-only results directory", setup: func(t *testing.T) ([]string, func(int, bool)) {
			target := laidOut("ro.dat")
			resdir := filepath.Join(dir, "results")
			testenv.Must(t, os.MkdirAll(resdir, 0o755))
			if err := unix.Mount("tmpfs", resdir, "tmpfs", 0, "size=4M"); err != nil {
				testenv.Require(t, false, "cannot mount tmpfs: "+err.Error())
			}
			t.Cleanup(func() { testenv.Must(t, unix.Unmount(resdir, unix.MNT_DETACH)) })
			args := []string{"sweep", target, "--profile", "quick", "--ramp", "250ms", "--runtime", "200ms", "--out", filepath.Join(resdir, "r.json")}
			return args, func(int, bool) {
				waitForResults(t, filepath.Join(resdir, "r.json"), 1)
				testenv.Must(t, unix.Mount("", resdir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""))
			}
		}},
	}
	offsets := regexp.MustCompile(`offset [0-9]+`)
	// Each run has a fresh loop device and temporary file name.
	loops, temps := regexp.MustCompile(`/dev/loop[0-9]+`), regexp.MustCompile(`\.tmp-[0-9]+`)
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			var runs [2]cmdResult
			var errs [2]*results.IOError
			for i, capped := range []bool{false, true} {
				args, during := f.setup(t)
				if capped {
					args = append(args, "--cap", "riops=1000000,wiops=1000000")
				}
				cmd := iomatrixCmd(t, args...)
				var out, errb strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if during != nil {
					during(cmd.Process.Pid, capped)
				}
				_ = cmd.Wait() // the exit status is read from ProcessState
				runs[i] = cmdResult{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
				if l := leftovers(c, cmd.Process.Pid); len(l) > 0 {
					t.Errorf("capped %v: cgroups left: %v", capped, l)
				}
				if m := regexp.MustCompile(`(?m)^error: (.*)$`).FindStringSubmatch(out.String()); m != nil {
					errs[i] = &results.IOError{Msg: m[1]}
				}
			}
			lines := func(r cmdResult) (first, last string) {
				// Notices that another process loaded the disk depend on
				// the neighbours, not on the fault.
				var l []string
				for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
					if !strings.Contains(line, "figures are suspect") {
						l = append(l, line)
					}
				}
				first, last = l[0], l[len(l)-1]
				for _, re := range []*regexp.Regexp{loops, temps} {
					first, last = re.ReplaceAllString(first, "N"), re.ReplaceAllString(last, "N")
				}
				if f.offset {
					first, last = offsets.ReplaceAllString(first, "offset N"), offsets.ReplaceAllString(last, "offset N")
				}
				return first, last
			}
			u, k := runs[0], runs[1]
			uf, ul := lines(u)
			kf, kl := lines(k)
			t.Logf("uncapped: exit %d, %q … %q", u.code, uf, ul)
			if u.code != exitFailure {
				t.Errorf("uncapped: exit %d, want 1: %s", u.code, u.stderr)
			}
			if k.code != u.code || kf != uf || kl != ul {
				t.Errorf("capped: exit %d, %q … %q; uncapped: exit %d, %q … %q", k.code, kf, kl, u.code, uf, ul)
			}
			if (errs[0] == nil) != (errs[1] == nil) || (errs[0] != nil && !f.offset && *errs[0] != *errs[1]) {
				t.Errorf("recorded errors differ: uncapped %+v, capped %+v", errs[0], errs[1])
			}
		})
	}
}
