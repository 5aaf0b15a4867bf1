package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/answers/observe"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// blkioGroup makes a v1 blkio cgroup for a test (testenv.BlkioGroup).
func blkioGroup(t *testing.T, name string) string {
	t.Helper()
	return testenv.BlkioGroup(t, name)
}

// inCgroup runs iomatrix (or, with bin set, another program) as a
// process that enters the cgroup before it execs, so that its first I/O
// is counted there.
func inCgroup(t *testing.T, dir, bin string, args ...string) *exec.Cmd {
	t.Helper()
	if bin == "" {
		exe, err := os.Executable()
		testenv.Must(t, err)
		bin = exe
	}
	cmd := exec.Command("sh", append([]string{"-c", `echo $$ > "$0"/cgroup.procs && exec "$@"`, dir, bin}, args...)...)
	cmd.Env = append(os.Environ(), "IOMATRIX_TEST_MAIN=1")
	return cmd
}

// iomatrixCmdEnv is iomatrixCmd with more environment.
func iomatrixCmdEnv(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := iomatrixCmd(t, args...)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// startObserve starts iomatrix observe; wait waits for it to end well,
// failing the test with its stderr otherwise; interrupt ends it first, as
// Ctrl-C does.
func startObserve(t *testing.T, args ...string) (wait, interrupt func()) {
	t.Helper()
	obs := iomatrixCmd(t, append([]string{"observe"}, args...)...)
	var stderr strings.Builder
	obs.Stderr = &stderr
	testenv.Must(t, obs.Start())
	wait = func() {
		t.Helper()
		if err := obs.Wait(); err != nil {
			t.Fatalf("observe: %v\n%s", err, stderr.String())
		}
	}
	return wait, func() {
		t.Helper()
		testenv.Must(t, obs.Process.Signal(syscall.SIGINT))
		wait()
	}
}

// waitBaseline waits for observe's first save of out, made once its
// baseline is read: I/O from then on falls in the observation.
func waitBaseline(t *testing.T, out string) {
	t.Helper()
	testenv.Until(t, 30*time.Second, "observe's first save of "+out, func() bool {
		fi, err := os.Stat(out)
		return err == nil && fi.Size() > 0
	})
}

// waitObserved waits until observe's last save of out shows what cond
// looks for (observe runs with --save-every its --interval, so that each
// sample is saved).
func waitObserved(t *testing.T, out, what string, cond func(*results.Observation) bool) {
	t.Helper()
	testenv.Until(t, 30*time.Second, what+" in "+out, func() bool {
		doc, err := results.ReadObservationFile(out)
		return err == nil && cond(doc)
	})
}

// saveID tells observe's saves of a file apart: each renames a file
// written afresh over it.
func saveID(path string) [2]int64 {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return [2]int64{}
	}
	return [2]int64{int64(st.Ino), st.Mtim.Nano()}
}

// waitSaves waits for observe's next n saves of out: with a save after
// each sample and n = 2, the file holds a sample taken after the call.
func waitSaves(t *testing.T, out string, n int) {
	t.Helper()
	last := saveID(out)
	for range n {
		testenv.Until(t, 30*time.Second, "observe saving "+out+" again", func() bool {
			id := saveID(out)
			if id == last || id == [2]int64{} {
				return false
			}
			last = id
			return true
		})
	}
}

// readIn reads count 4K blocks of dev, O_DIRECT, from a process in the
// cgroup g.
func readIn(t *testing.T, g, dev string, count int) {
	t.Helper()
	if b, err := inCgroup(t, g, "dd", "if="+dev, "of=/dev/null", "bs=4k", fmt.Sprintf("count=%d", count), "iflag=direct").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v: %s", err, b)
	}
}

func devNumOf(t *testing.T, dev string) sysfs.DevNum {
	t.Helper()
	var st unix.Stat_t
	testenv.Must(t, unix.Stat(dev, &st))
	return sysfs.DevNum{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)}
}

func diskstatsOf(t *testing.T, d sysfs.DevNum) sysfs.DiskStats {
	t.Helper()
	st, err := sysfs.Default().DiskStats(d)
	testenv.Must(t, err)
	return st
}

func readObservation(t *testing.T, path string) *results.Observation {
	t.Helper()
	doc, err := results.ReadObservationFile(path)
	testenv.Must(t, err)
	return doc
}

func systemOf(t *testing.T, doc *results.Observation, name string) results.ObservedSystem {
	t.Helper()
	for _, s := range doc.Systems {
		if s.Name == name {
			if s.IO == nil || s.IO.Summary == nil {
				t.Fatalf("system %s was never read: %+v", name, doc.Events)
			}
			return s
		}
	}
	t.Fatalf("no system %s among %d", name, len(doc.Systems))
	return results.ObservedSystem{}
}

