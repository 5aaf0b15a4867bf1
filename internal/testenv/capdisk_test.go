package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

func TestCapacityDiskBucket(t *testing.T) {
	d, err := NewCapacityDisk(nil, CapacityOptions{IOPS: 100, Burst: 3, Size: 4096})
	Must(t, err)
	now := time.Unix(1000, 0)
	// An idle disk serves its burst at once, then one request every
	// 10 ms, in arrival order.
	for i, want := range []time.Duration{0, 0, 0, 10, 20, 30} {
		if got := d.Bucket().turn(now, 4096).Sub(now); got != want*time.Millisecond {
			t.Errorf("request %d at once: turn %v later, want %v", i, got, want*time.Millisecond)
		}
	}
	// After an idle spell as long as the burst, the bucket is full again.
	later := now.Add(60 * time.Millisecond)
	for i, want := range []time.Duration{0, 0, 0, 10} {
		if got := d.Bucket().turn(later, 4096).Sub(later); got != want*time.Millisecond {
			t.Errorf("request %d after idling: turn %v later, want %v", i, got, want*time.Millisecond)
		}
	}
	d.SetLimit(0, 0)
	if got := d.Bucket().turn(later, 4096); !got.Equal(later) {
		t.Errorf("no limit: turn %v later", got.Sub(later))
	}
	if iops, burst := d.Limit(); iops != 0 || burst != 1 {
		t.Errorf("Limit() = %d, %d, want 0, 1", iops, burst)
	}
	// A flush is free, unless it is a request.
	for _, costs := range []bool{false, true} {
		d, err := NewCapacityDisk(nil, CapacityOptions{IOPS: 100, Burst: 1, Size: 4096, FlushIsRequest: costs})
		Must(t, err)
		_ = d.Fsync(context.Background(), nil, 0)
		now := time.Now()
		if waits := d.Bucket().turn(now, 4096).Sub(now) > 0; waits != costs || d.Counts().Flushes != 1 {
			t.Errorf("FlushIsRequest %v: after a flush, the next request waits: %v; counts %s", costs, waits, d.Counts())
		}
	}
	// Two disks on one bucket share its rate: a request on either takes
	// the next turn; back on their own buckets, each has its own again.
	a, err := NewCapacityDisk(nil, CapacityOptions{IOPS: 1000, Size: 4096})
	Must(t, err)
	b, err := NewCapacityDisk(nil, CapacityOptions{IOPS: 1000, Size: 4096})
	Must(t, err)
	shared := NewCapacityBucket(100, 1)
	a.UseBucket(shared)
	b.UseBucket(shared)
	for i, want := range []time.Duration{0, 10, 20, 30} {
		d := []*CapacityDisk{a, b}[i%2]
		if got := d.Bucket().turn(now, 4096).Sub(now); got != want*time.Millisecond {
			t.Errorf("shared bucket, request %d: turn %v later, want %v", i, got, want*time.Millisecond)
		}
	}
	if iops, _ := b.Limit(); iops != 100 {
		t.Errorf("b on the shared bucket: limit %d, want 100", iops)
	}
	a.UseBucket(nil)
	if iops, burst := a.Limit(); iops != 1000 || burst != 10 || a.Bucket().turn(now, 4096) != now {
		t.Errorf("a on its own bucket again: %d IOPS, burst %d", iops, burst)
	}
	// The options' peak makes the requests' bucket a credit bucket.
	c, err := NewCapacityDisk(nil, CapacityOptions{IOPS: 300, Burst: 30000, PeakIOPS: 3000, Size: 4096})
	Must(t, err)
	if got, want := c.Bucket().CreditLimit(), (CreditLimit{Baseline: 300, Credits: 30000, Peak: 3000}); got != want || c.Bucket().Unit() != Requests {
		t.Errorf("IOPS 300, burst 30,000, peak 3,000: the bucket's limit %+v of %s, want %+v of requests", got, c.Bucket().Unit(), want)
	}
	for _, bad := range []CapacityOptions{{Size: 4095}, {Size: 4096, MaxRequest: 2 << 20}, {Size: 4096, IOPS: -1},
		{Size: 4096, IOPS: 300, PeakIOPS: 300}, {Size: 4096, Bandwidth: CreditLimit{Baseline: 10 << 20, Peak: 5 << 20}},
		{Size: 4096, WriteBandwidth: CreditLimit{Baseline: 1 << 20, Credits: -1}}} {
		if _, err := NewCapacityDisk(nil, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// capIOPS is the capacity the test gives its disks: far below what the
// disk serves with no limit on this project's 2-CPU machines (28,700
// random 4 KiB reads a second at QD8, measured on 2026-12-03), so that
// the limit binds and not the CPU. fio's figure runs about 0.6 % below
// it: 397.5 to 397.7 from one process in each run here, 395.1 to 398.5 in
// total from two.
const capIOPS = 400

// A bucket with a peak is a volume's burst credits: with a baseline of
// 300 a second, 60,000 credits and a peak of 3,000, a volume that idled
// serves a closed loop at 3,000 a second for 60,000/2,700 = 22.2 s
// (66,667 requests, 60,000 above the baseline), then at 300 a second;
// idle for 100 s it earns 30,000 credits back, 11.1 s at the peak. On a
// simulated clock: each request arrives when the one before it is
// served.
func TestCapacityBucketCredits(t *testing.T) {
	b := NewCapacityBucket(300, 60000)
	b.SetPeak(3000)
	start := time.Unix(1000, 0)
	// run serves requests back to back from at until one waits more than
	// twice the peak's interval (the credits are spent), and says how
	// many were served before and when the last of them was.
	run := func(at time.Time) (n int, end time.Time) {
		for {
			turn := b.turn(at, 1)
			if turn.Sub(at) > 2*time.Second/3000 {
				return n, at
			}
			n++
			at = turn
		}
	}
	n, end := run(start)
	if secs := end.Sub(start).Seconds(); math.Abs(float64(n)-66667) > 100 || math.Abs(secs-22.22) > 0.05 {
		t.Errorf("a full bucket: %d requests in %.2f s at the peak, want 66,667 in 22.22 s", n, secs)
	}
	// Spent: one request every 1/300 s.
	at := end
	for range 300 {
		at = b.turn(at, 1)
	}
	if secs := at.Sub(end).Seconds(); math.Abs(secs-1) > 0.01 {
		t.Errorf("spent: 300 requests took %.3f s, want 1", secs)
	}
	// Idle for 100 s: 30,000 credits back.
	idle := at.Add(100 * time.Second)
	n, end = run(idle)
	if secs := end.Sub(idle).Seconds(); math.Abs(float64(n)-33333) > 100 || math.Abs(secs-11.11) > 0.05 {
		t.Errorf("after 100 s idle: %d requests in %.2f s at the peak, want 33,333 in 11.11 s", n, secs)
	}
	// No peak: the credits are served at once, as before.
	b.SetPeak(0)
	if got := b.turn(idle.Add(time.Hour), 1); !got.Equal(idle.Add(time.Hour)) {
		t.Errorf("no peak, a full bucket: turn %v later", got.Sub(idle.Add(time.Hour)))
	}
}

// A CapacityDisk of 400 IOPS serves 400 random 4 KiB reads a second to
// fio at queue depth 8, 400 in total to two fio processes in two blkio
// cgroups at once, and 400 writes a second: its capacity is the
// device's, whoever asks. The loop device's diskstats count the very
// requests the disk served, and a file system's fsyncs reach it as
// flushes.
func TestCapacityDisk(t *testing.T) {
	Root(t)
	fio := Command(t, "fio")
	blkio := filepath.Join(sysfs.CgroupRoot, "blkio")
	_, err := os.Stat(filepath.Join(blkio, "cgroup.procs"))
	Require(t, err == nil, "no cgroup v1 blkio hierarchy at "+blkio)
	disk, dev := CapacityLoop(t, CapacityOptions{IOPS: capIOPS, Size: 256 << 20})
	iops, burst := disk.Limit()
	t.Logf("%s: %d IOPS, burst %d", dev, iops, burst)
	stats := deviceStats(t, dev)

	const runtime, ramp = 3 * time.Second, 500 * time.Millisecond
	job := func(rw string) []string {
		return []string{"--name=" + rw, "--filename=" + dev, "--rw=" + rw, "--bs=4k", "--direct=1",
			"--ioengine=libaio", "--iodepth=8", "--time_based", "--runtime=" + runtime.String(),
			"--ramp_time=" + ramp.String(), "--randrepeat=0", "--output-format=json"}
	}
	within := func(what string, got float64) {
		t.Helper()
		dev := got/capIOPS - 1
		t.Logf("%s: %.1f IOPS, %+.2f %% off %d", what, got, 100*dev, capIOPS)
		if math.Abs(dev) > 0.05 {
			t.Errorf("%s: %.1f IOPS, more than 5 %% off the disk's %d", what, got, capIOPS)
		}
	}
	// served checks that the disk served what the block layer counted.
	served := func(stats func() sysfs.DiskStats, before sysfs.DiskStats, c CapacityCounts) {
		t.Helper()
		after := stats()
		reads, writes, flushes := int64(after.ReadIOs-before.ReadIOs), int64(after.WriteIOs-before.WriteIOs), int64(after.FlushIOs-before.FlushIOs)
		discards := int64(after.DiscardIOs - before.DiscardIOs)
		if reads != c.Reads || writes != c.Writes || flushes != c.Flushes || discards != c.Discards {
			t.Errorf("diskstats: %d reads, %d writes, %d flushes, %d discards; the disk: %s", reads, writes, flushes, discards, c)
		}
		if c.Largest > 128<<10 {
			t.Errorf("a request of %d B reached the disk, more than its largest, 128 KiB", c.Largest)
		}
	}

	for _, rw := range []string{"randread", "randwrite"} {
		t.Run(rw, func(t *testing.T) {
			disk.Reset()
			before := stats()
			cpu := processCPU(t)
			r := runFio(t, fio, job(rw))
			c := disk.Counts()
			t.Logf("disk: %s; its CPU, with the test's: %v a request", c, (processCPU(t)-cpu)/time.Duration(max(c.Requests(), 1)))
			within("fio "+rw+" 4k QD8", r.Read.IOPS+r.Write.IOPS)
			served(stats, before, c)
		})
	}
	// A request larger than the disk's largest reaches it in pieces of
	// the largest, each one request for the limit and for diskstats.
	t.Run("split", func(t *testing.T) {
		disk.Reset()
		before := stats()
		const reads = 25
		r := runFio(t, fio, []string{"--name=split", "--filename=" + dev, "--rw=read", "--bs=1m", "--direct=1",
			"--ioengine=libaio", "--iodepth=2", "--number_ios=" + strconv.Itoa(reads), "--output-format=json"})
		c := disk.Counts()
		t.Logf("fio: %d reads of 1 MiB; disk: %s", r.Read.IOs, c)
		if r.Read.IOs != reads || c.Reads != 8*reads || c.Largest != 128<<10 {
			t.Errorf("%d reads of 1 MiB reached the disk as %d (largest %d B), want %d of 128 KiB", r.Read.IOs, c.Reads, c.Largest, 8*reads)
		}
		served(stats, before, c)
	})
	t.Run("two cgroups", func(t *testing.T) {
		disk.Reset()
		before := stats()
		var cmds [2]*exec.Cmd
		var outs [2]*os.File
		for i := range cmds {
			cg := filepath.Join(blkio, fmt.Sprintf("iomatrix-capdisk-%d-%d", os.Getpid(), i))
			Must(t, os.Mkdir(cg, 0o755))
			t.Cleanup(func() { RemoveCgroup(t, blkio, cg) })
			out, err := os.Create(filepath.Join(t.TempDir(), "fio.json"))
			Must(t, err)
			outs[i] = out
			// The shell joins the cgroup and becomes fio.
			cmds[i] = exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(cg, "cgroup.procs"), fio}, job("randread")...)...)
			cmds[i].Stdout, cmds[i].Stderr = out, out
			cmds[i].SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
			Must(t, cmds[i].Start())
		}
		var total float64
		for i, cmd := range cmds {
			err := cmd.Wait()
			out, _ := os.ReadFile(outs[i].Name())
			_ = outs[i].Close()
			if err != nil {
				t.Fatalf("fio in cgroup %d: %v\n%s", i, err, tail(out, 2000))
			}
			r := parseFio(t, out)
			t.Logf("cgroup %d: %.1f IOPS", i, r.Read.IOPS)
			if r.Read.IOPS < capIOPS/4 {
				t.Errorf("cgroup %d had %.1f IOPS, less than a quarter of the disk's: the other took its turns", i, r.Read.IOPS)
			}
			total += r.Read.IOPS
		}
		c := disk.Counts()
		t.Logf("disk: %s", c)
		within("two fio randread 4k QD8 in two blkio cgroups, in total", total)
		served(stats, before, c)
	})
	// A discard punches a hole in the backing file: what fio wrote is
	// freed.
	t.Run("discard", func(t *testing.T) {
		blkdiscard := Command(t, "blkdiscard")
		disk.Reset()
		before := stats()
		if out, err := exec.Command(blkdiscard, dev).CombinedOutput(); err != nil {
			t.Fatalf("blkdiscard %s: %v %s", dev, err, out)
		}
		c := disk.Counts()
		var st unix.Stat_t
		Must(t, unix.Stat(disk.backing.Name(), &st))
		t.Logf("disk: %s; backing file: %d blocks", c, st.Blocks)
		if c.Discards == 0 || st.Blocks != 0 {
			t.Errorf("blkdiscard: %d discards, %d blocks left in the backing file", c.Discards, st.Blocks)
		}
		served(stats, before, c)
	})
	t.Run("file system", func(t *testing.T) {
		disk, dev, mnt := CapacityDir(t, CapacityOptions{IOPS: capIOPS, Size: 256 << 20})
		stats := deviceStats(t, dev)
		before := stats()
		// Each write and its fdatasync: the file's data, ext4's journal
		// and a flush.
		r := runFio(t, fio, []string{"--name=sync", "--filename=" + filepath.Join(mnt, "f"), "--size=1m",
			"--rw=randwrite", "--bs=4k", "--ioengine=psync", "--fdatasync=1", "--number_ios=50",
			"--output-format=json"})
		c := disk.Counts()
		t.Logf("disk: %s; fio: %d writes", c, r.Write.IOs)
		if c.Flushes < r.Write.IOs {
			t.Errorf("%d flushes for %d fdatasyncs", c.Flushes, r.Write.IOs)
		}
		served(stats, before, c)
	})
}

