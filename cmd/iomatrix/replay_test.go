package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/trace"
	"github.com/iomatrix/iomatrix/results"
)

// The acceptance of replay: a fio job on one loop device, rate-limited,
// is recorded as blktrace's per-CPU records and as fio's iolog at once;
// each is replayed on another loop device. The I/Os, their sizes and the
// read share equal the trace's, and each whole second's count is within
// 1 % of the trace's. blkparse's dump and text of the same records read
// as the same trace.
func TestReplayBlktraceAcceptance(t *testing.T) {
	testenv.Root(t)
	fio := testenv.Command(t, "fio")
	blkparse := testenv.Command(t, "blkparse")
	src, dst := testenv.RAMDisk(t, 256<<20), testenv.RAMDisk(t, 256<<20)
	dir := t.TempDir()
	name := filepath.Base(src)
	stop := traceBlock(t, name)
	iolog := filepath.Join(dir, "fio.iolog")
	out, err := exec.Command(fio, "--name=rec", "--filename="+src, "--rw=randrw", "--bs=4k", "--direct=1",
		"--ioengine=io_uring", "--iodepth=8", "--rate_iops=600,400", "--runtime=4", "--time_based",
		"--write_iolog="+iolog, "--output-format=terse").CombinedOutput()
	if err != nil {
		t.Fatalf("fio: %v: %s", err, out)
	}
	files := stop(dir)
	dump := filepath.Join(dir, "dump.bin")
	text, err := exec.Command(blkparse, "-i", filepath.Join(dir, name), "-d", dump).Output()
	if err != nil {
		t.Fatalf("blkparse: %v", err)
	}
	testenv.Must(t, os.WriteFile(filepath.Join(dir, "parsed.txt"), text, 0o644))
	perCPU, err := trace.ReadFile(files[0], trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{dump, filepath.Join(dir, "parsed.txt")} {
		tr, err := trace.ReadFile(other, trace.Options{})
		if err != nil || !reflect.DeepEqual(tr.IOs, perCPU.IOs) {
			t.Errorf("%s: not the per-CPU files' trace (%d I/Os, %v)", filepath.Base(other), len(tr.IOs), err)
		}
	}
	for _, tf := range []string{files[0], iolog} {
		t.Run(filepath.Base(tf), func(t *testing.T) { checkReplay(t, tf, dst) })
	}
}

// checkReplay replays tf on dev and holds the result to the trace.
func checkReplay(t *testing.T, tf, dev string) {
	tr, err := trace.ReadFile(tf, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := runInProcess("replay", tf, dev, "--allow-destructive", "--format", "json")
	if r.code != 0 {
		t.Fatalf("replay: exit %d: %s", r.code, r.stderr)
	}
	var doc results.Document
	testenv.Must(t, json.Unmarshal([]byte(r.stdout), &doc))
	res := doc.Results[0]
	rp := res.Replay
	t.Logf("%s: %d I/Os (%d reads), per second trace %v, replay %v; lateness p50 %d p99 %d ns",
		rp.Format, res.Total.IOs, res.Read.IOs, rp.TracePerSecond, rp.PerSecond, res.Rate.LatenessNS.P50, res.Rate.LatenessNS.P99)
	if res.Total.IOs != uint64(len(tr.IOs)) || res.Read.IOs != tr.Reads() || rp.IOs != uint64(len(tr.IOs)) {
		t.Errorf("%d I/Os, %d reads; the trace's %d, %d", res.Total.IOs, res.Read.IOs, len(tr.IOs), tr.Reads())
	}
	if res.Read.Bytes != rp.ReadBytes || res.Write.Bytes != rp.WriteBytes {
		t.Errorf("bytes %d/%d, the trace's %d/%d", res.Read.Bytes, res.Write.Bytes, rp.ReadBytes, rp.WriteBytes)
	}
	for _, s := range rp.Sizes {
		if s.ReadIOs != s.TraceReads || s.WriteIOs != s.TraceWrites {
			t.Errorf("size %d: %+v", s.Size, s)
		}
	}
	if len(rp.TracePerSecond) < 4 {
		t.Fatalf("the trace spans %d seconds", len(rp.TracePerSecond))
	}
	// Whole seconds (the last is a part of one), within 1 %. An I/O the
	// stream started more than a millisecond late (a starved CPU: the
	// machine is shared) may complete in the next second: those are
	// allowed for, and reported.
	late := res.Rate.LateIOs
	if late > 0 {
		t.Logf("%d I/Os started more than 1 ms late (cpu_wait %.1f %% of the window): each may move a count to the next second", late, res.CPUWait.Pct)
	}
	for i, want := range rp.TracePerSecond[:len(rp.TracePerSecond)-1] {
		if i >= len(rp.PerSecond) || float64(absDiff(rp.PerSecond[i], want)) > 0.01*float64(want)+float64(late) {
			t.Errorf("second %d: replay %v, trace %v", i, rp.PerSecond, rp.TracePerSecond)
			break
		}
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// traceBlock records the block layer's events of the disk name with the
// kernel's blk tracer through tracefs, which writes blktrace's records
// (blktrace(8) reads them through debugfs, which a kernel in lockdown
// refuses). The function it returns stops the tracer and writes each
// CPU's records to DIR/NAME.blktrace.N, blktrace's own files; the
// tracer's settings are restored when the test ends.
func traceBlock(t *testing.T, name string) func(dir string) []string {
	t.Helper()
	tfs := "/sys/kernel/tracing"
	if _, err := os.Stat(filepath.Join(tfs, "current_tracer")); err != nil {
		testenv.Require(t, unix.Mount("nodev", tfs, "tracefs", 0, "") == nil, "tracefs cannot be mounted at "+tfs)
		t.Cleanup(func() { _ = unix.Unmount(tfs, 0) })
	}
	set := func(file, value string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tfs, file), []byte(value), 0o644); err != nil {
			t.Fatalf("tracefs %s: %v", file, err)
		}
	}
	enable := filepath.Join("/sys/block", name, "trace/enable")
	tracers, _ := os.ReadFile(filepath.Join(tfs, "available_tracers"))
	testenv.Require(t, strings.Contains(string(tracers), "blk"), "the kernel has no blk tracer (CONFIG_BLK_DEV_IO_TRACE)")
	size, _ := os.ReadFile(filepath.Join(tfs, "buffer_size_kb"))
	t.Cleanup(func() {
		_ = os.WriteFile(enable, []byte("0"), 0o644)
		for file, v := range map[string]string{"tracing_on": "0", "current_tracer": "nop", "options/bin": "0", "options/context-info": "1", "buffer_size_kb": strings.TrimSpace(string(size))} {
			_ = os.WriteFile(filepath.Join(tfs, file), []byte(v), 0o644)
		}
		_ = os.WriteFile(filepath.Join(tfs, "tracing_on"), []byte("1"), 0o644)
	})
	set("tracing_on", "0")
	set("current_tracer", "blk")
	set("buffer_size_kb", "16384")
	set("trace", "")
	set("options/bin", "1")
	set("options/context-info", "0")
	testenv.Must(t, os.WriteFile(enable, []byte("1"), 0o644))
	set("tracing_on", "1")
	return func(dir string) []string {
		set("tracing_on", "0")
		testenv.Must(t, os.WriteFile(enable, []byte("0"), 0o644))
		cpus, _ := filepath.Glob(filepath.Join(tfs, "per_cpu/cpu*"))
		var files []string
		for n := 0; n < len(cpus); n++ {
			out := filepath.Join(dir, name+".blktrace."+strconv.Itoa(n))
			testenv.Must(t, os.WriteFile(out, drainPipe(t, filepath.Join(tfs, "per_cpu", "cpu"+strconv.Itoa(n), "trace_pipe")), 0o644))
			files = append(files, out)
		}
		return files
	}
}

// drainPipe reads what a stopped tracer's pipe holds: a non-blocking
// read ends with EAGAIN once it is empty.
func drainPipe(t *testing.T, path string) []byte {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var all []byte
	buf := make([]byte, 1<<16)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) || (err == nil && n == 0) {
			return all
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		all = append(all, buf[:n]...)
	}
}
