package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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

// blkioGroup makes a v1 blkio cgroup for a test, removed when it ends
// (after the processes in it are gone).
func blkioGroup(t *testing.T, name string) string {
	t.Helper()
	testenv.Root(t)
	base := "/sys/fs/cgroup/blkio"
	_, err := os.Stat(filepath.Join(base, "blkio.throttle.io_serviced"))
	testenv.Require(t, err == nil, "no v1 blkio hierarchy at "+base)
	dir := filepath.Join(base, fmt.Sprintf("iomatrix-test-%s-%d", name, os.Getpid()))
	testenv.Must(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() {
		for i := 0; i < 100; i++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("cgroup %s left behind", dir)
	})
	return dir
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
// failing the test with its stderr otherwise.
func startObserve(t *testing.T, args ...string) (wait func()) {
	t.Helper()
	obs := iomatrixCmd(t, append([]string{"observe"}, args...)...)
	var stderr strings.Builder
	obs.Stderr = &stderr
	testenv.Must(t, obs.Start())
	return func() {
		t.Helper()
		if err := obs.Wait(); err != nil {
			t.Fatalf("observe: %v\n%s", err, stderr.String())
		}
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
	loads := []*exec.Cmd{
		inCgroup(t, reader, "", "run", busy, "--rw", "randread", "--bs", "4k", "--qd", "8", "--runtime", "7s", "--ramp", "0", "-o", filepath.Join(dir, "r.json"), "--format", "json"),
		inCgroup(t, writer, "", "run", busy, "--rw", "randwrite", "--bs", "4k", "--qd", "8", "--runtime", "7s", "--ramp", "0", "--allow-destructive", "-o", filepath.Join(dir, "w.json"), "--format", "json"),
	}
	for _, c := range loads {
		testenv.Must(t, c.Start())
	}
	defer func() {
		for _, c := range loads {
			if err := c.Wait(); err != nil {
				t.Errorf("%v: %v", c.Args, err)
			}
		}
	}()
	// Both under way: their cgroups count.
	waitCounting(t, reader, "Read")
	waitCounting(t, writer, "Write")

	before := diskstatsOf(t, id)
	out := filepath.Join(dir, "obs.json")
	wait := startObserve(t, busy, idle, "--cgroup", reader+"=reader", "--cgroup", writer+"=writer", "--cgroup", prober+"=prober",
		"--interval", "250ms", "--duration", "4s", "--v1-enable-counters", "-o", out, "-q")
	time.Sleep(time.Second)
	readIn(t, prober, idle, 1000)
	wait()
	after := diskstatsOf(t, id)
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
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(dir, "blkio.throttle.io_serviced"))
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[1] == op && f[2] != "0" {
				return
			}
		}
	}
	t.Fatalf("%s: no %s counted after 20 s", dir, op)
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
	wait := startObserve(t, "--all-devices", "--v1-enable-counters", "--cgroup", short+"=short", "--interval", "100ms", "--duration", "4s", "-o", out, "-q")
	time.Sleep(500 * time.Millisecond)

	// The short-lived system reads, ends, and its cgroup is removed.
	readIn(t, short, disk, 200)
	time.Sleep(300 * time.Millisecond)
	testenv.Must(t, os.Remove(short))

	// A loop device is created, read, detached and deleted.
	ln := newLoopNumber(t)
	loop := ln.path()
	time.Sleep(300 * time.Millisecond)
	if b, err := exec.Command("losetup", "--direct-io=on", loop, backing).CombinedOutput(); err != nil {
		t.Fatalf("losetup: %v: %s", err, b)
	}
	if b, err := exec.Command("dd", "if="+loop, "of=/dev/null", "bs=4k", "count=300", "iflag=direct").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v: %s", err, b)
	}
	time.Sleep(300 * time.Millisecond)
	if b, err := exec.Command("losetup", "-d", loop).CombinedOutput(); err != nil {
		t.Fatalf("losetup -d: %v: %s", err, b)
	}
	testenv.Must(t, ln.remove())
	wait()
	doc := readObservation(t, out)
	kinds := map[string][]string{}
	for _, e := range doc.Events {
		kinds[e.Source] = append(kinds[e.Source], e.Kind)
	}
	name := filepath.Base(loop)
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
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if doc, err := results.ReadObservationFile(out); err == nil && len(doc.Devices) > 0 && doc.Devices[0].Seconds.Len() >= 5 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no document with 5 intervals after 30 s: %s", stderr.String())
				}
			}
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
	wait := startObserve(t, disk, "--cgroupfs", ro, "--cgroup", "/"+filepath.Base(g)+"=sys", "--interval", "100ms", "--duration", "2s", "-o", out, "-q")
	time.Sleep(500 * time.Millisecond)
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
	var err error
	for i := 0; i < 50; i++ {
		if err = l.ioctl(unix.LOOP_CTL_REMOVE); err == nil {
			l.removed = true
			return nil
		}
		time.Sleep(20 * time.Millisecond)
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
			wait := startObserve(t, args...)
			time.Sleep(400 * time.Millisecond)
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
		"--interval", "200ms", "--duration", "6s", "-o", out, "--workload", filepath.Join(dir, "systems.yaml"))
	obs.Env = append(obs.Env, "ERP_DSN="+srv.DSN())
	var stdout, stderr strings.Builder
	obs.Stdout, obs.Stderr = &stdout, &stderr
	testenv.Must(t, obs.Start())
	load := func(n int) {
		for i := 0; i < n; i++ {
			srv.Exec(t, "INSERT INTO obs.t (v) VALUES (REPEAT('x', 200))")
		}
	}
	time.Sleep(500 * time.Millisecond)
	load(100)
	// Up for 2 s at least: a restart is told by an uptime shorter than
	// the last one plus the time since, to the second.
	time.Sleep(2 * time.Second)
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
	for _, c := range []struct {
		source, env string
		code        int
		want        string
	}{
		{"erp=root:Sup3rSecret@unix(" + sock + ")/", "", exitUsage, "--mysql"},
		{"erp=env:IOMATRIX_TEST_NO_SUCH_VAR", "", exitUsage, "IOMATRIX_TEST_NO_SUCH_VAR"},
		{"erp=file:/etc/passwd", "", exitUsage, "/etc/passwd"},
		{"erp=root@unix(/nonexistent/mysqld.sock)/", "", exitFailure, "--mysql erp"},
		{"erp=env:ERP_DSN", "ERP_DSN=observer:Wr0ngPa55@unix(" + sock + ")/", exitFailure, "--mysql erp"},
		{"erp=env:ERP_DSN", "ERP_DSN=observer@unix(" + sock + ")/", 0, ""}, // MYSQL_PWD below
	} {
		out := filepath.Join(t.TempDir(), "o.json")
		cmd := iomatrixCmd(t, "observe", "--mysql", c.source, "--duration", "200ms", "--interval", "100ms", "-o", out, "-q")
		cmd.Env = append(cmd.Env, c.env, "MYSQL_PWD=Corr3ctHorse")
		if c.code != 0 {
			cmd.Env = append(cmd.Env[:len(cmd.Env)-1], "MYSQL_PWD=")
		}
		start := time.Now()
		r := runIomatrix(t, cmd)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		for _, secret := range []string{"Sup3rSecret", "Wr0ngPa55", "Corr3ctHorse"} {
			if strings.Contains(r.stderr+r.stdout, secret) {
				t.Errorf("--mysql %s: the password is in the output: %q", c.source, r.stderr)
			}
		}
		if c.code == 0 {
			if r.code != 0 {
				t.Errorf("--mysql %s with MYSQL_PWD: exit %d: %s", c.source, r.code, r.stderr)
			}
			continue
		}
		if r.code != c.code || len(lines) != 1 || !strings.Contains(lines[0], c.want) || time.Since(start) > 10*time.Second {
			t.Errorf("--mysql %s: exit %d after %s, stderr %q; want %d and one line with %q", c.source, r.code, time.Since(start), r.stderr, c.code, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--mysql %s: a document was written", c.source)
		}
	}
}