func deviceOf(t *testing.T, doc *results.Observation, name string) results.ObservedSeries {
	t.Helper()
	for _, d := range doc.Devices {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no device %s in the observation", name)
	return results.ObservedSeries{}
}

// Known loads are observed exactly: two runs capped at riops=2000 and
// wiops=700 in cgroups of their own are seen at their caps, and a device
// idle but for 1000 reads has, in the document, diskstats' own increase
// over the observation, counter for counter.
func TestObserveCappedLoads(t *testing.T) {
	busy, idle := testenv.RAMDisk(t, 256<<20), testenv.RAMDisk(t, 64<<20)
	bd, id := devNumOf(t, busy), devNumOf(t, idle)
	reader, writer, prober := blkioGroup(t, "reader"), blkioGroup(t, "writer"), blkioGroup(t, "prober")
	testenv.Must(t, os.WriteFile(filepath.Join(reader, "blkio.throttle.read_iops_device"), []byte(bd.String()+" 2000"), 0))
	testenv.Must(t, os.WriteFile(filepath.Join(writer, "blkio.throttle.write_iops_device"), []byte(bd.String()+" 700"), 0))
	dir := t.TempDir()
	// The loads run until the observation is over: they are interrupted
	// then, which they must still be running to answer with 130.
	loads := []*exec.Cmd{
		inCgroup(t, reader, "", "run", busy, "--rw", "randread", "--bs", "4k", "--qd", "8", "--runtime", "10m", "--ramp", "0"),
		inCgroup(t, writer, "", "run", busy, "--rw", "randwrite", "--bs", "4k", "--qd", "8", "--runtime", "10m", "--ramp", "0", "--allow-destructive"),
	}
	for _, c := range loads {
		testenv.Must(t, c.Start())
		t.Cleanup(func() { _ = c.Process.Kill() }) // a test that fails early leaves no load behind
	}
	// Both under way: their cgroups count.
	waitCounting(t, reader, "Read")
	waitCounting(t, writer, "Write")

	before := diskstatsOf(t, id)
	out := filepath.Join(dir, "obs.json")
	wait, _ := startObserve(t, busy, idle, "--cgroup", reader+"=reader", "--cgroup", writer+"=writer", "--cgroup", prober+"=prober",
		"--interval", "250ms", "--duration", "4s", "--v1-enable-counters", "-o", out, "-q")
	waitBaseline(t, out)
	readIn(t, prober, idle, 1000)
	wait()
	after := diskstatsOf(t, id)
	for _, c := range loads {
		testenv.Must(t, c.Process.Signal(syscall.SIGINT))
		_ = c.Wait() // the exit status is read from ProcessState
		if code := c.ProcessState.ExitCode(); code != 130 {
			t.Errorf("%v: exit %d when interrupted after the observation, want 130: it did not load the device throughout", c.Args, code)
		}
	}
	doc := readObservation(t, out)

	for _, c := range []struct {
		system, figure string
		cap            float64
	}{{"reader", "reads", 2000}, {"writer", "writes", 700}} {
		s := systemOf(t, doc, c.system)
		m := s.IO.Summary.Mean[c.figure]
		span := float64(s.IO.Summary.ObservedNS) / 1e9
		t.Logf("%s: %.1f %s/s over %.2f s (cap %.0f)", c.system, m, c.figure, span, c.cap)
		// blk-throttle grants a cap's budget a slice at a time, so a
		// window of the cgroup's count holds up to one slice's budget
		// more or less than the cap's rate over it (2.5 % of 4 s: a CI
		// run saw the writer at 716.5 writes/s under 700).
		if tol := 0.01 + cgroup.ThrottleSlice.Seconds()/span; math.Abs(m/c.cap-1) > tol {
			t.Errorf("%s: mean %.1f %s/s, want its cap %.0f within %.1f %% (1 %% and one throttle slice's budget)", c.system, m, c.figure, c.cap, 100*tol)
		}
	}
	idleDev := deviceOf(t, doc, filepath.Base(idle))
	want := map[string]uint64{
		"rios": after.ReadIOs - before.ReadIOs, "wios": after.WriteIOs - before.WriteIOs,
		"rbytes": 512 * (after.ReadSectors - before.ReadSectors), "wbytes": 512 * (after.WriteSectors - before.WriteSectors),
		"rticks_ms": after.ReadTicksMs - before.ReadTicksMs, "io_ticks_ms": after.IOTicksMs - before.IOTicksMs,
		"queue_ms": after.TimeInQueueMs - before.TimeInQueueMs,
	}
	for k, v := range want {
		if got := idleDev.Totals[k]; got != v {
			t.Errorf("idle device %s: %d in the observation, diskstats moved %d", k, got, v)
		}
	}
	if want["rios"] < 1000 {
		t.Errorf("idle device: %d reads, dd did 1000", want["rios"])
	}
	if p := systemOf(t, doc, "prober"); p.IO.Totals["rios"] != 1000 || p.IO.Totals["rbytes"] != 1000*4096 {
		t.Errorf("prober: %d reads of %d bytes, dd did 1000 of 4096", p.IO.Totals["rios"], p.IO.Totals["rbytes"])
	}
	if idleDev.UncountedIntervals != 0 {
		t.Errorf("idle device: %d intervals uncounted, with its counters enabled", idleDev.UncountedIntervals)
	}
	if doc.Accounting.CgroupVersion != 1 || doc.Accounting.Writeback != "root" || doc.Stop != results.StopDuration {
		t.Errorf("accounting %+v, stop %q", doc.Accounting, doc.Stop)
	}
}

// waitCounting waits until a v1 cgroup has counted I/O in direction op.
func waitCounting(t *testing.T, dir, op string) {
	t.Helper()
	testenv.Until(t, 20*time.Second, dir+": "+op+" counted", func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, "blkio.throttle.io_serviced"))
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[1] == op && f[2] != "0" {
				return true
			}
		}
		return false
	})
}

