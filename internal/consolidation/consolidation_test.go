package consolidation

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// The load: each client at a fixed rate, an open loop, set so that the
// machine's two CPUs stay well below half busy (the I/O, not the CPUs,
// decides) and each database does hundreds of I/Os a second.
const (
	sysbenchRate    = 50  // transactions a second, 8 threads
	sysbenchThreads = 8   //
	pgbenchRate     = 100 // transactions a second, 4 clients
	pgbenchClients  = 4   //
	loadSeconds     = 40  // each phase's load
	// bound is each system's latency bound in the workload file: the
	// I/O response time a commit bears, the user's requirement.
	bound = "p99<10ms"
)

// The two capacities of the shared volume, in requests a second: one far
// above the two loads' sum (about 1,300), one below it.
var capacities = []struct {
	iops int
	fits bool // what the outcome must be, and fit's verdict with it
}{
	{20000, true},
	{600, false},
}

// system is one database on the shared volume: its server, its device
// (a loop device of its own drawing on the volume's bucket) and its
// cgroup.
type system struct {
	name   string
	disk   *testenv.CapacityDisk
	dev    string
	devNum string // MAJ:MIN
	mnt    string // its file system's mount point
	cgroup string
}

// outcome is what a database did in one phase, by its client's figures.
type outcome struct {
	offered, done float64 // transactions offered and done
	tps           float64
	p95           time.Duration
	p99           time.Duration // its transactions', from their scheduled start
	behind        bool
	iops          float64       // the cgroup's, as observe saw it
	volumeP99     time.Duration // its requests' latency at the volume
	ioP99         time.Duration // its device's, queued to completed (blockTrace)
	ios           uint64        // how many its ioP99 is of
	busy          float64       // the machine's CPUs, 0 to 1 (outcome "cpu" only)
}

func (o outcome) String() string {
	return fmt.Sprintf("%.0f of %.0f transactions (%.1f/s), p95 %v, p99 %v, behind %v; %.0f IOPS, I/O p99 %v (%d I/Os), volume p99 %v",
		o.done, o.offered, o.tps, o.p95.Round(10*time.Microsecond), o.p99.Round(10*time.Microsecond), o.behind, o.iops, o.ioP99.Round(time.Microsecond), o.ios,
		o.volumeP99.Round(time.Microsecond))
}

// kept: at least 99 % of the transactions offered were done, and the
// client did not fall behind its schedule.
func (o outcome) kept() bool { return !o.behind && o.done >= 0.99*o.offered }

