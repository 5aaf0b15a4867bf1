package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/answers/capverify"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// qd1Profile is one cell: 4K random reads at QD1.
const qd1Profile = `name: qd1
description: 4K random reads at QD1
matrix:
  - block_sizes: [4k]
    read_pcts: [100]
    queue_depths: [1]
`

// loopsPerCPU is how many busy loops busyLoops pins on each CPU. One at
// nice -20 leaves a thread at nice 0 1.1 % of the CPU, about what a QD1
// cell at 400 IOPS needs (its thread and the loop device's worker): it
// fell short of its cap in half the runs. Two leave it 0.6 %.
const loopsPerCPU = 2

// busyLoops starts loopsPerCPU busy loops pinned on each CPU at nice
// -20, above iomatrix's threads (nice 0). It returns what stops them;
// they are stopped when the test ends too, and by themselves after a
// minute at most.
func busyLoops(t *testing.T) (stop func()) {
	t.Helper()
	sh := testenv.Command(t, "sh")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var loops []*exec.Cmd
	stop = func() {
		cancel()
		for _, l := range loops {
			_ = l.Wait() // killed by the context
		}
		loops = nil
	}
	t.Cleanup(stop)
	for i := 0; i < loopsPerCPU*runtime.NumCPU(); i++ {
		cpu := i % runtime.NumCPU()
		l := exec.CommandContext(ctx, sh, "-c", "while :; do :; done")
		testenv.Must(t, l.Start())
		loops = append(loops, l)
		var set unix.CPUSet
		set.Set(cpu)
		testenv.Must(t, unix.SchedSetaffinity(l.Process.Pid, &set))
		testenv.Must(t, syscall.Setpriority(syscall.PRIO_PROCESS, l.Process.Pid, -20))
	}
	return stop
}

// The starvation acceptance of issue 38: a capped QD1 cell on a
// RAM-backed loop device. Under riops=400 the cap binds only while one
// I/O takes under 2.5 ms; with a busy loop at a higher priority on every
// CPU, the capped child and the loop device's worker wait for a CPU, and
// the cell fell short of the model (376 IOPS against 400, 31 against 400
// here): FAIL, for a cap that held. With CPUs quiet the cell is OK;
// starved it must never FAIL, and where it falls short it is
// inconclusive, its shortfall explained by the wait it recorded: judged
// again without that wait, it fails. The scheduler now and then lets the
// starved cell keep its cap (1 run in 7 by hand): up to 3 attempts are
// made for one that falls short.
func TestCapVerifyStarvedCPU(t *testing.T) {
	c := capController(t)
	dir := t.TempDir()
	profile := filepath.Join(dir, "qd1.yaml")
	testenv.Must(t, os.WriteFile(profile, []byte(qd1Profile), 0o644))
	loop := testenv.RAMDisk(t, 64<<20)
	verify := func(name string, starve bool, extra ...string) (cmdResult, results.CapVerdict) {
		args := append([]string{"cap", "verify", loop, "--allow-destructive", "--profile", profile, "--cap", "riops=400",
			"--runtime", "1s", "--ramp", "250ms", "--format", "json", "--out", filepath.Join(dir, name+".json")}, extra...)
		began := time.Now()
		r := runStarved(t, c, starve, args...)
		took := time.Since(began).Round(time.Millisecond)
		var v results.CapVerdict
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Cells) != 1 {
			t.Fatalf("%s: exit %d, %v, %d cells\n%s", name, r.code, err, len(v.Cells), r.stderr)
		}
		cell := v.Cells[0]
		t.Logf("%s (%s): %.0f IOPS, CPU wait %.1f %% of the window: %s (exit %d) %q", name, took, cell.MeasuredIOPS, cell.CPUWaitPct, v.Verdict, r.code, cell.Reasons)
		return r, v
	}
	// The baseline wants quiet CPUs, which a machine the rest of the
	// suite (or anything else) loads does not always give: a run that
	// waited for a CPU is then rightly inconclusive, and is run again.
	for attempt := 1; ; attempt++ {
		r, v := verify("quiet", false, "--force")
		if r.code == exitOK && v.Verdict == "ok" {
			break
		}
		if attempt < 3 && v.Verdict == "inconclusive" && v.Cells[0].Starved {
			continue
		}
		t.Fatalf("with CPUs quiet: %s, exit %d; want ok, 0", v.Verdict, r.code)
	}
	baseline := capverify.BaselineOut(filepath.Join(dir, "quiet.json"))
	for attempt := 1; attempt <= 3; attempt++ {
		name := fmt.Sprintf("starved-%d", attempt)
		r, v := verify(name, true, "--baseline", baseline)
		cell := v.Cells[0]
		if r.code == exitFailure || v.Verdict == "fail" {
			t.Fatalf("%s: a cap that holds judged FAIL on starved CPUs: %q", name, cell.Reasons)
		}
		if !cell.Starved {
			continue // it kept its cap
		}
		if r.code != exitInconclusive || v.Verdict != "inconclusive" || !cell.Inconclusive {
			t.Errorf("%s: starved and short: %s, exit %d; want inconclusive, 3", name, v.Verdict, r.code)
		}
		rejudgeWithoutWait(t, filepath.Join(dir, name+".json"), baseline)
		return
	}
	testenv.Require(t, false, "in 3 attempts the busy loops never held the capped cell below its floor: the rule was not exercised")
}