// A cgroup removed and a device added and removed while observing: the
// document says when, keeps what was counted before, and never turns the
// change into a negative (huge) rate.
func TestObserveSourcesComeAndGo(t *testing.T) {
	testenv.Root(t)
	disk := testenv.RAMDisk(t, 32<<20)
	shm, err := os.MkdirTemp("/dev/shm", "iomatrix-test-")
	testenv.Must(t, err)
	t.Cleanup(func() { os.RemoveAll(shm) })
	backing := filepath.Join(shm, "disk.img")
	testenv.Must(t, os.WriteFile(backing, make([]byte, 16<<20), 0o644))
	short := blkioGroup(t, "short")
	dir := t.TempDir()
	out := filepath.Join(dir, "obs.json")
	// Each step waits for observe to have seen the last (every sample is
	// saved), and the observation ends once it has seen them all.
	_, interrupt := startObserve(t, "--all-devices", "--v1-enable-counters", "--cgroup", short+"=short",
		"--interval", "100ms", "--save-every", "100ms", "-o", out, "-q")
	waitBaseline(t, out)
	events := func(doc *results.Observation, source string) []string {
		var kinds []string
		for _, e := range doc.Events {
			if e.Source == source {
				kinds = append(kinds, e.Kind)
			}
		}
		return kinds
	}

	// The short-lived system reads, ends, and its cgroup is removed once
	// its reads are counted.
	readIn(t, short, disk, 200)
	waitObserved(t, out, "short's 200 reads", func(doc *results.Observation) bool {
		for _, s := range doc.Systems {
			if s.Name == "short" {
				return s.PerDevice[filepath.Base(disk)].ReadIOs >= 200
			}
		}
		return false
	})
	testenv.Must(t, os.Remove(short))

	// A loop device is created, read, detached and deleted.
	ln := newLoopNumber(t)
	loop := ln.path()
	name := filepath.Base(loop)
	waitObserved(t, out, name+" appearing", func(doc *results.Observation) bool { return slices.Contains(events(doc, name), results.EventAppeared) })
	if b, err := exec.Command("losetup", "--direct-io=on", loop, backing).CombinedOutput(); err != nil {
		t.Fatalf("losetup: %v: %s", err, b)
	}
	if b, err := exec.Command("dd", "if="+loop, "of=/dev/null", "bs=4k", "count=300", "iflag=direct").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v: %s", err, b)
	}
	waitObserved(t, out, name+"'s 300 reads", func(doc *results.Observation) bool {
		for _, d := range doc.Devices {
			if d.Name == name {
				return d.Totals["rios"] >= 300
			}
		}
		return false
	})
	if b, err := exec.Command("losetup", "-d", loop).CombinedOutput(); err != nil {
		t.Fatalf("losetup -d: %v: %s", err, b)
	}
	testenv.Must(t, ln.remove())
	waitObserved(t, out, name+" and short gone", func(doc *results.Observation) bool {
		return slices.Contains(events(doc, name), results.EventGone) && slices.Contains(events(doc, "short"), results.EventGone)
	})
	interrupt()
	doc := readObservation(t, out)
	kinds := map[string][]string{}
	for _, e := range doc.Events {
		kinds[e.Source] = append(kinds[e.Source], e.Kind)
	}
	t.Logf("events: %v", kinds)
	// Its reads of the RAM disk are dd's; every real disk is observed, so
	// loading dd itself may read /tmp's disk too.
	if s := systemOf(t, doc, "short"); s.PerDevice[filepath.Base(disk)].ReadIOs != 200 || !slices.Contains(kinds["short"], results.EventGone) {
		t.Errorf("short: %d reads of %s (dd did 200), %+v in all, events %v", s.PerDevice[filepath.Base(disk)].ReadIOs, disk, s.PerDevice, kinds["short"])
	}
	// udev and the partition scan may read the new device too.
	if d := deviceOf(t, doc, name); d.Totals["rios"] < 300 {
		t.Errorf("%s: %d reads, dd did 300", name, d.Totals["rios"])
	}
	if !slices.Contains(kinds[name], results.EventAppeared) || !slices.Contains(kinds[name], results.EventGone) {
		t.Errorf("%s created and removed, events %v", name, kinds[name])
	}
	for _, s := range doc.Devices {
		for c, col := range s.Seconds.Counters {
			for i, v := range col {
				if v > 1<<40 {
					t.Errorf("%s %s interval %d: %d", s.Name, c, i, v)
				}
			}
		}
	}
}

