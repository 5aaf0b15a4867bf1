package observe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// fixture is a procfs, a sysfs and a cgroup v2 tree in a directory, whose
// counters a test sets between samples.
type fixture struct {
	t                 *testing.T
	proc, sys, cgroup string
	disks             map[string]string // name -> diskstats line
	order             []string
}

func newFixture(t *testing.T) *fixture {
	dir := t.TempDir()
	f := &fixture{t: t, proc: filepath.Join(dir, "proc"), sys: filepath.Join(dir, "sys"), cgroup: filepath.Join(dir, "cgroup"), disks: map[string]string{}}
	for _, d := range []string{f.proc, filepath.Join(f.sys, "class", "block"), filepath.Join(f.sys, "devices", "pci0", "vda"),
		filepath.Join(f.sys, "devices", "virtual", "block", "loop9"), f.cgroup} {
		testenv.Must(t, os.MkdirAll(d, 0o755))
	}
	testenv.Must(t, os.Symlink("../../devices/pci0/vda", filepath.Join(f.sys, "class", "block", "vda")))
	testenv.Must(t, os.Symlink("../../devices/virtual/block/loop9", filepath.Join(f.sys, "class", "block", "loop9")))
	f.write(filepath.Join(f.cgroup, "cgroup.controllers"), "cpu io memory\n")
	return f
}

func (f *fixture) write(path, s string) {
	f.t.Helper()
	testenv.Must(f.t, os.MkdirAll(filepath.Dir(path), 0o755))
	testenv.Must(f.t, os.WriteFile(path, []byte(s), 0o644))
}

// disk sets a diskstats line: reads, read sectors, writes, write sectors
// and io ticks; "" removes the device.
func (f *fixture) disk(maj, min int, name string, r, rs, w, ws, ticks uint64) {
	if _, ok := f.disks[name]; !ok {
		f.order = append(f.order, name)
	}
	f.disks[name] = fmt.Sprintf("%4d %7d %s %d 0 %d %d %d 0 %d %d 0 %d %d 0 0 0 0 0 0", maj, min, name, r, rs, r/2, w, ws, w/2, ticks, ticks)
	f.flush()
}

func (f *fixture) removeDisk(name string) {
	delete(f.disks, name)
	f.flush()
}

func (f *fixture) flush() {
	var b strings.Builder
	for _, n := range f.order {
		if l, ok := f.disks[n]; ok {
			b.WriteString(l + "\n")
		}
	}
	f.write(filepath.Join(f.proc, "diskstats"), b.String())
}

// cg sets a cgroup's io.stat line for 254:0.
func (f *fixture) cg(path string, rios, wios uint64) {
	f.write(filepath.Join(f.cgroup, path, "cgroup.controllers"), "io memory\n")
	f.write(filepath.Join(f.cgroup, path, "io.stat"), fmt.Sprintf("254:0 rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n", rios*4096, wios*8192, rios, wios))
}

type fakeDB struct {
	counters map[string]uint64
	uptime   uint64
	err      error
}

func (d *fakeDB) Kind() string { return "mysql" }
func (d *fakeDB) Close() error { return nil }
func (d *fakeDB) Status(context.Context) (DBStatus, error) {
	c := map[string]uint64{}
	for k, v := range d.counters {
		c[k] = v
	}
	return DBStatus{Counters: c, UptimeS: d.uptime}, d.err
}

func events(doc *results.Observation, source, kind string) int {
	n := 0
	for _, e := range doc.Events {
		if e.Source == source && e.Kind == kind {
			n++
		}
	}
	return n
}