func TestConsolidation(t *testing.T) {
	testenv.Root(t)
	goTool := testenv.Command(t, "go")
	dir := t.TempDir()
	if keep := os.Getenv("IOMATRIX_CONSOLIDATION_KEEP"); keep != "" {
		// Its files kept for a look afterwards: observations, workload,
		// sweeps and rehearsals.
		t.Cleanup(func() {
			_ = exec.Command("sh", "-c", `mkdir -p "$1" && cp "$0"/*.json "$0"/*.yaml "$1"/`, dir, keep).Run()
		})
	}
	bin := filepath.Join(dir, "iomatrix")
	if out, err := exec.Command(goTool, "build", "-o", bin, "github.com/iomatrix/iomatrix/cmd/iomatrix").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// The volume: one bucket, shared by the databases' devices during the
	// consolidation, and by the device the rehearsal runs on.
	volume := testenv.NewCapacityBucket(0, 0)
	shop := newSystem(t, "shop", 2<<30)
	ledger := newSystem(t, "ledger", 1<<30)
	rdisk, rdev := testenv.CapacityLoop(t, testenv.CapacityOptions{Size: 1 << 30})
	rdisk.UseBucket(volume)

	const pw = "Obs3rverPw"
	mdb := testenv.MariaDB(t, testenv.MariaDBOptions{VolumeDir: shop.mnt, CgroupProcs: filepath.Join(shop.cgroup, "cgroup.procs"), ObserverPassword: pw})
	// PostgreSQL's shared buffers hold its database (scale 10, 160 MB):
	// its reads are the buffers', not the page cache's, which this
	// machine's memory manager reclaims after seconds of idleness (DAMON
	// pageout), so that the consolidation would read what the observation
	// found in memory.
	pg := testenv.PostgreSQL(t, testenv.PostgreSQLOptions{VolumeDir: ledger.mnt, CgroupProcs: filepath.Join(ledger.cgroup, "cgroup.procs"),
		ObserverPassword: pw, Settings: []string{"checkpoint_timeout=30s"}, SharedBuffers: "256MB"})
	testenv.Sysbench(ctx, t, mdb, testenv.SysbenchOptions{Threads: sysbenchThreads, Seconds: 2, Rate: sysbenchRate})()
	testenv.PgbenchInit(ctx, t, pg, 10)
	env := []string{"SHOP_DSN=observer:" + pw + "@unix(" + mdb.Socket() + ")/", "LEDGER_PG=" + pg.ObserverDSN(), "PGPASSWORD=" + pw}

	// Alone: each on a volume of its own, of no limit, both at once (the
	// CPUs as busy as in the consolidation), observed.
	load := func(name string) map[string]outcome {
		return runLoads(ctx, t, bin, dir, name, env, mdb, pg, map[string]*system{"shop": shop, "ledger": ledger})
	}
	alone := load("alone")
	workload := filepath.Join(dir, "alone.yaml")
	withBounds(t, workload)
	if data, err := os.ReadFile(workload); err == nil {
		t.Logf("the workload observed:\n%s", data)
	}
	for _, s := range []string{"shop", "ledger"} {
		t.Logf("alone: %s: %s", s, alone[s])
		if !alone[s].kept() {
			t.Fatalf("%s alone did not keep its rate: %s", s, alone[s])
		}
	}

	for _, c := range capacities {
		t.Run(strconv.Itoa(c.iops), func(t *testing.T) {
			// Prediction: the volume measured, then fit's lookup and
			// rehearsal with the caps it proposes, on the rehearsal's
			// device alone on the volume.
			for _, s := range []*system{shop, ledger} {
				s.disk.UseBucket(nil)
			}
			volume.SetLimit(c.iops, 0)
			// A rehearsal the CPUs held back is inconclusive (exit 3),
			// and done again once the machine is quiet.
			var ans fit.Answer
			var reh string
			for try := 1; ; try++ {
				waitQuiet(t)
				res := filepath.Join(dir, fmt.Sprintf("volume-%d-%d.json", c.iops, try))
				run(t, bin, nil, "sweep", rdev, "--profile", lookupProfile(t, dir), "--runtime", "2s", "--ramp", "250ms",
					"--allow-destructive", "-o", res)
				reh = filepath.Join(dir, fmt.Sprintf("rehearsal-%d-%d.json", c.iops, try))
				stdout, code := runCode(t, bin, nil, "fit", res, "--workload", workload, "--rehearse", rdev, "--with-caps",
					"--allow-destructive", "--runtime", strconv.Itoa(loadSeconds)+"s", "--ramp", "0s", "--out", reh, "--format", "json")
				ans = fit.Answer{}
				err := json.Unmarshal([]byte(stdout), &ans)
				if err != nil || ans.Rehearsal == nil || code != map[bool]int{true: 0, false: 1}[ans.Rehearsal.Fits] && !(code == 3 && ans.Rehearsal.Inconclusive) {
					t.Fatalf("fit: exit %d, %v\n%s", code, err, stdout)
				}
				t.Logf("fit at %d IOPS: lookup fits %v (%s), rehearsal fits %v, inconclusive %v", c.iops, ans.Rehearsal.LookupFits, ans.Cell,
					ans.Rehearsal.Fits, ans.Rehearsal.Inconclusive)
				if !ans.Rehearsal.Inconclusive {
					break
				}
				if try == 5 {
					t.Fatalf("at %d IOPS the rehearsal was inconclusive five times: the CPUs were never idle enough", c.iops)
				}
			}
			predicted := rehearsed(t, reh, ans.Rehearsal)

			// Reality: both databases on the volume, each under the cap
			// the lookup proposed on its own device. An outcome between
			// FITS and not (a p95 from 1.5x to 3x its latency alone) is
			// measured again, alone first, up to three times: a p95 of
			// 40 s of transactions moves by a third from one run to the
			// next on this 2-CPU machine (8.6 to 11.2 ms for sysbench
			// alone), more with other packages' tests beside it.
			var fits bool
			for try := 1; ; try++ {
				if try > 1 {
					for _, s := range []*system{shop, ledger} {
						s.disk.UseBucket(nil)
					}
					alone = load(fmt.Sprintf("alone-%d-%d", c.iops, try))
				}
				for _, s := range []*system{shop, ledger} {
					s.disk.UseBucket(volume)
					if p := predicted[s.name]; p.Cap != nil {
						setCap(t, s, p.Cap.ReadIOPS, p.Cap.WriteIOPS)
						t.Logf("  %s capped at riops=%d,wiops=%d on %s", s.name, p.Cap.ReadIOPS, p.Cap.WriteIOPS, s.dev)
					}
				}
				real := load(fmt.Sprintf("together-%d-%d", c.iops, try))
				for _, s := range []*system{shop, ledger} {
					setCap(t, s, 0, 0)
				}
				var fails bool
				fits, fails = judge(t, alone, real, predicted)
				if fits != fails && fits == c.fits {
					break
				}
				t.Logf("at %d IOPS the outcome is fits %v, fails %v, want fits %v (try %d); the machine's CPUs were %.1f %% busy, %.1f %% alone",
					c.iops, fits, fails, c.fits, try, 100*real["cpu"].busy, 100*alone["cpu"].busy)
				if try == 3 {
					t.Fatalf("at %d IOPS the outcome is fits %v, fails %v three times, want fits %v: the test's capacities are too near the edge", c.iops, fits, fails, c.fits)
				}
			}
			if ans.Rehearsal.Fits != fits {
				t.Errorf("at %d IOPS fit says fits %v, the consolidation %v", c.iops, ans.Rehearsal.Fits, fits)
			}
		})
	}
}