// Ctrl-C ends an observation cleanly (exit 0, the document finished);
// SIGKILL leaves the last save, a valid document that says it did not
// finish.
func TestObserveSignals(t *testing.T) {
	testenv.Integration(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "obs.json")
			cmd := iomatrixCmd(t, "observe", "--interval", "100ms", "--save-every", "200ms", "-o", out, "-q")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			testenv.Must(t, cmd.Start())
			waitObserved(t, out, "a document of 5 intervals", func(doc *results.Observation) bool {
				return len(doc.Devices) > 0 && doc.Devices[0].Seconds.Len() >= 5
			})
			testenv.Must(t, cmd.Process.Signal(sig))
			err := cmd.Wait()
			doc := readObservation(t, out)
			switch sig {
			case syscall.SIGINT:
				if err != nil || doc.Stop != results.StopInterrupted || doc.FinishedAt == "" || stdout.Len() == 0 {
					t.Errorf("after SIGINT: %v, stop %q, finished %q, stdout %q, stderr %s", err, doc.Stop, doc.FinishedAt, stdout.String(), stderr.String())
				}
			case syscall.SIGKILL:
				saved, perr := time.Parse(time.RFC3339, doc.SavedAt)
				if doc.FinishedAt != "" || perr != nil || time.Since(saved) > 3*time.Second {
					t.Errorf("after SIGKILL: finished %q, saved %q (%v)", doc.FinishedAt, doc.SavedAt, perr)
				}
			}
		})
	}
}

// Bad input is refused before any sampling, with one line naming the
// flag, and no document is written.
func TestObserveBadInput(t *testing.T) {
	testenv.Integration(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cgroups", "auto", "--cgroupfs", "/nonexistent"}, "--cgroups auto:"},
		{[]string{"--cgroup", "/no/such/group=x"}, "--cgroup /no/such/group"},
		{[]string{"--cgroups", "all"}, "--cgroups:"},
		{[]string{"--interval", "10ms"}, "--interval:"},
		{[]string{"--window", "10s"}, "--window:"},
		{[]string{"--interval", "30s", "--save-every", "10s"}, "--save-every:"},
		{[]string{"nosuchdisk0"}, "device nosuchdisk0"},
		{[]string{"--statistic", "p42"}, "--statistic:"},
		{[]string{"--headroom", "lots"}, "--headroom:"},
		{[]string{"--procfs", "/nonexistent"}, "--procfs:"},
		{[]string{"--from", "/nonexistent/obs.json", "--workload", "w.yaml"}, "/nonexistent/obs.json"},
	} {
		dir := t.TempDir()
		out := filepath.Join(dir, "obs.json")
		r := runIomatrix(t, iomatrixCmd(t, append([]string{"observe", "-o", out, "--duration", "1s"}, c.args...)...))
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("observe %v: exit %d, stderr %q; want 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("observe %v left %v behind", c.args, entries)
		}
	}
}

