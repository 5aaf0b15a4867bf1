package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

func loopDevice(t *testing.T, size int64) (dev string, num sysfs.DevNum, backing string) {
	t.Helper()
	dev, backing = testenv.LoopDevice(t, t.TempDir(), size)
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	return dev, sysfs.DevNumFromDev(st.Rdev), backing
}

func TestBlockDeviceWriteNeedsAllowDestructive(t *testing.T) {
	dev, _, backing := loopDevice(t, 16<<20)
	marker := []byte("precious data at offset zero")
	if err := os.WriteFile(backing, marker, 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Must(t, os.Truncate(backing, 16<<20))
	for _, rw := range []string{"randwrite", "write"} {
		checkRefused(t, runInProcess("run", dev, "--rw", rw, "--runtime", "1s"), dev)
	}
	checkRefused(t, runInProcess("run", dev, "--rw", "randrw", "--rwmix", "99", "--runtime", "1s"), "--allow-destructive")
	got, _ := os.ReadFile(backing)
	if !strings.HasPrefix(string(got), string(marker)) {
		t.Fatal("device data changed")
	}
	// Reads need no permission.
	r := runInProcess("run", dev, "--rw", "randread", "--runtime", "200ms", "--ramp", "0s")
	if r.code != 0 {
		t.Fatalf("read run: exit %d: %s", r.code, r.stderr)
	}
}

// The I/Os iomatrix counts equal the kernel's own count for its cgroup.
func TestCountsMatchCgroupCounters(t *testing.T) {
	dev, num, _ := loopDevice(t, 256<<20)
	const blkio = "/sys/fs/cgroup/blkio"
	_, err := os.Stat(filepath.Join(blkio, "blkio.throttle.io_serviced"))
	testenv.Require(t, err == nil, "no cgroup v1 blkio controller with throttle files")
	cg := filepath.Join(blkio, fmt.Sprintf("iomatrix-test-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(cg)
	// v1 keeps per-cgroup throttle statistics only on queues that have a
	// throttle rule; this one is far above what the device can do.
	if err := os.WriteFile(filepath.Join(cg, "blkio.throttle.read_iops_device"), []byte(num.String()+" 1000000000"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$CG/cgroup.procs" && exec "$@"`, "sh", exe,
		"run", dev, "--rw", "randrw", "--rwmix", "70", "--bs", "4k", "--qd", "16", "--runtime", "5s", "--ramp", "1s",
		"--allow-destructive", "--format", "json")
	cmd.Env = append(os.Environ(), "IOMATRIX_TEST_MAIN=1", "CG="+cg)
	r := runIomatrix(t, cmd)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	doc, err := results.ReadDocument(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	res := doc.Results[0]
	kernel := readServiced(t, filepath.Join(cg, "blkio.throttle.io_serviced"), num.String())
	for _, c := range []struct {
		dir        string
		ours, kern uint64
	}{{"Read", res.Completed.Reads, kernel["Read"]}, {"Write", res.Completed.Writes, kernel["Write"]}} {
		dev := 100 * (float64(c.ours) - float64(c.kern)) / float64(c.kern)
		t.Logf("%s: iomatrix %d, kernel %d (%+.3f%%)", c.dir, c.ours, c.kern, dev)
		if c.kern == 0 || dev > 0.5 || dev < -0.5 {
			t.Errorf("%s: iomatrix counted %d, the cgroup %d", c.dir, c.ours, c.kern)
		}
	}
}

func readServiced(t *testing.T, path, dev string) map[string]uint64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && fs[0] == dev {
			n, _ := strconv.ParseUint(fs[2], 10, 64)
			m[fs[1]] = n
		}
	}
	return m
}

// The memory figure is the shipped binary's: the test binary may carry the
// race detector, which multiplies memory use.
func TestPeakRSSAtQD256(t *testing.T) {
	testenv.Root(t)
	gobin := testenv.Command(t, "go")
	dir := t.TempDir()
	bin := filepath.Join(dir, "iomatrix")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	target := filepath.Join(dir, "rss.dat")
	cmd := exec.Command(bin, "run", target, "--size", "256MiB", "--rw", "randrw", "--bs", "16k",
		"--qd", "256", "--jobs", "1", "--runtime", "2s", "--ramp", "0s", "--engine", "uring", "--format", "json")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// rusage's maxrss would include the parent's memory at fork time, so
	// read the child's own high-water mark while it runs; it only grows.
	var hwm int64
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
poll:
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run: %v: %s", err, errb.String())
			}
			break poll
		case <-time.After(20 * time.Millisecond):
			if v := readStatusKiB(status, "VmHWM:"); v > hwm {
				hwm = v
			}
		}
	}
	t.Logf("peak RSS %d KiB", hwm)
	if hwm == 0 || hwm > 64<<10 {
		t.Errorf("peak RSS %d KiB, want 0 < RSS <= 64 MiB", hwm)
	}
}

func readStatusKiB(path, key string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

func TestInterruptExits130(t *testing.T) {
	testenv.Root(t)
	target := filepath.Join(t.TempDir(), "sig.dat")
	cmd := iomatrixCmd(t, "run", target, "--size", "16MiB", "--runtime", "60s", "--ramp", "0s", "--qd", "1")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupted while it measures.
	waitMeasuring(t, cmd.Process.Pid, target)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // the exit status is read from ProcessState
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("no exit 10 s after SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d after SIGINT, want 130; stderr %q", code, errb.String())
	}
}
