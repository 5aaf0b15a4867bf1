package iotest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

func engines(t *testing.T) []string {
	t.Helper()
	testenv.Require(t, ProbeUring() == nil, "io_uring unavailable")
	return []string{EngineUring, EnginePsync}
}

// host is the running system, where the tests' targets are planned.
var host = sysfs.Default()

// openPlan plans path on the running system and opens it.
func openPlan(t *testing.T, path string, o target.Options) *target.Target {
	t.Helper()
	o.Sys = host
	p, err := target.NewPlan(path, o)
	if err != nil {
		t.Fatalf("plan %s: %v", path, err)
	}
	tg, err := p.Open(context.Background(), nil)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg
}

func TestRunOnFile(t *testing.T) {
	testenv.Root(t)
	dir := testenv.DirectIODir(t)
	for _, eng := range engines(t) {
		t.Run(eng, func(t *testing.T) {
			path := filepath.Join(dir, eng+".dat")
			tg := openPlan(t, path, target.Options{Size: 64 << 20, Writes: true})
			p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: 8, Jobs: 2}
			o := Options{Runtime: 1500 * time.Millisecond, Ramp: 200 * time.Millisecond, Seed: 1, Engine: eng}
			var calls int
			o.Progress = func(Progress) { calls++ }
			r, err := Run(context.Background(), tg, p, o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Engine != eng || r.Name != "rand-4k-r50-qd8-j2" {
				t.Errorf("engine %q name %q", r.Engine, r.Name)
			}
			if r.Read.IOs == 0 || r.Write.IOs == 0 || r.Total.IOs != r.Read.IOs+r.Write.IOs {
				t.Fatalf("ios read %d write %d total %d", r.Read.IOs, r.Write.IOs, r.Total.IOs)
			}
			if r.Read.Bytes != r.Read.IOs*4096 || r.Total.Bytes != r.Total.IOs*4096 {
				t.Errorf("bytes %d for %d reads", r.Read.Bytes, r.Read.IOs)
			}
			secs := float64(r.DurationNS) / 1e9
			if d := time.Duration(r.DurationNS); d != o.Runtime {
				t.Errorf("duration %v, want the runtime %v", d, o.Runtime)
			}
			if want := float64(r.Total.IOs) / secs; r.Total.IOPS < want*0.999 || r.Total.IOPS > want*1.001 {
				t.Errorf("iops %.1f, ios/duration %.1f", r.Total.IOPS, want)
			}
			// Ramp and drain completions are counted only in Completed.
			if r.Completed.Reads <= r.Read.IOs || r.Completed.Writes <= r.Write.IOs {
				t.Errorf("completed %+v not above measured r%d w%d", r.Completed, r.Read.IOs, r.Write.IOs)
			}
			share := float64(r.Read.IOs) / float64(r.Total.IOs)
			if r.Total.IOs > 2000 && (share < 0.45 || share > 0.55) {
				t.Errorf("read share %.3f for rwmix 50", share)
			}
			var tl float64
			for _, v := range r.TimelineIOPS {
				tl += v
			}
			if len(r.TimelineIOPS) != 2 {
				t.Fatalf("timeline %v: want 2 entries for 1.5 s", r.TimelineIOPS)
			}
			// Second 0 is a full second, second 1 half of one, scaled to a rate.
			if sum := r.TimelineIOPS[0] + r.TimelineIOPS[1]*0.5; sum < float64(r.Total.IOs)-1 || sum > float64(r.Total.IOs)+1 {
				t.Errorf("timeline %v sums to %.0f I/Os, total %d", r.TimelineIOPS, sum, r.Total.IOs)
			}
			l := r.Read.LatNS
			if !(l.Min > 0 && float64(l.Min) <= l.Mean && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.P9999 && l.P9999 <= l.Max) {
				t.Errorf("latency summary out of order: %+v", l)
			}
			if all := r.Total.LatNS; all == nil || all.Count != r.Total.IOs ||
				all.Min != min(r.Read.LatNS.Min, r.Write.LatNS.Min) || all.Max != max(r.Read.LatNS.Max, r.Write.LatNS.Max) {
				t.Errorf("total lat_ns %+v for %d I/Os, read %+v, write %+v", all, r.Total.IOs, r.Read.LatNS, r.Write.LatNS)
			}
			checkHistograms(t, r)
			if r.CPU.UserPct+r.CPU.SysPct <= 0 {
				t.Errorf("cpu %+v", r.CPU)
			}
			// Each stream's thread is read: a ring per job, a thread per
			// request in flight with psync (a ring's io_uring workers too,
			// when there are some).
			streams := p.Jobs
			if eng == EnginePsync {
				streams *= p.QueueDepth
			}
			if w := r.CPUWait; w == nil || w.IOThreads < streams || eng == EnginePsync && w.IOThreads != streams || w.Pct < 0 || w.Pct > 100 {
				t.Errorf("cpu_wait %+v: want the %d streams' threads", w, streams)
			}
			if tg.Info.Disk != "" && r.Device.IOs == 0 {
				t.Errorf("disk %s counted no I/O", tg.Info.Disk)
			}
			if calls == 0 {
				t.Error("progress callback never called")
			}
		})
	}
}