// An observation's file is not replaced by mistake.
func TestObserveKeepsExistingFile(t *testing.T) {
	testenv.Integration(t)
	out := filepath.Join(t.TempDir(), "week.json")
	testenv.Must(t, os.WriteFile(out, []byte("a week\n"), 0o644))
	r := runIomatrix(t, iomatrixCmd(t, "observe", "--duration", "200ms", "--interval", "100ms", "-o", out))
	if data, _ := os.ReadFile(out); r.code != exitUsage || !strings.Contains(r.stderr, "--force") || string(data) != "a week\n" {
		t.Errorf("exit %d, stderr %q, file now %q", r.code, r.stderr, data)
	}
	if r := runIomatrix(t, iomatrixCmd(t, "observe", "--duration", "200ms", "--interval", "100ms", "-o", out, "--force", "-q")); r.code != 0 {
		t.Errorf("--force: exit %d: %s", r.code, r.stderr)
	}
	readObservation(t, out)
}

// A read-only cgroupfs (a container's, say) is all observe needs: it
// never writes there.
func TestObserveReadOnlyCgroupfs(t *testing.T) {
	g := blkioGroup(t, "ro")
	ro := t.TempDir()
	testenv.Must(t, os.Mkdir(filepath.Join(ro, "blkio"), 0o755))
	if b, err := exec.Command("mount", "-t", "cgroup", "-o", "ro,blkio", "none", filepath.Join(ro, "blkio")).CombinedOutput(); err != nil {
		testenv.Require(t, false, fmt.Sprintf("mount a read-only blkio hierarchy: %v: %s", err, b))
	}
	defer func() {
		if b, err := exec.Command("umount", filepath.Join(ro, "blkio")).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, b)
		}
	}()
	disk := testenv.RAMDisk(t, 16<<20)
	ctrl, err := cgroup.Detect(sysfs.Default(), cgroup.DefaultRoot)
	testenv.Must(t, err)
	testenv.Must(t, observe.EnableV1Counters(ctrl, devNumOf(t, disk), os.Getpid()))
	out := filepath.Join(t.TempDir(), "obs.json")
	wait, _ := startObserve(t, disk, "--cgroupfs", ro, "--cgroup", "/"+filepath.Base(g)+"=sys", "--interval", "100ms", "--duration", "2s", "-o", out, "-q")
	waitBaseline(t, out)
	readIn(t, g, disk, 100)
	wait()
	if s := systemOf(t, readObservation(t, out), "sys"); s.IO.Totals["rios"] != 100 {
		t.Errorf("through a read-only cgroupfs: %d reads, dd did 100", s.IO.Totals["rios"])
	}
}

// loopNumber is a loop device the test created (LOOP_CTL_ADD) under a
// number nobody had, deleted when the test ends if it has not been.
type loopNumber struct {
	ctl     *os.File
	n       int
	removed bool
}

func newLoopNumber(t *testing.T) *loopNumber {
	t.Helper()
	testenv.Root(t)
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	testenv.Require(t, err == nil, "no /dev/loop-control")
	l := &loopNumber{ctl: ctl, n: 200}
	for ; l.n < 1000; l.n++ {
		if _, err := os.Stat(fmt.Sprintf("/sys/block/loop%d", l.n)); os.IsNotExist(err) {
			break
		}
	}
	if err := l.ioctl(unix.LOOP_CTL_ADD); err != nil {
		t.Fatalf("add loop%d: %v", l.n, err)
	}
	t.Cleanup(func() {
		defer ctl.Close()
		if !l.removed {
			_ = exec.Command("losetup", "-d", l.path()).Run() // it may not be attached
			if err := l.remove(); err != nil {
				t.Errorf("loop%d left behind: %v", l.n, err)
			}
		}
	})
	return l
}

func (l *loopNumber) path() string { return fmt.Sprintf("/dev/loop%d", l.n) }

func (l *loopNumber) ioctl(req uintptr) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, l.ctl.Fd(), req, uintptr(l.n)); errno != 0 {
		return errno
	}
	return nil
}

// remove deletes the device, waiting for a detach to let go of it.
func (l *loopNumber) remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if testenv.Poll(ctx, func() bool { err = l.ioctl(unix.LOOP_CTL_REMOVE); return err == nil }) {
		l.removed = true
		return nil
	}
	return fmt.Errorf("remove loop%d: %w", l.n, err)
}

// freshLoop attaches a loop device of the test's own over a file in
// /dev/shm: a request queue no throttle rule ever touched.
func freshLoop(t *testing.T) string {
	t.Helper()
	testenv.Root(t)
	shm, err := os.MkdirTemp("/dev/shm", "iomatrix-test-")
	testenv.Must(t, err)
	t.Cleanup(func() { os.RemoveAll(shm) })
	backing := filepath.Join(shm, "disk.img")
	testenv.Must(t, os.WriteFile(backing, make([]byte, 8<<20), 0o644))
	loop := newLoopNumber(t).path()
	if b, err := exec.Command("losetup", "--direct-io=on", loop, backing).CombinedOutput(); err != nil {
		t.Fatalf("losetup: %v: %s", err, b)
	}
	return loop
}

