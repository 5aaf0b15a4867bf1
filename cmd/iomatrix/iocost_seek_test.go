package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// The seek device's service times: a request that starts where the
// previous one ended, and any other. Long beside the path's own cost per
// request (tens of µs: the loop worker, the FUSE round trip), so that
// the device, not the CPU, sets each run's IOPS.
const (
	seekSeq  = 2 * time.Millisecond
	seekRand = 8 * time.Millisecond
)

// seekRun is one run on the seek device: a tool's IOPS and own CPU (% of
// one), the machine's CPUs busy and stolen meanwhile (% of all), the requests the
// block layer completed and merged (/sys/block/DEV/stat), and what the
// device served.
type seekRun struct {
	iops, cpu, machine, stolen float64
	requests, merged           uint64
	counts                     testenv.SeekCounts
}

func (r seekRun) String() string {
	return fmt.Sprintf("%.0f IOPS, CPU %.0f %% of one, machine %.0f %% busy, %.0f %% stolen; block layer: %d requests, %d merges; device: %v",
		r.iops, r.cpu, r.machine, r.stolen, r.requests, r.merged, r.counts)
}

// measureSeek resets the device and returns what ends the run: it fills
// r with what the machine, the block layer and the device saw since.
func measureSeek(t *testing.T, dev string, disk *testenv.SeekDisk) (end func(r *seekRun)) {
	t.Helper()
	disk.Reset()
	stat := func() (requests, merged uint64) {
		b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "stat"))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b))
		for _, i := range []int{0, 4} { // reads, writes: completed, merged
			n, _ := strconv.ParseUint(f[i], 10, 64)
			m, _ := strconv.ParseUint(f[i+1], 10, 64)
			requests, merged = requests+n, merged+m
		}
		return requests, merged
	}
	busy := machineBusy(t)
	r0, m0 := stat()
	return func(r *seekRun) {
		r.machine, r.stolen = busy()
		r.counts = disk.Counts()
		r1, m1 := stat()
		r.requests, r.merged = r1-r0, m1-m0
	}
}