// The observer turns a scripted history of counters into exact
// intervals: a device that appears and goes, a counter wrap and a reset,
// a cgroup removed and created again, a database restarted.
func TestObserverFaults(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 1000, 8000, 500, 8000, math.MaxUint32-100)
	f.cg("/system.slice/a.service", 10, 0)
	f.cg("/system.slice/b.service", 5, 5)
	ctrl := cgroup.Controller{Mode: cgroup.Unified, Version: 2, Root: f.cgroup, Dir: f.cgroup, Name: "io"}
	db := &fakeDB{counters: map[string]uint64{"data_reads": 100, "data_writes": 50, "data_read": 1 << 20, "data_written": 1 << 20}, uptime: 1000}
	o, err := New(Config{FS: sysfs.NewFS(f.sys, f.proc), Devices: DeviceSelection{All: true}, Ctrl: ctrl,
		AutoCgroups: true, Databases: []DatabaseSource{{System: "a.service", DB: db}},
		Interval: time.Second, Window: time.Hour})
	testenv.Must(t, err)
	testenv.Must(t, o.begin(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)))
	ctx := context.Background()
	step := func(sec int) { t.Helper(); testenv.Must(t, o.sample(ctx, time.Duration(sec)*time.Second)) }
	step(0)

	// 1 s: 100 reads and 20 writes; io_ticks wraps past 2^32.
	f.disk(254, 0, "vda", 1100, 8800, 520, 8320, 100)
	f.cg("/system.slice/a.service", 60, 0)
	db.counters["data_reads"] += 40
	step(1)
	// 2 s: loop9 appears; b.service is removed.
	f.disk(7, 9, "loop9", 7, 56, 0, 0, 3)
	testenv.Must(t, os.RemoveAll(filepath.Join(f.cgroup, "system.slice", "b.service")))
	step(2)
	// 3 s: loop9 does 10 reads; vda's counters are reset (a disk swapped
	// under the same number); b.service is back, a new cgroup; the
	// database restarted.
	f.disk(7, 9, "loop9", 17, 136, 0, 0, 5)
	f.disk(254, 0, "vda", 30, 240, 3, 48, 7)
	f.cg("/system.slice/b.service", 2, 1)
	db.counters = map[string]uint64{"data_reads": 3, "data_writes": 1, "data_read": 3 << 14, "data_written": 1 << 14}
	db.uptime = 1
	step(3)
	// 4 s: loop9 goes; b.service does 4 reads.
	f.removeDisk("loop9")
	f.cg("/system.slice/b.service", 6, 1)
	step(4)

	doc := o.build()
	dev := map[string]results.ObservedSeries{}
	for _, d := range doc.Devices {
		dev[d.Name] = d
	}
	vda := dev["vda"]
	if got := vda.Totals["rios"]; got != 100+30 {
		t.Errorf("vda reads %d, want 100 then 30 after the reset", got)
	}
	if got := vda.Totals["io_ticks_ms"]; got != 201+7 {
		t.Errorf("vda io ticks %d, want 201 across the wrap and 7 after the reset", got)
	}
	if got := vda.Totals["rbytes"]; got != (800+240)*512 {
		t.Errorf("vda read bytes %d", got)
	}
	if got := dev["loop9"].Totals["rios"]; got != 10 {
		t.Errorf("loop9 reads %d, want the 10 after its baseline", got)
	}
	for _, want := range []struct{ source, kind string }{
		{"vda", results.EventWrap}, {"vda", results.EventReset}, {"loop9", results.EventAppeared}, {"loop9", results.EventGone},
		{"b.service", results.EventGone}, {"b.service", results.EventAppeared}, {"a.service/mysql", results.EventReset},
	} {
		if events(doc, want.source, want.kind) != 1 {
			t.Errorf("no single %s event for %s in %+v", want.kind, want.source, doc.Events)
		}
	}
	sys := map[string]results.ObservedSystem{}
	for _, s := range doc.Systems {
		sys[s.Name] = s
	}
	a, b := sys["a.service"], sys["b.service"]
	if a.IO == nil || a.IO.Totals["rios"] != 50 || a.Writeback != "cgroup" {
		t.Fatalf("a.service %+v", a)
	}
	// b.service: gone at 2 s, a baseline at 3 s, 4 reads at 4 s.
	if b.IO == nil || b.IO.Totals["rios"] != 4 || b.IO.Minutes.Len() != 1 || b.IO.Seconds.Len() != 2 {
		t.Fatalf("b.service totals %v, %d intervals", b.IO.Totals, b.IO.Seconds.Len())
	}
	if a.Database == nil || a.Database.Totals["data_reads"] != 40+3 {
		t.Fatalf("database reads %v, want 40 and 3 since the restart", a.Database.Totals)
	}
	if a.CrossCheck == nil || len(a.CrossCheck.Notes) == 0 {
		t.Errorf("no cross-check for a.service: %+v", a.CrossCheck)
	}
	for _, s := range append(doc.Devices, *a.IO, *b.IO, *a.Database) {
		for name, col := range s.Seconds.Counters {
			for i, v := range col {
				if v > 1<<40 {
					t.Errorf("%s %s interval %d: %d, a negative step turned absurd", s.Name, name, i, v)
				}
			}
		}
	}
	if doc.Accounting.CgroupVersion != 2 || doc.Accounting.Writeback != "cgroup" {
		t.Errorf("accounting %+v", doc.Accounting)
	}
}

// The document stays readable as an observation and refused as results.
func TestObservationRoundTrip(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 1, 8, 1, 8, 1)
	o, err := New(Config{FS: sysfs.NewFS(f.sys, f.proc), Interval: time.Second, Out: filepath.Join(t.TempDir(), "o.json")})
	testenv.Must(t, err)
	testenv.Must(t, o.begin(time.Now()))
	testenv.Must(t, o.sample(context.Background(), 0))
	f.disk(254, 0, "vda", 11, 88, 1, 8, 4)
	testenv.Must(t, o.sample(context.Background(), time.Second))
	testenv.Must(t, o.save(time.Second, true))
	doc, err := results.ReadObservationFile(o.cfg.Out)
	testenv.Must(t, err)
	if len(doc.Devices) != 1 || doc.Devices[0].Summary.Mean["reads"] != 10 {
		t.Fatalf("read back %+v", doc.Devices)
	}
	if _, err := results.ReadDocumentFile(o.cfg.Out); err == nil || !strings.Contains(err.Error(), "observation") {
		t.Errorf("an observation read as results: %v", err)
	}
}