// On v1, a device no throttle rule ever covered is not counted in any
// cgroup: observe says so instead of reporting the systems idle, and
// --v1-enable-counters makes the kernel count it.
func TestObserveV1UncountedDevice(t *testing.T) {
	for _, enable := range []bool{false, true} {
		t.Run(fmt.Sprintf("enable=%v", enable), func(t *testing.T) {
			loop := freshLoop(t)
			g := blkioGroup(t, "blind")
			out := filepath.Join(t.TempDir(), "obs.json")
			args := []string{loop, "--cgroup", g + "=sys", "--interval", "100ms", "--duration", "1500ms", "-o", out, "-q"}
			if enable {
				args = append(args, "--v1-enable-counters")
			}
			wait, _ := startObserve(t, args...)
			waitBaseline(t, out)
			readIn(t, g, loop, 100)
			wait()
			doc := readObservation(t, out)
			dev := deviceOf(t, doc, filepath.Base(loop))
			reads := systemOf(t, doc, "sys").IO.Totals["rios"]
			noted := strings.Contains(strings.Join(doc.Accounting.Notes, " "), "No cgroup counted the I/O of "+filepath.Base(loop))
			if enable && (reads != 100 || dev.UncountedIntervals != 0 || noted) {
				t.Errorf("enabled: %d reads (dd did 100), %d uncounted intervals, noted %v", reads, dev.UncountedIntervals, noted)
			}
			if !enable && (reads != 0 || dev.UncountedIntervals == 0 || !noted) {
				t.Errorf("not enabled: %d reads, %d uncounted intervals, noted %v: the kernel counts now, or observe missed it", reads, dev.UncountedIntervals, noted)
			}
		})
	}
}

// A real database in its own cgroup, observed through both: its InnoDB
// counters beside the cgroup's, a restart of the server (its counters
// start again) taken as a reset, and the sources that cannot be used
// refused before sampling, never with the password in the line.
func TestObserveMySQL(t *testing.T) {
	g := blkioGroup(t, "mariadb")
	srv := testenv.MariaDB(t, testenv.MariaDBOptions{CgroupProcs: filepath.Join(g, "cgroup.procs"), ObserverPassword: "Corr3ctHorse"})
	srv.Exec(t, "CREATE DATABASE obs")
	srv.Exec(t, "CREATE TABLE obs.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB")
	// Dirty pages are written at once, not minutes later.
	srv.Exec(t, "SET GLOBAL innodb_max_dirty_pages_pct = 0")

	dir := t.TempDir()
	out := filepath.Join(dir, "obs.json")
	obs := iomatrixCmd(t, "observe", "--cgroup", g+"=erp", "--mysql", "erp=env:ERP_DSN", "--v1-enable-counters",
		"--interval", "200ms", "--save-every", "200ms", "--duration", "6s", "-o", out, "--workload", filepath.Join(dir, "systems.yaml"))
	obs.Env = append(obs.Env, "ERP_DSN="+srv.DSN())
	var stdout, stderr strings.Builder
	obs.Stdout, obs.Stderr = &stdout, &stderr
	testenv.Must(t, obs.Start())
	load := func(n int) {
		for i := 0; i < n; i++ {
			srv.Exec(t, "INSERT INTO obs.t (v) VALUES (REPEAT('x', 200))")
		}
	}
	waitBaseline(t, out)
	load(100)
	// Up for 2 s at least, and read so by observe: a restart is told by
	// an uptime shorter than the last one plus the time since, to the
	// second.
	testenv.Until(t, 30*time.Second, "MariaDB up for 2 s", func() bool { return srv.Uptime(t) >= 2*time.Second })
	waitSaves(t, out, 2)
	srv.Restart(t)
	srv.Exec(t, "SET GLOBAL innodb_max_dirty_pages_pct = 0")
	load(100)
	if err := obs.Wait(); err != nil {
		t.Fatalf("observe: %v\n%s", err, stderr.String())
	}
	doc := readObservation(t, out)
	erp := systemOf(t, doc, "erp")
	if erp.Database == nil || erp.Database.Totals["data_writes"] == 0 || erp.Database.Totals["data_fsyncs"] == 0 {
		t.Fatalf("erp's database: %+v", erp.Database)
	}
	reset := false
	for _, e := range doc.Events {
		reset = reset || e.Source == "erp/mysql" && e.Kind == results.EventReset
	}
	if !reset {
		t.Errorf("the restart is not a reset among %+v", doc.Events)
	}
	if erp.IO.Totals["wios"] == 0 || erp.CrossCheck == nil {
		t.Errorf("erp's cgroup: %v writes, cross-check %+v", erp.IO.Totals["wios"], erp.CrossCheck)
	}
	for c, col := range erp.Database.Seconds.Counters {
		for i, v := range col {
			if v > 1<<40 {
				t.Errorf("database %s interval %d: %d", c, i, v)
			}
		}
	}
	wl, err := os.ReadFile(filepath.Join(dir, "systems.yaml"))
	testenv.Must(t, err)
	if !strings.Contains(string(wl), `name: "erp"`) {
		t.Errorf("workload file:\n%s", wl)
	}

	// Without --cgroup, the server's cgroup is found from its pid.
	found := filepath.Join(dir, "found.json")
	r := runIomatrix(t, iomatrixCmdEnv(t, []string{"ERP_DSN=" + srv.DSN()}, "observe", "--mysql", "erp=env:ERP_DSN",
		"--interval", "100ms", "--duration", "500ms", "-o", found, "-q"))
	if r.code != 0 {
		t.Fatalf("observe --mysql alone: exit %d: %s", r.code, r.stderr)
	}
	if s := systemOf(t, readObservation(t, found), "erp"); s.Cgroup != "/"+filepath.Base(g) || s.Database == nil {
		t.Errorf("erp's cgroup found from the server's pid: %q (want /%s), database %v", s.Cgroup, filepath.Base(g), s.Database != nil)
	}

	sock := srv.Socket()
	checkSources(t, "mysql", "MYSQL_PWD", []sourceCase{
		{"erp=root:Sup3rSecret@unix(" + sock + ")/", "", exitUsage, "--mysql"},
		{"erp=env:IOMATRIX_TEST_NO_SUCH_VAR", "", exitUsage, "IOMATRIX_TEST_NO_SUCH_VAR"},
		{"erp=file:/etc/passwd", "", exitUsage, "/etc/passwd"},
		{"erp=root@unix(/nonexistent/mysqld.sock)/", "", exitFailure, "--mysql erp"},
		{"erp=env:ERP_DSN", "ERP_DSN=observer:Wr0ngPa55@unix(" + sock + ")/", exitFailure, "--mysql erp"},
		{"erp=env:ERP_DSN", "ERP_DSN=observer@unix(" + sock + ")/", 0, ""}, // the password from pwVar
	})
}

