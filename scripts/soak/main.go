// Command soak runs one long iomatrix pattern in-process and samples the
// process while it runs: goroutines, threads, RSS (within 2 %) and the Go
// heap in use must stay flat after the first sample, the latency
// histograms must hold exactly one entry per counted I/O, and every
// submitted I/O must have completed. The sampler allocates nothing, so
// the cumulative malloc count shows what the engine allocates while it
// runs (-memprofile records every allocation to find the source).
//
//	go run ./scripts/soak -target /tmp/soak.dat -size 4GiB -duration 10m
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"github.com/iomatrix/iomatrix/internal/units"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"
	"unsafe"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
	"golang.org/x/sys/unix"
)

// statusBuf holds /proc/self/status between samples: the sampler itself
// must not allocate, or its own garbage would show up as growth.
var statusBuf [8192]byte

// statusPath is NUL-terminated once: unix.Open would allocate the C
// string on every call.
var statusPath = []byte("/proc/self/status\x00")

var atFDCWD = unix.AT_FDCWD // a variable: the constant is negative

// readStatus reads /proc/self/status into statusBuf without allocating.
func readStatus() []byte {
	r, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&statusPath[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return nil
	}
	fd := int(r)
	defer unix.Close(fd)
	n := 0
	for n < len(statusBuf) {
		m, err := unix.Read(fd, statusBuf[n:])
		if err != nil || m <= 0 {
			break
		}
		n += m
	}
	return statusBuf[:n]
}

// statusKiB returns the number after key (e.g. "VmRSS:") in status.
func statusKiB(status []byte, key string) int64 {
	i := bytes.Index(status, []byte(key))
	if i < 0 {
		return 0
	}
	var n int64
	seen := false
	for _, c := range status[i+len(key):] {
		switch {
		case c >= '0' && c <= '9':
			n, seen = n*10+int64(c-'0'), true
		case seen || c == '\n':
			return n
		}
	}
	return n
}

type sample struct {
	at         time.Duration
	goroutines int
	threads    int64
	rss        int64
	ios        uint64
	anon, file int64 // RssAnon and RssFile: which kind of memory moves
	heap       uint64
	mallocs    uint64 // cumulative heap allocations: flat when nothing allocates
	gcs        uint32
}

var memStats runtime.MemStats

func take(at time.Duration, ios uint64) sample {
	runtime.ReadMemStats(&memStats)
	st := readStatus()
	return sample{at, runtime.NumGoroutine(), statusKiB(st, "Threads:"), statusKiB(st, "VmRSS:"), ios, statusKiB(st, "RssAnon:"),
		statusKiB(st, "RssFile:"), memStats.HeapInuse / 1024, memStats.Mallocs, memStats.NumGC}
}

func main() {
	target := flag.String("target", "/tmp/iomatrix-soak.dat", "file or block device")
	sizeFlag := flag.String("size", "4GiB", "file size")
	duration := flag.Duration("duration", 10*time.Minute, "measured time")
	qd := flag.Int("qd", 256, "queue depth per job")
	jobs := flag.Int("jobs", 4, "jobs")
	engine := flag.String("engine", "auto", "engine")
	allow := flag.Bool("allow-destructive", false, "allow writes to a block device")
	memprofile := flag.String("memprofile", "", "record every allocation and write the heap profile here at the end")
	every := flag.Duration("every", time.Minute, "sampling interval (the first sample is the baseline)")
	flag.Parse()
	if *memprofile != "" {
		runtime.MemProfileRate = 1
	}
	size, err := units.ParseSize(*sizeFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: -size:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	plan, err := iotest.PlanTarget(*target, iotest.TargetOptions{Size: size, Writes: true, AllowDestructive: *allow})
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	t, err := plan.Open(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	defer t.Close()
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: *qd, Jobs: *jobs}
	// Preallocated: appending must not grow the heap during the run.
	samples := make([]sample, 0, int(*duration / *every)+2)
	next := *every
	o := iotest.Options{Runtime: *duration, Ramp: 0, Seed: 1, Engine: *engine}
	o.Progress = func(pr iotest.Progress) {
		if pr.Elapsed+time.Second >= next { // the tick nearest the mark, at most a second early
			samples = append(samples, take(next, pr.IOs))
			next += *every
		}
	}
	fmt.Printf("soak: %s on %s for %s (engine %s)\n", p.Name(), t.Path, *duration, *engine)
	r, err := iotest.Run(ctx, t, p, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	// The last progress tick comes just before the end; the run's own
	// goroutines and buffers are gone after it, so the end is shown, not
	// held to the in-run figures.
	end := take(*duration, r.Completed.Reads+r.Completed.Writes)
	if *memprofile != "" {
		if err := writeHeapProfile(*memprofile); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
		}
	}
	fmt.Printf("\n%8s %10s %7s %8s %8s %8s %8s %9s %4s %14s\n", "at", "goroutines", "threads", "RSS KiB", "anon KiB", "file KiB", "heap KiB", "mallocs", "GCs", "I/Os so far")
	row := func(at string, s sample) {
		fmt.Printf("%8s %10d %7d %8d %8d %8d %8d %9d %4d %14d\n", at, s.goroutines, s.threads, s.rss, s.anon, s.file, s.heap, s.mallocs, s.gcs, s.ios)
	}
	for _, s := range samples {
		row(s.at.String(), s)
	}
	row("end", end)
	ok := true
	check := func(cond bool, format string, args ...any) {
		if !cond {
			ok = false
			fmt.Printf("FAIL: "+format+"\n", args...)
		}
	}
	if len(samples) > 1 {
		first := samples[0]
		for _, s := range samples[1:] {
			check(s.goroutines == first.goroutines, "goroutines %d at %s, %d at %s", s.goroutines, s.at, first.goroutines, first.at)
			check(s.threads == first.threads, "threads %d at %s, %d at %s", s.threads, s.at, first.threads, first.at)
			check(s.rss <= first.rss+first.rss/50, "RSS %d KiB at %s, %d KiB at %s (over 2 %% more)", s.rss, s.at, first.rss, first.at)
			check(s.heap <= first.heap+64, "heap in use %d KiB at %s, %d KiB at %s", s.heap, s.at, first.heap, first.at)
		}
	}
	check(r.Read.LatNS.Count == r.Read.IOs, "read histogram holds %d, %d reads counted", r.Read.LatNS.Count, r.Read.IOs)
	check(r.Write.LatNS.Count == r.Write.IOs, "write histogram holds %d, %d writes counted", r.Write.LatNS.Count, r.Write.IOs)
	check(r.Submitted == r.Completed, "submitted %+v, completed %+v", r.Submitted, r.Completed)
	fmt.Printf("\n%.0f IOPS; histograms %d+%d = ios %d+%d; submitted %+v = completed %+v\n",
		r.Total.IOPS, r.Read.LatNS.Count, r.Write.LatNS.Count, r.Read.IOs, r.Write.IOs, r.Submitted, r.Completed)
	if !ok {
		os.Exit(1)
	}
	fmt.Println("OK")
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