// checkHistograms holds a run's figures to its histograms: each
// direction's holds one latency per I/O, and the percentiles reported are
// the histogram's; the total's is the union of the directions'.
func checkHistograms(t *testing.T, r results.Result) {
	t.Helper()
	for _, d := range []struct {
		name string
		d    results.DirStats
	}{{"read", r.Read}, {"write", r.Write}} {
		h, err := d.d.LatNS.Histogram()
		if err != nil || h == nil || h.Count() != d.d.IOs {
			t.Fatalf("%s: histogram %v for %d I/Os (%v)", d.name, h, d.d.IOs, err)
		}
		l := d.d.LatNS
		for _, p := range []struct {
			q   float64
			got uint64
		}{{50, l.P50}, {90, l.P90}, {95, l.P95}, {99, l.P99}, {99.9, l.P999}, {99.99, l.P9999}} {
			if want := h.Percentile(p.q); p.got != want {
				t.Errorf("%s: p%v %d, its histogram's %d", d.name, p.q, p.got, want)
			}
		}
	}
	all, err := r.LatencyHistogram()
	if err != nil || all == nil || results.Summarize(all).Figures() != *r.Total.LatNS {
		t.Errorf("total lat_ns %+v is not the union of the directions' histograms (%v)", r.Total.LatNS, err)
	}
}

// A file iomatrix did not lay out is read in place, and a run that reads
// it changes nothing (target's TestForeignFileGuard plans it so).
func TestReadInPlaceChangesNothing(t *testing.T) {
	testenv.Root(t)
	path := filepath.Join(testenv.DirectIODir(t), "precious")
	content := bytes.Repeat([]byte("keep me "), 8192)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	tg := openPlan(t, path, target.Options{})
	r, err := Run(context.Background(), tg, results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 4, Jobs: 1},
		Options{Runtime: 200 * time.Millisecond, Engine: EngineAuto})
	_ = tg.Close()
	if err != nil || r.Read.IOs == 0 {
		t.Fatalf("read run: %v, %d reads", err, r.Read.IOs)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, content) {
		t.Fatal("foreign file changed")
	}
}

