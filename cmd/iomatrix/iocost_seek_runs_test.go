package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// The runs of TestIocostSeekRatio on the seek device: the kernel's
// procedure's fio runs and iomatrix sweep's cells, each with what the
// machine, the block layer and the device saw meanwhile.

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

// machineBusy returns a function that tells the share of the machine's
// CPU time since machineBusy was called that was busy, steal aside, and
// that was stolen (by the host of a virtual machine: its CPUs did not
// run), in %.
func machineBusy(t *testing.T) func() (busy, stolen float64) {
	t.Helper()
	m0 := testenv.MachineTimes(t)
	return func() (busy, stolen float64) {
		m1 := testenv.MachineTimes(t)
		total := float64(max(m1.Total()-m0.Total(), 1))
		steal := float64(m1.Steal - m0.Steal)
		return 100 * (float64(m1.Busy-m0.Busy) - steal) / total, 100 * steal / total
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