// iocostCells writes the built-in iocost profile's cells that run with
// request merging off (its 4K cells) as profile files of one cell each,
// named by direction and access ("read-sequential"). Each file parsed
// back must give the built-in's pattern and nomerges: those cells and no
// others. Their QoS loads are left out: they run after the closed-loop
// figure this test compares.
func iocostCells(t *testing.T, dir string) map[string]string {
	t.Helper()
	prof, err := profiles.Builtin("iocost")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, n := range prof.Nomerges {
		p := n.Shape
		data := fmt.Sprintf("name: iocost-cell\npatterns:\n  - {access: %s, block_size: %d, read_pct: %d, queue_depth: %d, nomerges: %d}\n",
			p.Access, p.BlockSize, p.ReadPct, p.QueueDepth, n.Value)
		back, err := profiles.Parse("cell.yaml", []byte(data))
		if err != nil || len(back.Patterns) != 1 || back.Patterns[0] != p || len(back.Nomerges) != 1 || back.Nomerges[0].Value != n.Value {
			t.Fatalf("the iocost profile's cell %s is not what %q says (%v)", p.Name(), data, err)
		}
		direction := map[int]string{100: "read", 0: "write"}[p.ReadPct]
		name := direction + "-" + string(p.Access)
		files[name] = filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(files[name], []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(files) != 4 {
		t.Fatalf("the iocost profile's cells with merging off: %v, want sequential and random of each direction", slices.Sorted(maps.Keys(files)))
	}
	return files
}

// machineBusy returns a function that tells the share of the machine's
// CPU time since machineBusy was called that was busy, and that was
// stolen (by the host of a virtual machine: its CPUs did not run), in %.
func machineBusy(t *testing.T) func() (busy, stolen float64) {
	t.Helper()
	read := func() (busy, steal, total float64) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			t.Fatal(err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseFloat(f, 64)
			total += v
			switch i {
			case 3, 4: // idle, iowait
			case 7:
				steal += v
			default:
				busy += v
			}
		}
		return busy, steal, total
	}
	b0, s0, t0 := read()
	return func() (busy, stolen float64) {
		b1, s1, t1 := read()
		return 100 * (b1 - b0) / max(t1-t0, 1), 100 * (s1 - s0) / max(t1-t0, 1)
	}
}

// queueAs sets the disk queue q's elevator and nomerges, and returns
// what puts them back.
func queueAs(t *testing.T, q, elevator, nomerges string) (restore func()) {
	t.Helper()
	sched, nm := filepath.Join(q, "scheduler"), filepath.Join(q, "nomerges")
	_, was, _ := strings.Cut(attrValue(t, sched), "[")
	was, _, _ = strings.Cut(was, "]")
	wasNM := attrValue(t, nm)
	setAttr(t, sched, elevator)
	setAttr(t, nm, nomerges)
	return func() {
		setAttr(t, sched, was)
		setAttr(t, nm, wasNM)
	}
}

// seekFio is the kernel's procedure's fio run (tools/cgroup/iocost_coef_gen.py,
// its exact arguments) of rw on dev, with the queue as it sets it:
// elevator none, nomerges=1; put back after.
func seekFio(t *testing.T, fio, dev, rw string, disk *testenv.SeekDisk, runtime time.Duration) seekRun {
	t.Helper()
	defer queueAs(t, filepath.Join("/sys/block", filepath.Base(dev), "queue"), "none", "1")()
	out := filepath.Join(t.TempDir(), "fio.json")
	end := measureSeek(t, dev, disk)
	cmd := exec.Command(fio, "--direct=1", "--ioengine=io_uring", "--name=coef", "--filename="+dev,
		"--runtime="+strconv.FormatFloat(runtime.Seconds(), 'f', -1, 64), "--readwrite="+rw, "--iodepth=64",
		"--blocksize=4096", "--eta=never", "--output-format", "json", "--output="+out, "--time_based", "--numjobs=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fio %s: %v\n%s", rw, err, b)
	}
	var r seekRun
	end(&r)
	var doc struct {
		Jobs []struct {
			Read struct {
				BW float64 `json:"bw_bytes"`
			} `json:"read"`
			Write struct {
				BW float64 `json:"bw_bytes"`
			} `json:"write"`
			UsrCPU float64 `json:"usr_cpu"`
			SysCPU float64 `json:"sys_cpu"`
		} `json:"jobs"`
	}
	b, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil || len(doc.Jobs) != 1 {
		t.Fatalf("fio %s's output: %v\n%s", rw, err, b)
	}
	j := doc.Jobs[0]
	r.iops, r.cpu = (j.Read.BW+j.Write.BW)/4096, j.UsrCPU+j.SysCPU
	return r
}

// seekSweep runs one iocost cell (a profile file of iocostCells) with
// iomatrix sweep on dev: the queue's nomerges is the sweep's to set. The
// cell must record the nomerges it ran with.
func seekSweep(t *testing.T, dev, profile string, disk *testenv.SeekDisk, runtime, ramp time.Duration) seekRun {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sweep.json")
	end := measureSeek(t, dev, disk)
	r := runIomatrix(t, iomatrixCmd(t, "sweep", dev, "--profile", profile, "--allow-destructive",
		"--runtime", runtime.String(), "--ramp", ramp.String(), "-o", out, "--format", "json"))
	var run seekRun
	end(&run)
	if r.code != 0 {
		t.Fatalf("sweep %s: exit %d: %s", filepath.Base(profile), r.code, r.stderr)
	}
	doc, err := results.ReadDocumentFile(out)
	if err != nil || len(doc.Results) != 1 {
		t.Fatalf("sweep %s: %v", filepath.Base(profile), err)
	}
	res := doc.Results[0]
	if res.Nomerges == nil || res.Nomerges.Value != 2 {
		t.Errorf("sweep %s: ran with nomerges %+v, want the profile's 2", filepath.Base(profile), res.Nomerges)
	}
	run.iops, run.cpu = res.Total.IOPS, res.CPU.UserPct+res.CPU.SysPct
	return run
}