// The blocks a seeded run wrote are exactly the blocks its sequence drew:
// the data really reached the device, and nothing else was touched.
func TestWritesReachDevice(t *testing.T) {
	const size = 16 << 20
	for _, eng := range engines(t) {
		t.Run(eng, func(t *testing.T) {
			dev, backing := testenv.DirectIOLoopDevice(t, size)
			tg := openPlan(t, dev, target.Options{Writes: true, AllowDestructive: true})
			if tg.Size != size || tg.Info.Kind != "block" {
				t.Fatalf("target %+v", tg.Info)
			}
			qd := 8
			if eng == EnginePsync {
				qd = 1 // one worker: one sequence to replay
			}
			p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 0, QueueDepth: qd, Jobs: 1}
			r, err := Run(context.Background(), tg, p, Options{Runtime: 300 * time.Millisecond, Seed: 77, Engine: eng})
			if err != nil {
				t.Fatal(err)
			}
			_ = tg.Close()
			if r.Completed.Reads != 0 || r.Completed.Writes == 0 {
				t.Fatalf("completed %+v", r.Completed)
			}
			want := map[int64]bool{}
			seq := newSequence(77, 0, 0, p, size)
			for range r.Completed.Writes {
				_, off := seq.next()
				want[off] = true
			}
			f, err := os.Open(backing)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, 4096)
			zero := make([]byte, 4096)
			var written int
			for off := int64(0); off < size; off += 4096 {
				if _, err := f.ReadAt(buf, off); err != nil {
					t.Fatal(err)
				}
				isZero := bytes.Equal(buf, zero)
				if want[off] == isZero {
					t.Fatalf("block at %d: written by the run %v, zero on the device %v", off, want[off], isZero)
				}
				if !isZero {
					written++
				}
			}
			t.Logf("%d writes landed on %d distinct blocks", r.Completed.Writes, written)
		})
	}
}