// runStarved runs iomatrix as runCounted does; with starve, busy loops
// (busyLoops) run from the moment its capped child has joined its cgroup,
// before its first I/O there, to its end: iomatrix starts on quiet CPUs,
// which keeps the test short (a test binary starting beside the busy
// loops took 8 s to get there), and its capped cell runs starved.
func runStarved(t *testing.T, c cgroup.Controller, starve bool, args ...string) cmdResult {
	t.Helper()
	if !starve {
		return runCounted(t, c, args...)
	}
	cmd := iomatrixCmd(t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	testenv.Must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	var err error
wait:
	for {
		select {
		case err = <-done: // ended before its child joined
			break wait
		case <-tick.C:
			if joined(c, cmd.Process.Pid) {
				stop := busyLoops(t)
				err = <-done
				stop()
				break wait
			}
		}
	}
	r := cmdResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	if l := leftovers(c, cmd.Process.Pid); len(l) > 0 {
		t.Errorf("%v left cgroups behind: %v", args, l)
	}
	return r
}

// joined tells whether a process has joined a cgroup that iomatrix
// process pid made.
func joined(c cgroup.Controller, pid int) bool {
	for _, dir := range leftovers(c, pid) {
		if procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil && len(bytes.TrimSpace(procs)) > 0 {
			return true
		}
	}
	return false
}

// rejudgeWithoutWait judges the capped cell of results file out again,
// against baseline, as if it had not waited for a CPU: it must fail, or
// the wait was not what kept it from failing.
func rejudgeWithoutWait(t *testing.T, out, baseline string) {
	t.Helper()
	doc, err := results.ReadDocumentFile(out)
	testenv.Must(t, err)
	base, err := results.ReadDocumentFile(baseline)
	testenv.Must(t, err)
	res := doc.Results[0]
	if res.CPUWait == nil || res.CPUWait.IOThreads < 1 || res.CPUWait.TargetThreads < 1 {
		t.Errorf("the cell's CPU wait %+v: want the I/O thread's and the kernel's", res.CPUWait)
	}
	res.CPUWait = nil
	if k := capverify.Check(doc.Cap, res, base.Results[0], sysfs.BlockDevice{}, 5); k.OK || k.Inconclusive {
		t.Errorf("without its CPU wait the cell is judged ok %v, inconclusive %v (%q): the rule did not decide it", k.OK, k.Inconclusive, k.Reasons)
	}
}