// processCPU is the CPU time this process has used: the disk's, which
// runs in it, and the test's.
func processCPU(t *testing.T) time.Duration {
	var ru unix.Rusage
	Must(t, unix.Getrusage(unix.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// deviceStats returns a function that reads dev's diskstats.
func deviceStats(t *testing.T, dev string) func() sysfs.DiskStats {
	var st unix.Stat_t
	Must(t, unix.Stat(dev, &st))
	num := sysfs.DevNumFromDev(st.Rdev)
	return func() sysfs.DiskStats {
		t.Helper()
		s, err := sysfs.Default().DiskStats(num)
		Must(t, err)
		return s
	}
}

type fioDirection struct {
	IOs  int64   `json:"total_ios"`
	IOPS float64 `json:"iops"`
}

type fioJob struct {
	Read  fioDirection `json:"read"`
	Write fioDirection `json:"write"`
}

func runFio(t *testing.T, fio string, args []string) fioJob {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, fio, args...).Output()
	if err != nil {
		t.Fatalf("fio %v: %v\n%s", args, err, tail(out, 2000))
	}
	return parseFio(t, out)
}

func parseFio(t *testing.T, out []byte) fioJob {
	t.Helper()
	var r struct{ Jobs []fioJob }
	if err := json.Unmarshal(out, &r); err != nil || len(r.Jobs) != 1 {
		t.Fatalf("fio's output: %v, %d jobs\n%s", err, len(r.Jobs), tail(out, 2000))
	}
	return r.Jobs[0]
}

// MariaDB keeps its data on a CapacityDir and sysbench runs at a fixed
// rate against it: at 50 transactions a second on 1000 IOPS it keeps up,
// at 300 on 100 IOPS it falls behind, and the report says which.
func TestSysbenchOnCapacityDisk(t *testing.T) {
	disk, _, mnt := CapacityDir(t, CapacityOptions{Size: 1 << 30})
	srv := MariaDB(t, MariaDBOptions{VolumeDir: mnt})
	if !strings.HasPrefix(srv.DataDir(), mnt+"/") {
		t.Fatalf("data directory %s is not on the volume %s", srv.DataDir(), mnt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := SysbenchOptions{Tables: 2, TableSize: 20000, Seconds: 1}
	_ = Sysbench(ctx, t, srv, opts)() // creates the tables, at no limit
	for _, run := range []struct {
		iops, rate int
		behind     bool
	}{{1000, 50, false}, {100, 300, true}} {
		disk.SetLimit(run.iops, 0)
		disk.Reset()
		opts.Seconds, opts.Rate = 4, run.rate
		out := Sysbench(ctx, t, srv, opts)()
		r, err := ParseSysbench(out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		c := disk.Counts()
		t.Logf("%d IOPS, %d/s offered: %.2f/s achieved, p%d %v, longest queue %d, behind %v; disk: %s",
			run.iops, r.Rate, r.TPS, r.Percentile, r.LatencyPercentile, r.MaxQueue(), r.Behind(), c)
		if r.Rate != run.rate || r.Percentile != 95 || r.Behind() != run.behind || c.Writes == 0 || c.Flushes == 0 {
			t.Errorf("%d IOPS, %d/s: behind %v, want %v; the disk served %s\n%s", run.iops, run.rate, r.Behind(), run.behind, c, out)
		}
	}
}

// pgbench at a fixed rate on PostgreSQL whose data is on a capacity
// disk: the server (run as postgres) reaches its data directory on the
// volume below the test's root-only temp dir, its writes and the WAL's
// flushes are the disk's, and pgbench keeps its rate at no limit.
func TestPgbenchOnCapacityDisk(t *testing.T) {
	disk, _, mnt := CapacityDir(t, CapacityOptions{Size: 1 << 30})
	srv := PostgreSQL(t, PostgreSQLOptions{VolumeDir: mnt})
	if !strings.HasPrefix(srv.DataDir(), mnt+"/") {
		t.Fatalf("data directory %s is not on the volume %s", srv.DataDir(), mnt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	PgbenchInit(ctx, t, srv, 1)
	disk.Reset()
	r := Pgbench(ctx, t, srv, PgbenchOptions{Clients: 2, Rate: 50, Duration: 3 * time.Second})()
	c := disk.Counts()
	t.Logf("50/s offered: %.2f/s achieved, p95 %v, schedule lag %v; disk: %s", r.TPS, r.P95, r.Lag, c)
	// pgbench's --rate schedule is a Poisson process: 3 s at 50/s starts
	// 150 ± 12 transactions, so the count alone cannot tell a client that
	// kept up. Its schedule lag does (a few milliseconds when it keeps up),
	// and the count is held to three standard deviations of the schedule.
	nominal := 50 * 3.0
	if float64(r.Transactions) < nominal-3*math.Sqrt(nominal) || r.Lag > 100*time.Millisecond ||
		c.Writes == 0 || c.Flushes < int64(r.Transactions)/2 {
		t.Errorf("pgbench %+v; the disk served %s", r, c)
	}
}