// sourceCase is a database source observe is given, with a variable of
// its environment, and what observe must do: end with code and one line
// saying want, or (code 0) observe.
type sourceCase struct {
	source, env string
	code        int
	want        string
}

// checkSources runs observe briefly on each source of the database flag:
// one refused ends within 10 s, on one line, writing no document. The
// observer's password, Corr3ctHorse, is in pwVar for the sources that
// observe; no output ever shows it, nor Sup3rSecret or Wr0ngPa55.
func checkSources(t *testing.T, flag, pwVar string, cases []sourceCase) {
	t.Helper()
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "o.json")
		cmd := iomatrixCmd(t, "observe", "--"+flag, c.source, "--duration", "200ms", "--interval", "100ms", "-o", out, "-q")
		cmd.Env = append(cmd.Env, c.env, pwVar+"=Corr3ctHorse")
		if c.code != 0 {
			cmd.Env = append(cmd.Env[:len(cmd.Env)-1], pwVar+"=")
		}
		start := time.Now()
		r := runIomatrix(t, cmd)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		for _, secret := range []string{"Sup3rSecret", "Wr0ngPa55", "Corr3ctHorse"} {
			if strings.Contains(r.stderr+r.stdout, secret) {
				t.Errorf("--%s %s: the password is in the output: %q", flag, c.source, r.stderr)
			}
		}
		if c.code == 0 {
			if r.code != 0 {
				t.Errorf("--%s %s with %s: exit %d: %s", flag, c.source, pwVar, r.code, r.stderr)
			}
			continue
		}
		if r.code != c.code || len(lines) != 1 || !strings.Contains(lines[0], c.want) || time.Since(start) > 10*time.Second {
			t.Errorf("--%s %s: exit %d after %s, stderr %q; want %d and one line with %q", flag, c.source, r.code, time.Since(start), r.stderr, c.code, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--%s %s: a document was written", flag, c.source)
		}
	}
}

