// Command soak runs one long iomatrix pattern in-process and samples the
// process while it runs: goroutines and RSS every minute must stay flat
// after the first, the latency histograms must hold exactly one entry per
// counted I/O, and every submitted I/O must have completed.
//
//	go run ./scripts/soak -target /tmp/soak.dat -size 4GiB -duration 10m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
)

func rssKiB() int64 { return statusKiB("VmRSS:") }

func statusKiB(key string) int64 {
	data, err := os.ReadFile("/proc/self/status")
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

type sample struct {
	at         time.Duration
	goroutines int
	rss        int64
	ios        uint64
	anon, file int64 // RssAnon and RssFile: which kind of memory moves
	heap       uint64
}

func take(at time.Duration, ios uint64) sample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return sample{at, runtime.NumGoroutine(), rssKiB(), ios, statusKiB("RssAnon:"), statusKiB("RssFile:"), ms.HeapInuse / 1024}
}

func main() {
	target := flag.String("target", "/tmp/iomatrix-soak.dat", "file or block device")
	sizeFlag := flag.String("size", "4GiB", "file size")
	duration := flag.Duration("duration", 10*time.Minute, "measured time")
	qd := flag.Int("qd", 256, "queue depth per job")
	jobs := flag.Int("jobs", 4, "jobs")
	engine := flag.String("engine", "auto", "engine")
	allow := flag.Bool("allow-destructive", false, "allow writes to a block device")
	flag.Parse()
	size, err := iotest.ParseSize(*sizeFlag)
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
	p := iotest.Pattern{Access: iotest.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: *qd, Jobs: *jobs}
	var samples []sample
	next := time.Minute
	o := iotest.Options{Runtime: *duration, Ramp: 0, Seed: 1, Engine: *engine}
	o.Progress = func(pr iotest.Progress) {
		if pr.Elapsed+500*time.Millisecond >= next {
			samples = append(samples, take(next, pr.IOs))
			next += time.Minute
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
	fmt.Printf("\n%8s %11s %10s %10s %10s %10s %14s\n", "minute", "goroutines", "RSS KiB", "anon KiB", "file KiB", "heap KiB", "I/Os so far")
	for _, s := range samples {
		fmt.Printf("%8.0f %11d %10d %10d %10d %10d %14d\n", s.at.Minutes(), s.goroutines, s.rss, s.anon, s.file, s.heap, s.ios)
	}
	fmt.Printf("%8s %11d %10d %10d %10d %10d %14d\n", "end", end.goroutines, end.rss, end.anon, end.file, end.heap, end.ios)
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
			check(s.goroutines == first.goroutines, "goroutines %d at minute %.0f, %d at minute 1", s.goroutines, s.at.Minutes(), first.goroutines)
			check(s.rss <= first.rss+first.rss/20, "RSS %d KiB at minute %.0f, %d KiB at minute 1", s.rss, s.at.Minutes(), first.rss)
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