// checkServed holds a run to what it asked of the device: one request
// at a time, 4 KiB each, in its direction only, each of the block
// layer's requests one of the device's (none split or merged on the way;
// none merged at all where merging was off), and at least 99 % of them
// sequential (or random) as the run was.
func checkServed(t *testing.T, name string, write, sequential, nomerges bool, r seekRun) {
	t.Helper()
	c := r.counts
	seq, rand, other := c.SeqReads, c.RandReads, c.SeqWrites+c.RandWrites
	if write {
		seq, rand, other = c.SeqWrites, c.RandWrites, c.SeqReads+c.RandReads
	}
	asked, odd := seq, rand
	if !sequential {
		asked, odd = rand, seq
	}
	switch {
	case c.MaxHeld != 1:
		t.Errorf("%s: the device held %d requests at once: the loop device did not hand it one at a time", name, c.MaxHeld)
	case c.Requests() == 0 || c.Bytes != 4096*c.Requests():
		t.Errorf("%s: the device served %d requests of %d bytes: not 4 KiB each", name, c.Requests(), c.Bytes)
	case uint64(c.Requests()) != r.requests || (nomerges && r.merged != 0):
		t.Errorf("%s: the block layer completed %d requests (%d merges), the device served %d", name, r.requests, r.merged, c.Requests())
	case other != 0:
		t.Errorf("%s: the device served %d requests of the other direction", name, other)
	case odd > asked/100:
		t.Errorf("%s: the device served %d requests as the run asked and %d not (sequential: %v): reordered on the way, or not the run it claims", name, asked, odd, sequential)
	}
}

