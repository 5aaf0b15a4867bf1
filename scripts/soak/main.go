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
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// statusBuf holds /proc/self/status between samples: the sampler itself
// must not allocate, or its own garbage would show up as growth.
var statusBuf [8192]byte

// statusPath is NUL-terminated once: unix.Open would allocate the C
// string on every call.
var statusPath = []byte(sysfs.ProcRoot + "/self/status\x00")

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
	f := parseFlags()
	if f.memprofile != "" {
		runtime.MemProfileRate = 1
	}
	size, err := units.ParseSize(f.size)
	if err != nil {
		exit(2, "-size:", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	plan, err := target.NewPlan(f.target, target.Options{Size: size, Writes: true, AllowDestructive: f.allow, Sys: sysfs.Default()})
	if err != nil {
		exit(2, err)
	}
	t, err := plan.Open(ctx, nil)
	if err != nil {
		exit(1, err)
	}
	defer func() { _ = t.Close() }() // nothing to flush: O_DIRECT
	r, samples, err := measure(ctx, t, f)
	if err != nil {
		exit(1, err)
	}
	// The last progress tick comes just before the end; the run's own
	// goroutines and buffers are gone after it, so the end is shown, not
	// held to the in-run figures.
	end := take(f.duration, r.Completed.Reads+r.Completed.Writes)
	if f.memprofile != "" {
		if err := writeHeapProfile(f.memprofile); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
		}
	}
	printSamples(samples, end)
	var c checks
	c.flat(samples)
	c.accounted(r)
	fmt.Printf("\n%.0f IOPS; histograms %d+%d = ios %d+%d; submitted %+v = completed %+v\n",
		r.Total.IOPS, r.Read.LatNS.Count, r.Write.LatNS.Count, r.Read.IOs, r.Write.IOs, r.Submitted, r.Completed)
	if c.failed {
		os.Exit(1)
	}
	fmt.Println("OK")
}

type soakFlags struct {
	target     string
	size       string
	duration   time.Duration
	qd, jobs   int
	engine     string
	allow      bool
	memprofile string
	every      time.Duration
}

func parseFlags() soakFlags {
	var f soakFlags
	flag.StringVar(&f.target, "target", "/tmp/iomatrix-soak.dat", "file or block device")
	flag.StringVar(&f.size, "size", "4GiB", "file size")
	flag.DurationVar(&f.duration, "duration", 10*time.Minute, "measured time")
	flag.IntVar(&f.qd, "qd", 256, "queue depth per job")
	flag.IntVar(&f.jobs, "jobs", 4, "jobs")
	flag.StringVar(&f.engine, "engine", "auto", "engine")
	flag.BoolVar(&f.allow, "allow-destructive", false, "allow writes to a block device")
	flag.StringVar(&f.memprofile, "memprofile", "", "record every allocation and write the heap profile here at the end")
	flag.DurationVar(&f.every, "every", time.Minute, "sampling interval (the first sample is the baseline)")
	flag.Parse()
	return f
}

// exit ends the soak before its checks: 2 for what it was asked, 1 for what
// went wrong on the way.
func exit(code int, args ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"soak:"}, args...)...)
	os.Exit(code)
}

// measure runs the pattern, taking a sample from the progress callback
// once every interval.
func measure(ctx context.Context, t *target.Target, f soakFlags) (results.Result, []sample, error) {
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: f.qd, Jobs: f.jobs}
	// Preallocated: appending must not grow the heap during the run.
	samples := make([]sample, 0, int(f.duration/f.every)+2)
	next := f.every
	o := iotest.Options{Runtime: f.duration, Ramp: 0, Seed: 1, Engine: f.engine}
	o.Progress = func(pr iotest.Progress) {
		if pr.Elapsed+time.Second >= next { // the tick nearest the mark, at most a second early
			samples = append(samples, take(next, pr.IOs))
			next += f.every
		}
	}
	fmt.Printf("soak: %s on %s for %s (engine %s)\n", p.Name(), t.Path, f.duration, f.engine)
	r, err := iotest.Run(ctx, t, p, o)
	return r, samples, err
}

func printSamples(samples []sample, end sample) {
	fmt.Printf("\n%8s %10s %7s %8s %8s %8s %8s %9s %4s %14s\n", "at", "goroutines", "threads", "RSS KiB", "anon KiB", "file KiB", "heap KiB", "mallocs", "GCs", "I/Os so far")
	row := func(at string, s sample) {
		fmt.Printf("%8s %10d %7d %8d %8d %8d %8d %9d %4d %14d\n", at, s.goroutines, s.threads, s.rss, s.anon, s.file, s.heap, s.mallocs, s.gcs, s.ios)
	}
	for _, s := range samples {
		row(s.at.String(), s)
	}
	row("end", end)
}

// checks prints each check that fails, and remembers that one did.
type checks struct{ failed bool }

func (c *checks) that(cond bool, format string, args ...any) {
	if !cond {
		c.failed = true
		fmt.Printf("FAIL: "+format+"\n", args...)
	}
}

// flat holds every sample to the first one, the baseline taken once the
// run has settled.
func (c *checks) flat(samples []sample) {
	if len(samples) < 2 {
		return
	}
	first := samples[0]
	for _, s := range samples[1:] {
		c.that(s.goroutines == first.goroutines, "goroutines %d at %s, %d at %s", s.goroutines, s.at, first.goroutines, first.at)
		c.that(s.threads == first.threads, "threads %d at %s, %d at %s", s.threads, s.at, first.threads, first.at)
		c.that(s.rss <= first.rss+first.rss/50, "RSS %d KiB at %s, %d KiB at %s (over 2 %% more)", s.rss, s.at, first.rss, first.at)
		c.that(s.heap <= first.heap+64, "heap in use %d KiB at %s, %d KiB at %s", s.heap, s.at, first.heap, first.at)
	}
}

// accounted holds the result to its own counts: every counted I/O is in a
// histogram, every submitted I/O completed.
func (c *checks) accounted(r results.Result) {
	c.that(r.Read.LatNS.Count == r.Read.IOs, "read histogram holds %d, %d reads counted", r.Read.LatNS.Count, r.Read.IOs)
	c.that(r.Write.LatNS.Count == r.Write.IOs, "write histogram holds %d, %d writes counted", r.Write.LatNS.Count, r.Write.IOs)
	c.that(r.Submitted == r.Completed, "submitted %+v, completed %+v", r.Submitted, r.Completed)
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