// A real PostgreSQL in its own cgroup, under pgbench, observed through
// its statistics alone: its cgroup is found from its server's pid, its
// figures and the cross-check are in the document (durable_writes
// among them), the server's restart and a statistics reset are resets
// (fresh baselines, no absurd interval), and the sources that
// cannot be used end observe at once, never with the password in the
// line.
func TestObservePostgres(t *testing.T) {
	g := blkioGroup(t, "postgres")
	srv := testenv.PostgreSQL(t, testenv.PostgreSQLOptions{CgroupProcs: filepath.Join(g, "cgroup.procs"), ObserverPassword: "Corr3ctHorse"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	testenv.PgbenchInit(ctx, t, srv, 5)
	dir := t.TempDir()
	out := filepath.Join(dir, "obs.json")
	obs := iomatrixCmdEnv(t, []string{"ERP_PG=" + srv.ObserverDSN(), "PGPASSWORD=Corr3ctHorse"}, "observe", "--postgres", "erp=env:ERP_PG",
		"--v1-enable-counters", "--interval", "200ms", "--save-every", "200ms", "-o", out, "--workload", filepath.Join(dir, "systems.yaml"))
	var stdout, stderr strings.Builder
	obs.Stdout, obs.Stderr = &stdout, &stderr
	testenv.Must(t, obs.Start())
	waitBaseline(t, out)
	testenv.Pgbench(ctx, t, srv, testenv.PgbenchOptions{Rate: 100, Duration: 2 * time.Second})()
	srv.Exec(t, "CHECKPOINT")
	waitObserved(t, out, "the load's WAL and checkpoint", func(doc *results.Observation) bool {
		for _, s := range doc.Systems {
			if s.Database != nil && s.Database.Totals["buffers_checkpoint"] > 0 && s.Database.Totals["wal_flushes"] > 0 {
				return true
			}
		}
		return false
	})
	// Up for 2 s at least, and read so by observe: a restart is told by
	// an uptime shorter than the last one plus the time since.
	testenv.Until(t, 30*time.Second, "PostgreSQL up for 2 s", func() bool { return srv.Uptime(t) >= 2*time.Second })
	waitSaves(t, out, 2)
	srv.Restart(t)
	waitObserved(t, out, "the restart", func(doc *results.Observation) bool {
		for _, e := range doc.Events {
			if e.Source == "erp/postgres" && e.Kind == results.EventReset {
				return true
			}
		}
		return false
	})
	// A statistics reset is another.
	srv.Exec(t, "SELECT pg_stat_reset_shared('wal')")
	waitObserved(t, out, "the statistics reset", func(doc *results.Observation) bool {
		n := 0
		for _, e := range doc.Events {
			if e.Source == "erp/postgres" && e.Kind == results.EventReset {
				n++
			}
		}
		return n >= 2
	})
	testenv.Must(t, obs.Process.Signal(syscall.SIGINT))
	if err := obs.Wait(); err != nil {
		t.Fatalf("observe: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), "Corr3ctHorse") {
		t.Errorf("the password is in the output")
	}
	doc := readObservation(t, out)
	erp := systemOf(t, doc, "erp")
	if erp.Cgroup != "/"+filepath.Base(g) || erp.Database == nil || erp.Database.Kind != "postgres" {
		t.Fatalf("erp: cgroup %q (want /%s), database %+v", erp.Cgroup, filepath.Base(g), erp.Database)
	}
	if erp.Database.Summary.Mean["durable_writes"] <= 0 || erp.CrossCheck == nil || len(erp.CrossCheck.Notes) == 0 {
		t.Errorf("durable_writes %v, cross-check %+v", erp.Database.Summary.Mean["durable_writes"], erp.CrossCheck)
	}
	for c, col := range erp.Database.Seconds.Counters {
		for i, v := range col {
			if v > 1<<40 {
				t.Errorf("database %s interval %d: %d", c, i, v)
			}
		}
	}
	// fit's workload file takes the database's durable writes.
	wl, err := os.ReadFile(filepath.Join(dir, "systems.yaml"))
	testenv.Must(t, err)
	if !regexp.MustCompile(`(?m)^    durable_writes: [1-9][0-9]*$`).Match(wl) {
		t.Errorf("the workload file lacks the durable writes:\n%s", wl)
	}
	if !strings.Contains(stdout.String(), "erp/postgres") {
		t.Errorf("the report does not show the database:\n%s", stdout.String())
	}

	sock := srv.Socket()
	checkSources(t, "postgres", "PGPASSWORD", []sourceCase{
		{"erp=host=" + sock + " user=observer password=Sup3rSecret", "", exitUsage, "--postgres"},
		{"erp=host=/nonexistent user=observer", "", exitFailure, "--postgres erp"},
		{"erp=env:ERP_PG", "ERP_PG=host=" + sock + " user=observer dbname=postgres password=Wr0ngPa55", exitFailure, "--postgres erp"},
		{"erp=env:ERP_PG", "ERP_PG=host=" + sock + " user=observer dbname=postgres", 0, ""}, // the password from pwVar
	})
}