// judge tells whether the consolidation fits (each database kept its
// offered rate with a p95 at most 1.5x its p95 alone) and whether it
// fails (one fell behind, or its p95 is more than 3x), and logs the
// prediction beside each system's outcome.
func judge(t *testing.T, alone, real map[string]outcome, predicted map[string]prediction) (fits, fails bool) {
	t.Helper()
	fits = true
	for _, s := range []string{"shop", "ledger"} {
		a, r, p := alone[s], real[s], predicted[s]
		ratio := float64(r.p95) / float64(a.p95)
		t.Logf("  reality: %s: %s; p95 %.2fx alone", s, r, ratio)
		fits = fits && r.kept() && ratio <= 1.5
		fails = fails || !r.kept() || ratio > 3
		io := r.ioP99.Seconds() * 1e6
		t.Logf("  %s: rehearsal %.0f IOPS (%.0f and %.0f flushes) against %.0f observed (%+.1f %%); p99 against its I/O's %.0f µs: response %.0f µs (%.2fx), service %.0f µs (%.2fx); response against its transactions' p99 from their scheduled start %v (%.2fx)",
			s, p.iops(), p.AchievedIOPS, p.flushIOPS, r.iops, 100*(p.iops()/r.iops-1), io, p.ResponseP99US, p.ResponseP99US/io, p.serviceP99US, p.serviceP99US/io,
			r.p99.Round(10*time.Microsecond), p.ResponseP99US/(r.p99.Seconds()*1e6))
	}
	return fits, fails
}

// newSystem makes a database's device: a capacity disk with ext4 on it,
// mounted, and a v1 blkio cgroup.
func newSystem(t *testing.T, name string, size int64) *system {
	t.Helper()
	disk, dev, mnt := testenv.CapacityDir(t, testenv.CapacityOptions{Size: size})
	var st unix.Stat_t
	testenv.Must(t, unix.Stat(dev, &st))
	return &system{name: name, disk: disk, dev: dev, devNum: fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), mnt: mnt, cgroup: testenv.BlkioGroup(t, "consolidation-"+name)}
}

// setCap sets (or, at 0, removes) a system's read and write IOPS caps on
// its own device.
func setCap(t *testing.T, s *system, r, w uint64) {
	t.Helper()
	for _, f := range []struct {
		file string
		v    uint64
	}{{"blkio.throttle.read_iops_device", r}, {"blkio.throttle.write_iops_device", w}} {
		testenv.Must(t, os.WriteFile(filepath.Join(s.cgroup, f.file), []byte(s.devNum+" "+strconv.FormatUint(f.v, 10)), 0))
	}
}