// seekEnv is the test's runtime per cell and its iterations, 1 s and 1
// unless IOMATRIX_SEEK_RUNTIME and IOMATRIX_SEEK_ITERATIONS say more.
func seekEnv(t *testing.T) (runtime time.Duration, iterations int) {
	t.Helper()
	runtime, iterations = time.Second, 1
	var err error
	if s := os.Getenv("IOMATRIX_SEEK_RUNTIME"); s != "" {
		runtime, err = time.ParseDuration(s)
	}
	if s := os.Getenv("IOMATRIX_SEEK_ITERATIONS"); s != "" && err == nil {
		iterations, err = strconv.Atoi(s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return runtime, iterations
}

// seekPace is how much longer than its service time a request may take
// the device, served and idle together, for a run to have had the
// device it asked for. On a quiet machine the path between requests
// (the loop worker's and the daemon's wake-ups) adds 50-140 µs to a 2 ms
// one; on this 2-vCPU machine under load (another process's CPU, the
// host's steal) the same run took 2.3-3.3 ms a request, as the device
// could not keep its time.
const seekPace = 1.10

// seekTest is the seek device and what runs on it.
type seekTest struct {
	fio, dev string
	disk     *testenv.SeekDisk
	cells    map[string]string // iocostCells
	runtime  time.Duration
}

// direction runs one direction's cells, interleaved: the procedure's
// sequential and random, then iomatrix's; it checks what the device
// served, and returns the two ratios and whether every run had the
// device's pace (seekPace).
func (s *seekTest) direction(t *testing.T, i int, dir string) (fioRatio, iomRatio float64, paced bool) {
	t.Helper()
	runs := map[string]seekRun{
		"fio " + dir:          seekFio(t, s.fio, s.dev, dir, s.disk, s.runtime),
		"fio rand" + dir:      seekFio(t, s.fio, s.dev, "rand"+dir, s.disk, s.runtime),
		"iomatrix " + dir:     seekSweep(t, s.dev, s.cells[dir+"-sequential"], s.disk, s.runtime, s.runtime/5),
		"iomatrix rand" + dir: seekSweep(t, s.dev, s.cells[dir+"-random"], s.disk, s.runtime, s.runtime/5),
	}
	paced = true
	for _, name := range slices.Sorted(maps.Keys(runs)) {
		r, sequential := runs[name], !strings.Contains(name, "rand")
		t.Logf("%d %s: %v", i, name, r)
		checkServed(t, name, dir == "write", sequential, strings.HasPrefix(name, "iomatrix"), r)
		d := seekRand
		if sequential {
			d = seekSeq
		}
		paced = paced && r.counts.Requests() > 0 && float64(r.counts.Span) <= seekPace*float64(d)*float64(r.counts.Requests())
	}
	fioRatio = runs["fio "+dir].iops / runs["fio rand"+dir].iops
	iomRatio = runs["iomatrix "+dir].iops / runs["iomatrix rand"+dir].iops
	t.Logf("%d %s: seq/rand fio %.3f, iomatrix %.3f: iomatrix/procedure %.3f; the device kept its pace: %v", i, dir, fioRatio, iomRatio, iomRatio/fioRatio, paced)
	return fioRatio, iomRatio, paced
}

// The iocost profile's 4K cells beside the kernel's procedure, on a
// device whose speed is its own: one head, which serves a request that
// starts where the previous one ended in seekSeq and any other in
// seekRand, one at a time (testenv.SeekDisk). Per iteration and
// direction, interleaved: the procedure's fio runs, sequential and
// random, then iomatrix sweep's cells of the built-in profile. Always
// asserted: the device served every run as asked (checkServed). Judged
// on the iterations where the device kept its pace (seekPace), up to
// two more tried for a direction that had none: the sequential-to-random
// IOPS ratio of each direction (their median) within 20 % of the
// procedure's. docs/testing.md has the figures.
func TestIocostSeekRatio(t *testing.T) {
	s := &seekTest{fio: testenv.Command(t, "fio"), disk: testenv.NewSeekDisk(1<<30, seekSeq, seekRand)}
	s.dev = testenv.WritableFUSELoop(t, s.disk)
	s.cells = iocostCells(t, t.TempDir())
	var iterations int
	s.runtime, iterations = seekEnv(t)
	t.Logf("%s: sequential %v, random %v (ratio %.2f); %v per cell, %d iterations", s.dev, seekSeq, seekRand, float64(seekRand)/float64(seekSeq), s.runtime, iterations)
	for _, dir := range []string{"read", "write"} {
		var all, paced [2][]float64 // fio's, iomatrix's
		for i := 1; i <= iterations || (len(paced[0]) == 0 && i <= iterations+2); i++ {
			f, m, ok := s.direction(t, i, dir)
			all = [2][]float64{append(all[0], f), append(all[1], m)}
			if ok {
				paced = [2][]float64{append(paced[0], f), append(paced[1], m)}
			}
		}
		t.Logf("%s: median seq/rand of %d iterations: procedure %.3f, iomatrix %.3f: iomatrix/procedure %.3f",
			dir, len(all[0]), median(all[0]), median(all[1]), median(all[1])/median(all[0]))
		if len(paced[0]) == 0 {
			t.Logf("%s: the device did not keep its pace in any iteration (the machine is loaded; see each run's time served and idle per request): the ratio is not judged", dir)
			continue
		}
		fioRatio, iomRatio := median(paced[0]), median(paced[1])
		t.Logf("%s: median seq/rand of the %d where the device kept its pace: procedure %.3f, iomatrix %.3f: iomatrix/procedure %.3f",
			dir, len(paced[0]), fioRatio, iomRatio, iomRatio/fioRatio)
		if math.Abs(iomRatio/fioRatio-1) > 0.2 {
			t.Errorf("%s: iomatrix's sequential-to-random ratio %.3f is not within 20 %% of the procedure's %.3f", dir, iomRatio, fioRatio)
		}
	}
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