// The hot path allocates nothing: the allocations of a run do not grow
// with the number of I/Os.
func TestNoAllocationPerIO(t *testing.T) {
	testenv.Root(t)
	path := filepath.Join(testenv.DirectIODir(t), "alloc.dat")
	tg := openPlan(t, path, target.Options{Size: 64 << 20, Writes: true})
	// The ring's own wait timer is re-armed about every 50 ms. Then: a
	// ring that polls before it sleeps, as on a fast device.
	// Then a block-size mix under zipf, on both engines: each I/O's size
	// and offset come from precomputed tables.
	mixed := results.Pattern{Access: results.Random, ReadPct: 50, QueueDepth: 8, Jobs: 1}
	mixed, _ = pattern.WithBSSplit(mixed, "4k/60:16k/30:64k/10")
	mixed, _ = pattern.WithDistribution(mixed, "zipf:1.2")
	replayAllocs(t, tg)
	for _, eng := range append(engines(t), "uring-polling", "uring-batched", "uring-mix", "psync-mix", "uring-rate", "uring-sqpoll",
		"uring-latlog", "psync-latlog", "uring-rate-latlog", "uring-compress", "psync-compress", "uring-dedupe", "psync-dedupe", "uring-dsync", "psync-dsync", "uring-fdatasync", "psync-fdatasync", "uring-rate-fdatasync", "uring-fdatasync-after", "uring-rate-profile") {
		// A fixed number of I/Os, not a fixed time: a slow moment of the
		// disk must not leave too few I/Os to tell.
		o := Options{Runtime: time.Minute, MaxIOs: 10000, Seed: 3, Engine: eng}
		p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: 8, Jobs: 1}
		switch eng {
		case "uring-polling":
			o.Engine, alwaysPoll = EngineUring, true
			t.Cleanup(func() { alwaysPoll = false })
		case "uring-batched":
			// A fast ring with many in flight: it waits for a batch.
			o.Engine, alwaysPoll = EngineUring, true
			p.QueueDepth = 4 * batchShare
		case "uring-mix", "psync-mix":
			o.Engine, p = strings.TrimSuffix(eng, "-mix"), mixed
			alwaysPoll = false
		case "uring-sqpoll":
			// A kernel thread takes the submissions: the ring publishes
			// its tail, and wakes the thread only when it sleeps. (The
			// polled variant, --poll, needs a disk with poll queues: it
			// runs in the cgroup v2 guest, TestVMRingModes.)
			o.Engine, o.Ring = EngineUring, RingMode{SQPoll: true}
			alwaysPoll = false
		case "uring-compress", "psync-compress", "uring-dedupe", "psync-dedupe":
			// Data that compresses, and data that repeats (a block-size
			// mix: a repeat of another size).
			engine, kind, _ := strings.Cut(eng, "-")
			o.Engine, alwaysPoll = engine, false
			if kind == "compress" {
				p.Compress = 50
			} else {
				p = mixed
				p.Compress, p.Dedupe = 25, 50
			}
		case "uring-dsync", "psync-dsync":
			// Durable writes: RWF_DSYNC on the ring's SQE, pwritev2
			// through the worker's own iovec.
			o.Engine, p.Sync = strings.TrimSuffix(eng, "-dsync"), "dsync"
			alwaysPoll = false
		case "uring-fdatasync", "psync-fdatasync":
			// A sync linked after every other write (the write held
			// until the sync completes), or called after it.
			o.Engine, p.Sync, p.QueueDepth = strings.TrimSuffix(eng, "-fdatasync"), "fdatasync:2", 1
			alwaysPoll = false
		case "uring-fdatasync-after":
			// The sync queued at the write's completion.
			o.Engine, p.Sync, p.QueueDepth = EngineUring, "fdatasync:2:after", 1
			alwaysPoll = false
		case "uring-rate-fdatasync":
			// The open loop shares the linked sync's completion.
			o.Engine, p.Sync, p.QueueDepth, p.Rate = EngineUring, "fdatasync:2", 1, results.Rate{IOPS: 20000}
			alwaysPoll = false
		case "uring-rate":
			// An open loop of the mix: a timer request per wake-up, the
			// schedule drawn in place.
			o.Engine, p = EngineUring, mixed
			p.Rate = results.Rate{IOPS: 40000}
			alwaysPoll = false
		case "uring-rate-profile":
			// An open loop whose rates follow a profile of 1 ms steps:
			// each arrival found from the step cursor, in place.
			o.Engine, p.Rate = EngineUring, results.Rate{ReadIOPS: 25000, WriteIOPS: 15000}
			o.Profile = &RateProfile{StepNS: 1e6, Reads: []float64{40000, 10000, 0, 50000}, Writes: []float64{0, 30000, 30000, 0}}
			alwaysPoll = false
		case "uring-latlog", "psync-latlog":
			// Every I/O a record in a preallocated buffer, written as a
			// line by a goroutine of the run's (to a file, as run does).
			o.Engine, alwaysPoll = strings.TrimSuffix(eng, "-latlog"), false
			o.LatLog = LatLog{Completion: latLogFile(t)}
		case "uring-rate-latlog":
			o.Engine, p = EngineUring, mixed
			p.Rate = results.Rate{IOPS: 40000}
			o.LatLog = LatLog{Completion: latLogFile(t), Response: latLogFile(t)}
		}
		mallocs, ios := countAllocs(t, tg, p, o)
		t.Logf("%s: %d mallocs for %d I/Os", eng, mallocs, ios)
		if ios != 10000 {
			t.Fatalf("%s: %d I/Os, want the 10,000 asked", eng, ios)
		}
		if mallocs > 1000 {
			t.Errorf("%s: %d allocations for %d I/Os", eng, mallocs, ios)
		}
	}
}

// The polled ring (IOPOLL) allocates nothing per I/O either. It needs a
// disk with poll queues, which this project's machines lack: the cgroup
// v2 guest has one, and TestVMRingModes runs this test there, naming the
// device in IOMATRIX_POLL_DEVICE. Elsewhere there is nothing to run.
func TestNoAllocationPerIOPolled(t *testing.T) {
	dev := testenv.InGuest(t, "IOMATRIX_POLL_DEVICE", "TestVMRingModes")
	tg := openPlan(t, dev, target.Options{Size: 64 << 20, Writes: true, AllowDestructive: true})
	for _, qd := range []int{1, 8} {
		for _, m := range []RingMode{{Poll: true}, {Poll: true, SQPoll: true}} {
			o := Options{Runtime: time.Minute, MaxIOs: 10000, Seed: 3, Engine: EngineUring, Ring: m}
			p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: qd, Jobs: 1}
			mallocs, ios := countAllocs(t, tg, p, o)
			t.Logf("%v QD%d: %d mallocs for %d I/Os", m.Words(), qd, mallocs, ios)
			if ios != 10000 || mallocs > 1000 {
				t.Errorf("%v QD%d: %d allocations for %d I/Os (10,000 asked)", m.Words(), qd, mallocs, ios)
			}
		}
	}
}