func TestSystemName(t *testing.T) {
	for path, want := range map[string]string{
		"/system.slice/mariadb.service": "mariadb.service",
		"/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope":                                                                                                    "libpod-0123456789ab",
		"/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef":                                                                                                                        "0123456789ab",
		"/kubepods/burstable/pod1b2c3d4e-1111-2222-3333-444455556666/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef":                                                                    "pod-1b2c3d4e/0123456789ab",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_1111_2222_3333_444455556666.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope": "pod-1b2c3d4e/0123456789ab",
		"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1b2c3d4e_1111_2222_3333_444455556666.slice":                                                                                     "pod-1b2c3d4e",
		"/":        "root",
		"/batch/a": "a",
	} {
		if got := SystemName(path); got != want {
			t.Errorf("SystemName(%s) = %q, want %q", path, got, want)
		}
	}
}

// Discovery takes the leaves under the service, machine and pod slices,
// and names two leaves of one name apart by their parents.
func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{
		"system.slice/mariadb.service", "system.slice/sshd.service", "system.slice/app.slice/web.service",
		"machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope/container",
		"user.slice/user-1000.slice/session-1.scope", "kubepods/besteffort/podaaaaaaaa-1111-2222-3333-444455556666/bbbb",
		"kubepods/burstable/podcccccccc-1111-2222-3333-444455556666/bbbb",
	} {
		testenv.Must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	got, err := Discover(dir)
	testenv.Must(t, err)
	names := map[string]string{}
	for _, s := range got {
		names[s.Path] = s.Name
	}
	want := map[string]string{
		"/system.slice/mariadb.service":       "mariadb.service",
		"/system.slice/sshd.service":          "sshd.service",
		"/system.slice/app.slice/web.service": "web.service",
		"/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope/container": "libpod-0123456789ab",
		"/kubepods/besteffort/podaaaaaaaa-1111-2222-3333-444455556666/bbbb":                                      "pod-aaaaaaaa/bbbb",
		"/kubepods/burstable/podcccccccc-1111-2222-3333-444455556666/bbbb":                                       "pod-cccccccc/bbbb",
	}
	if len(names) != len(want) {
		t.Errorf("found %v, want %v", names, want)
	}
	for p, n := range want {
		if names[p] != n {
			t.Errorf("%s: named %q, want %q", p, names[p], n)
		}
	}
}

// A restart is told to the reading by the statements counted, where the
// uptime's whole seconds cannot tell it (a server up 2 s, restarted and
// up 1 s when read again 400 ms later).
func TestDatabaseRestarted(t *testing.T) {
	st := &systemState{dbUptime: 2, dbAt: 2400 * time.Millisecond, dbQueries: 350}
	at := 2800 * time.Millisecond
	if st.restarted(at, DBStatus{UptimeS: 1}) {
		t.Error("an uptime of 1 s after 2 s, 400 ms later, taken for a restart on its own")
	}
	if !st.restarted(at, DBStatus{UptimeS: 1, Queries: 4}) {
		t.Error("4 statements after 350: not taken for a restart")
	}
	if st.restarted(at, DBStatus{UptimeS: 3, Queries: 352}) {
		t.Error("a server that ran on taken for restarted")
	}
	if !st.restarted(10*time.Second, DBStatus{UptimeS: 3}) {
		t.Error("up 3 s, 7.6 s after being up 2 s: not taken for a restart")
	}
}

// A read that loses time inside its window is made again and the
// narrowest window kept, its reading placed at the window's middle; a
// read that fails is not repeated.
func TestTimedRead(t *testing.T) {
	start := time.Now()
	clock := start
	o := &Observer{realClock: true, start: start, now: func() time.Time { return clock }}
	calls := 0
	at, width, err := o.timed(0, func() error {
		calls++
		if calls == 1 {
			clock = clock.Add(20 * time.Millisecond) // a read that loses time, which timed measures
		} else {
			clock = clock.Add(time.Millisecond)
		}
		return nil
	})
	if err != nil || calls != 2 || width != time.Millisecond || at != 20*time.Millisecond+time.Millisecond/2 {
		t.Errorf("a slow first read: %d calls, window %v, at %v, %v; want a second, narrow read after the first", calls, width, at, err)
	}
	calls = 0
	_, _, err = o.timed(0, func() error {
		calls++
		clock = clock.Add(5 * time.Millisecond) // a slow read, which would be made again if it had not failed
		return errors.New("gone")
	})
	if err == nil || calls != 1 {
		t.Errorf("a failing read: %d calls, %v", calls, err)
	}
	calls = 0
	slow := []time.Duration{4 * time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond}
	_, width, _ = o.timed(0, func() error {
		clock = clock.Add(slow[calls]) // every read slow: the narrowest kept
		calls++
		return nil
	})
	if calls != readTries || width != 3*time.Millisecond {
		t.Errorf("reads always slow: %d calls, window %v; want %d and the narrowest, 3ms", calls, width, readTries)
	}
	o.realClock = false
	if at, width, _ := o.timed(5*time.Second, func() error { return nil }); at != 5*time.Second || width != 0 {
		t.Errorf("scripted time: at %v, window %v", at, width)
	}
}