// lookupProfile is the volume's sweep for fit's lookup: the databases'
// largest page, two read shares around theirs, and the concurrencies
// from one up.
func lookupProfile(t *testing.T, dir string) string {
	p := filepath.Join(dir, "lookup.yaml")
	var b strings.Builder
	b.WriteString("name: lookup\npatterns:\n")
	for _, r := range []int{0, 50} {
		for _, qd := range []int{1, 2, 4, 16} {
			fmt.Fprintf(&b, "  - {block_size: 16k, read_pct: %d, queue_depth: %d}\n", r, qd)
		}
	}
	testenv.Must(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// withBounds adds the latency bound to each system of a workload file.
func withBounds(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	testenv.Must(t, err)
	out := regexp.MustCompile(`(?m)^(    block_size: .*)$`).ReplaceAll(data, []byte("$1\n    latency: \""+bound+"\""))
	testenv.Must(t, os.WriteFile(file, out, 0o644))
}

// runLoads runs both loads at once for loadSeconds under observe, and
// returns each system's outcome, and the machine's CPU use under "cpu";
// observe's document is NAME.json and its workload file NAME.yaml in dir.
func runLoads(ctx context.Context, t *testing.T, bin, dir, name string, env []string, mdb *testenv.MariaDBServer, pg *testenv.PostgreSQLServer,
	systems map[string]*system) map[string]outcome {
	t.Helper()
	waitQuiet(t)
	obsFile := filepath.Join(dir, name+".json")
	// The databases' devices, named: observe takes real disks only by
	// default, and --v1-enable-counters sets its rule on those it takes.
	obs := exec.Command(bin, "observe", filepath.Base(systems["shop"].dev), filepath.Base(systems["ledger"].dev), "--cgroup", systems["shop"].cgroup+"=shop", "--cgroup", systems["ledger"].cgroup+"=ledger",
		"--mysql", "shop=env:SHOP_DSN", "--postgres", "ledger=env:LEDGER_PG", "--v1-enable-counters",
		"--interval", "1s", "--save-every", "1s", "-o", obsFile, "--workload", filepath.Join(dir, name+".yaml"))
	obs.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	obs.Stderr = &stderr
	testenv.Must(t, obs.Start())
	testenv.Until(t, 30*time.Second, "observe's first save of "+obsFile, func() bool {
		fi, err := os.Stat(obsFile)
		return err == nil && fi.Size() > 0
	})
	devs := map[string]string{}
	for n, s := range systems {
		s.disk.Reset()
		devs[n] = s.devNum
	}
	trace := startBlockTrace(t, devs)
	before := testenv.MachineTimes(t)
	waitSys := testenv.Sysbench(ctx, t, mdb, testenv.SysbenchOptions{Threads: sysbenchThreads, Seconds: loadSeconds, Rate: sysbenchRate})
	waitPg := testenv.Pgbench(ctx, t, pg, testenv.PgbenchOptions{Clients: pgbenchClients, Rate: pgbenchRate, Duration: loadSeconds * time.Second})
	sb, err := testenv.ParseSysbench(waitSys())
	testenv.Must(t, err)
	pb := waitPg()
	after := testenv.MachineTimes(t)
	lat, lost := trace.stop(t)
	if lost > 0 {
		t.Logf("%s: the block trace lost %d events: its I/O latencies are of those it kept", name, lost)
	}
	testenv.Must(t, obs.Process.Signal(syscall.SIGINT))
	// Interrupted, observe saves its document and its workload file, and
	// exits 0.
	if err := obs.Wait(); err != nil {
		t.Fatalf("observe: %v\n%s", err, stderr.String())
	}
	busy := float64(after.Busy-before.Busy) / float64(after.Total()-before.Total())
	t.Logf("%s: the machine's CPUs %.1f %% busy", name, 100*busy)
	doc, err := results.ReadObservationFile(obsFile)
	testenv.Must(t, err)
	out := map[string]outcome{"cpu": {busy: busy}}
	queue := 0
	if n := len(sb.Intervals); n > 0 {
		queue = sb.Intervals[n-1].Queue
	}
	out["shop"] = outcome{offered: float64(sb.Transactions) + float64(queue), done: float64(sb.Transactions), tps: sb.TPS,
		p95: sb.LatencyPercentile, p99: sb.HistogramPercentile(99), behind: sb.Behind()}
	nominal := float64(pgbenchRate * loadSeconds)
	// pgbench drops the transactions it had no time to start: those of
	// its schedule it is late on at the end. Its lag, on average, tells
	// a client that kept up (a few milliseconds) from one behind.
	out["ledger"] = outcome{offered: nominal - 3*math.Sqrt(nominal), done: float64(pb.Transactions), tps: pb.TPS, p95: pb.P95, p99: pb.Percentile(99),
		behind: pb.Lag > 100*time.Millisecond}
	for n, s := range systems {
		o := out[n]
		for _, ds := range doc.Systems {
			if ds.Name == n && ds.IO != nil && ds.IO.Summary != nil {
				o.iops = ds.IO.Summary.Mean["reads"] + ds.IO.Summary.Mean["writes"]
			}
		}
		o.volumeP99 = time.Duration(s.disk.Latency().Percentile(99))
		o.ioP99, o.ios = time.Duration(lat[n].hist.Percentile(99)), lat[n].hist.Count()
		if lat[n].unmatched > 0 {
			t.Logf("%s: %s: %d completions of no bio in the trace", name, n, lat[n].unmatched)
		}
		out[n] = o
	}
	return out
}

// waitQuiet waits, up to three minutes, until the machine's CPUs are
// less than a third busy for three seconds in a row, the databases idle:
// on this 2-CPU machine other packages' tests run beside this one, and a
// phase measured while they take the CPUs measures them.
func waitQuiet(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	last, lastAt, quiet := testenv.MachineTimes(t), start, 0
	idle := testenv.Poll(ctx, func() bool {
		if time.Since(lastAt) < time.Second {
			return false // a second of the machine's CPU time is one sample
		}
		now := testenv.MachineTimes(t)
		busy := float64(now.Busy-last.Busy) / float64(max(now.Total()-last.Total(), 1))
		last, lastAt = now, time.Now()
		if busy < 1.0/3 {
			quiet++
		} else {
			quiet = 0
		}
		return quiet == 3
	})
	switch waited := time.Since(start).Round(time.Second); {
	case !idle:
		t.Logf("the CPUs were not idle for three seconds in three minutes: measuring anyway")
	case waited > 4*time.Second:
		t.Logf("waited %v for idle CPUs", waited)
	}
}

func run(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	out, code := runCode(t, bin, env, args...)
	if code != 0 {
		t.Fatalf("iomatrix %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func runCode(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("iomatrix %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	if code != 0 && code != 1 && code != 3 {
		t.Fatalf("iomatrix %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	t.Logf("iomatrix %s: exit %d\n%s", strings.Join(args, " "), code, tailOf(stderr.String(), 1500))
	return stdout.String(), code
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// prediction is a system's rehearsal: the verdict's figures, and from
// the rehearsal's document its I/Os' service time (submission to
// completion: a response time less the wait on the schedule) and its
// syncs a second, each a flush the kernel counts as a write, as it
// counted the database's: the rehearsal's IOPS to hold to the cgroup's
// are its reads and writes and its flushes.
type prediction struct {
	results.RehearsedSystem
	serviceP99US, flushIOPS float64
}

func (p prediction) iops() float64 { return p.AchievedIOPS + p.flushIOPS }

func rehearsed(t *testing.T, file string, reh *results.Rehearsal) map[string]prediction {
	t.Helper()
	doc, err := results.ReadDocumentFile(file)
	testenv.Must(t, err)
	out := map[string]prediction{}
	for _, rs := range reh.Systems {
		p := prediction{RehearsedSystem: rs}
		for _, r := range doc.Results {
			if r.Name != rs.Name {
				continue
			}
			if l := r.Total.ServiceLatNS; l != nil {
				p.serviceP99US = float64(l.P99) / 1e3
			}
			if r.Syncs != nil && doc.Settings.RuntimeNS > 0 {
				p.flushIOPS = float64(r.Syncs.Completed) / (float64(doc.Settings.RuntimeNS+doc.Settings.RampNS) / 1e9)
			}
		}
		out[rs.Name] = p
		t.Logf("  rehearsal: %s: %.0f IOPS of %.0f scheduled and %.0f flushes, response p99 %.0f µs, service p99 %.0f µs, CPU wait %.1f %%, fits %v %s",
			rs.Name, rs.AchievedIOPS, rs.ScheduledIOPS, p.flushIOPS, rs.ResponseP99US, p.serviceP99US, rs.CPUWaitPct, rs.Fits, rs.Why)
	}
	return out
}