// latLogFile is a file in the test's directory for a latency log.
func latLogFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "lat-*.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// replayAllocs: a replay takes each I/O from the trace loaded before
// the run, and allocates nothing per I/O either.
func replayAllocs(t *testing.T, tg *target.Target) {
	t.Helper()
	engines(t)
	tr := syntheticTrace(10000, 40000, tg.Size)
	pl, err := PlanReplay(tr, "alloc.log", tg.Size, 4096, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := Replay(context.Background(), tg, pl, Options{Engine: EngineUring, Seed: 3})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	mallocs, ios := after.Mallocs-before.Mallocs, r.Completed.Reads+r.Completed.Writes
	t.Logf("uring-replay: %d mallocs for %d I/Os", mallocs, ios)
	if ios != 10000 || mallocs > 1000 {
		t.Errorf("uring-replay: %d allocations for %d I/Os (10,000 in the trace)", mallocs, ios)
	}
}

// countAllocs runs p and counts the allocations of the whole run, and
// the I/Os it completed.
func countAllocs(t *testing.T, tg *target.Target, p results.Pattern, o Options) (mallocs, ios uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := Run(context.Background(), tg, p, o)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return after.Mallocs - before.Mallocs, r.Completed.Reads + r.Completed.Writes
}

func TestMaxIOsStopsEachJob(t *testing.T) {
	testenv.Root(t)
	path := filepath.Join(testenv.DirectIODir(t), "max.dat")
	tg := openPlan(t, path, target.Options{Size: 16 << 20, Writes: true})
	for _, eng := range engines(t) {
		p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: 8, Jobs: 2}
		r, err := Run(context.Background(), tg, p, Options{Runtime: time.Minute, Seed: 1, Engine: eng, MaxIOs: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if n := r.Completed.Reads + r.Completed.Writes; n != 2000 {
			t.Errorf("%s: %d I/Os completed, want 2 jobs × 1000", eng, n)
		}
		if time.Duration(r.DurationNS) >= time.Minute {
			t.Errorf("%s: ran the whole runtime", eng)
		}
	}
}

// Preconditioning writes every block of the target.
func TestPreconditionWritesEveryBlock(t *testing.T) {
	const size = 8 << 20
	for _, eng := range engines(t) {
		t.Run(eng, func(t *testing.T) {
			dev, backing := testenv.DirectIOLoopDevice(t, size)
			tg := openPlan(t, dev, target.Options{Writes: true, AllowDestructive: true})
			var phases []string
			err := Precondition(context.Background(), tg, eng, 5, 200*time.Millisecond, func(s PreconditionStep) {
				if s.Done >= 1 {
					phases = append(phases, s.Phase)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			_ = tg.Close()
			if strings.Join(phases, ",") != "fill 1/2,fill 2/2,random writes" {
				t.Errorf("phases %v", phases)
			}
			data, err := os.ReadFile(backing)
			if err != nil {
				t.Fatal(err)
			}
			zero := make([]byte, 4096)
			for off := 0; off < len(data); off += 4096 {
				if bytes.Equal(data[off:off+4096], zero) {
					t.Fatalf("block at %d never written", off)
				}
			}
		})
	}
	// A read-only target is refused.
	dev, _ := testenv.DirectIOLoopDevice(t, size)
	tg := openPlan(t, dev, target.Options{})
	if err := Precondition(context.Background(), tg, EngineAuto, 1, 0, nil); !errors.Is(err, target.ErrBadTarget) {
		t.Errorf("read-only target: %v", err)
	}
}

// The disk's counters are the whole disk's: with another stream writing to
// the same disk during the window, the result says how many of the disk's
// requests were not the run's own.
func TestOtherLoadOnTheDisk(t *testing.T) {
	testenv.Root(t)
	dir := testenv.DirectIODir(t)
	tg := openPlan(t, filepath.Join(dir, "own.dat"), target.Options{Size: 64 << 20})
	_, counted := tg.DiskStats()
	testenv.Require(t, counted, "the temp dir's disk has no /proc/diskstats entry")
	other := openPlan(t, filepath.Join(dir, "other.dat"), target.Options{Size: 64 << 20, Writes: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loaded := make(chan error, 1)
	go func() {
		_, err := Run(ctx, other, results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 0, QueueDepth: 8, Jobs: 1},
			Options{Runtime: time.Minute, Seed: 1, Engine: EnginePsync})
		loaded <- err
	}()
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 1, Jobs: 1}
	r, err := Run(context.Background(), tg, p, Options{Runtime: time.Second, Ramp: 200 * time.Millisecond, Seed: 2, Engine: EnginePsync})
	cancel()
	if lerr := <-loaded; lerr != nil && !errors.Is(lerr, context.Canceled) {
		t.Errorf("the neighbour's run: %v", lerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	d := r.Device
	t.Logf("disk: %d requests, %d not the run's; the run: %d I/Os", d.IOs, d.OtherIOs, r.Total.IOs)
	if d.IOs < r.Total.IOs || d.OtherIOs != d.IOs-r.Total.IOs || float64(d.OtherIOs) < 0.2*float64(d.IOs) {
		t.Errorf("disk %d requests, %d others, the run %d I/Os: the neighbour's writes were not told apart", d.IOs, d.OtherIOs, r.Total.IOs)
	}
	// The bytes too: a neighbour's writeback shows there first.
	if d.Bytes < r.Total.Bytes || d.OtherBytes != d.Bytes-r.Total.Bytes || float64(d.OtherBytes) < 0.2*float64(d.Bytes) || !d.OtherLoad(0, 0) {
		t.Errorf("disk %d bytes, %d others, the run %d bytes: the neighbour's writes were not told apart", d.Bytes, d.OtherBytes, r.Total.Bytes)
	}
}

// NVMe passthrough commands allocate nothing per I/O either, in a closed
// and an open loop. They need an NVMe generic device, which this
// project's machines lack: the cgroup v2 guest has one, and
// TestVMPassthrough runs this test there, naming the device in
// IOMATRIX_PASSTHRU_DEVICE.
func TestNoAllocationPerIOPassthrough(t *testing.T) {
	dev := testenv.InGuest(t, "IOMATRIX_PASSTHRU_DEVICE", "TestVMPassthrough")
	tg := openPlan(t, dev, target.Options{Size: 64 << 20, Writes: true, AllowDestructive: true})
	if tg.Info.Kind != target.KindPassthrough {
		t.Fatalf("%s: kind %q", dev, tg.Info.Kind)
	}
	for _, qd := range []int{1, 8} {
		for _, rate := range []float64{0, 2000} {
			o := Options{Runtime: time.Minute, MaxIOs: 10000, Seed: 3, Engine: EngineUring}
			p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: qd, Jobs: 1}
			if rate > 0 {
				p.Rate = results.Rate{IOPS: rate, Arrival: results.ArrivalUniform}
				o.Runtime, o.MaxIOs = 2*time.Second, 0
			}
			mallocs, ios := countAllocs(t, tg, p, o)
			t.Logf("QD%d rate %.0f: %d mallocs for %d I/Os", qd, rate, mallocs, ios)
			if (rate == 0 && ios != 10000) || ios < 1000 || mallocs > 1000 {
				t.Errorf("QD%d rate %.0f: %d allocations for %d I/Os", qd, rate, mallocs, ios)
			}
		}
	}
}
