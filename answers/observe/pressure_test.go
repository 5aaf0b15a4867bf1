package observe

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// stallOf is a reading of a stall layout: its I/O counters zero, its
// stall times some and full µs.
func stallOf(l *layout, some, full uint64) []uint64 {
	c := make([]uint64, len(l.counters))
	c[l.index(results.CounterStallSome)] = some
	if i := l.index(results.CounterStallFull); i >= 0 {
		c[i] = full
	}
	return c
}

// A stall figure is a share of each interval's time, in percent: the
// mean is over the whole time (a long interval weighs more), the
// spreads are each interval's and each minute's share, and a share the
// reading's window pushed past the interval's length is held to 100.
func TestStallFigures(t *testing.T) {
	l := cgroupStallLayout
	s := newSeries("erp", "cgroup", "", l, time.Hour, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	s.add(1000, 1e6, stallOf(l, 250_000, 100_000))     // 25 %, 10 %
	s.add(3000, 2e6, stallOf(l, 1_500_000, 1_000_000)) // 75 %, 50 %
	s.add(3500, 5e5, stallOf(l, 500_000, 0))           // 100 %, 0
	s.add(4500, 1e6, stallOf(l, 1_010_000, 1_000_000)) // 101 %: 100, 100 %
	sum := s.summary()
	some, full := sum.Mean[results.FigureStallSome], sum.Mean[results.FigureStallFull]
	if !near(some, 100*3_260_000/4.5e6, 1e-9) || !near(full, 100*2_100_000/4.5e6, 1e-9) {
		t.Errorf("mean stall some %v full %v, want %v and %v: the stall over the time", some, full, 100*3_260_000/4.5e6, 100*2_100_000/4.5e6)
	}
	ps := sum.PerSecond[results.FigureStallSome]
	if ps.P50 != 75 || ps.P95 != 100 || ps.Max != 100 || ps.PrecisionPct != 0 {
		t.Errorf("per-interval stall some %+v, want p50 75 (of 25, 75, 100, 100), p95 and max 100", ps)
	}
	if pf := sum.PerSecond[results.FigureStallFull]; pf.P50 != 10 || pf.Max != 100 {
		t.Errorf("per-interval stall full %+v, want p50 10 (of 0, 10, 50, 100), max 100", pf)
	}
	// One minute, open but all there is: its share is the mean's.
	if pm := sum.PerMinute[results.FigureStallSome]; !near(pm.P50, some, 1e-9) || pm.Max != pm.P50 {
		t.Errorf("per-minute stall some %+v, want the one minute's %v", pm, some)
	}
	r := s.result(time.Second)
	if r.Totals[results.CounterStallSome] != 3_260_000 || !slices.Equal(r.Seconds.Counters[results.CounterStallFull], []uint64{100_000, 1_000_000, 0, 1_000_000}) {
		t.Errorf("totals %v, full stall timeline %v", r.Totals, r.Seconds.Counters[results.CounterStallFull])
	}
	// The I/O figures are there beside them.
	if _, ok := sum.Mean["reads"]; !ok {
		t.Errorf("figures %v: no reads", sum.Mean)
	}
}

// Minutes of stall: the per-minute spread is each minute's share, and
// the host's pressure, which has no I/Os, finds its busiest hour by its
// stall.
func TestHostStallHour(t *testing.T) {
	l := hostStallLayout
	s := newSeries("host", results.KindPressure, "", l, time.Hour, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for i := range 180 * 60 {
		m := i / 60
		some := uint64(100_000) // 10 % of each second
		if m >= 70 && m < 130 {
			some = 900_000
		}
		s.add(int64(i+1)*1000, 1e6, stallOf(l, some, some/2))
	}
	sum := s.summary()
	if got := slices.Sorted(maps.Keys(sum.Mean)); !slices.Equal(got, []string{results.FigureStallFull, results.FigureStallSome}) {
		t.Errorf("the host's figures %v, want the stall shares alone", got)
	}
	if pm := sum.PerMinute[results.FigureStallSome]; pm.P50 != 10 || pm.P95 != 90 || pm.Max != 90 {
		t.Errorf("per-minute stall some %+v, want p50 10, p95 and max 90", pm)
	}
	if m := sum.Mean[results.FigureStallSome]; !near(m, (120*10+60*90)/180.0, 1e-9) {
		t.Errorf("mean stall some %v", m)
	}
	h := sum.BusiestHour
	if h == nil || h.StartMS != 70*60000 || h.EndMS != 130*60000 || h.Mean[results.FigureStallSome] != 90 || h.ReadShare != 0 || h.SizeMix != nil {
		t.Fatalf("the host's busiest hour %+v, want minutes 70–130 at 90 %% stall", h)
	}
	if sum.SizeMix != nil {
		t.Errorf("a size mix %v for a series without I/Os", sum.SizeMix)
	}
}

// psi writes a pressure file: some and full totals in µs.
func (f *fixture) psi(path string, some, full uint64) {
	f.write(path, fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", some, full))
}

// hostPSI sets the host's /proc/pressure/io.
func (f *fixture) hostPSI(some, full uint64) {
	f.psi(filepath.Join(f.proc, "pressure", "io"), some, full)
}

// cgPSI sets a cgroup's io.pressure.
func (f *fixture) cgPSI(path string, some, full uint64) {
	f.psi(filepath.Join(f.cgroup, path, "io.pressure"), some, full)
}

// recreate removes a cgroup and makes it again under the same path, as
// a new directory (a new inode: made before the old one goes).
func (f *fixture) recreate(path string) {
	f.t.Helper()
	dir := filepath.Join(f.cgroup, path)
	tmp := dir + ".new"
	testenv.Must(f.t, os.Mkdir(tmp, 0o755))
	testenv.Must(f.t, os.RemoveAll(dir))
	testenv.Must(f.t, os.Rename(tmp, dir))
}

// observing starts an observer of the fixture's vda and the cgroups
// named, path=name, through ctrl (v2 when its version is 0), as a test
// that scripts the time: its steps sample at whole seconds.
func (f *fixture) observing(ctrl cgroup.Controller, cgroups ...string) (o *Observer, step func(sec int)) {
	f.t.Helper()
	if ctrl.Version == 0 {
		ctrl = cgroup.Controller{Mode: cgroup.Unified, Version: 2, Root: f.cgroup, Dir: f.cgroup, Name: "io"}
	}
	var specs []CgroupSpec
	for _, c := range cgroups {
		path, name, _ := strings.Cut(c, "=")
		specs = append(specs, CgroupSpec{Path: path, Name: name})
	}
	o, err := New(Config{FS: sysfs.NewFS(f.sys, f.proc), Devices: DeviceSelection{All: true}, Ctrl: ctrl,
		Cgroups: specs, Interval: time.Second, Window: time.Hour})
	testenv.Must(f.t, err)
	testenv.Must(f.t, o.begin(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)))
	return o, func(sec int) {
		f.t.Helper()
		testenv.Must(f.t, o.sample(context.Background(), time.Duration(sec)*time.Second))
	}
}

func systemsOf(doc *results.Observation) map[string]results.ObservedSystem {
	m := map[string]results.ObservedSystem{}
	for _, s := range doc.Systems {
		m[s.Name] = s
	}
	return m
}

func anyNote(notes []string, part string) bool {
	return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, part) })
}

// On cgroup v2 each system's stall is its cgroup's io.pressure, kept in
// its series' counters beside its I/O; a cgroup without io.pressure has
// no stall counters at all (never zeros) and says the host's stands for
// it; a cgroup created again counts its stall from zero; one whose
// io.pressure goes while its io.stat stays is a gap, not a stall of zero.
// The host's /proc/pressure/io is a series of its own.
func TestObserverStall(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 1000, 8000, 500, 8000, 100)
	for _, c := range []string{"/a", "/b", "/c"} {
		f.cg(c, 0, 0)
	}
	f.cgPSI("/a", 1_000_000, 500_000)
	f.cgPSI("/c", 7, 7)
	// b: PSI disabled for it (cgroup.pressure 0 hides the file).
	f.hostPSI(50_000_000, 20_000_000)
	o, step := f.observing(cgroup.Controller{}, "/a=a", "/b=b", "/c=c")
	step(0)

	// 1 s: a stalled 400 ms (100 ms of it all stalled), the host 600 ms.
	f.cg("/a", 10, 0)
	f.cgPSI("/a", 1_400_000, 600_000)
	f.cg("/b", 5, 0)
	f.cgPSI("/c", 7, 7)
	f.hostPSI(50_600_000, 20_200_000)
	step(1)
	// 2 s: a is made again (its counters back near zero: 50 ms of stall
	// since); c's io.pressure goes, its io.stat stays.
	f.recreate("/a")
	f.cg("/a", 3, 0)
	f.cgPSI("/a", 50_000, 0)
	testenv.Must(t, os.Remove(filepath.Join(f.cgroup, "c", "io.pressure")))
	f.cg("/c", 4, 0)
	f.hostPSI(51_000_000, 20_300_000)
	step(2)
	// 3 s: a stalls 250 ms.
	f.cg("/a", 8, 0)
	f.cgPSI("/a", 300_000, 20_000)
	f.cg("/c", 9, 0)
	f.hostPSI(51_100_000, 20_300_000)
	step(3)

	doc := o.build()
	sys := systemsOf(doc)
	a, b, c := sys["a"], sys["b"], sys["c"]
	if a.Pressure != results.PressureCgroup || a.IO == nil {
		t.Fatalf("a: pressure %q, io %v", a.Pressure, a.IO)
	}
	if got := a.IO.Seconds.Counters[results.CounterStallSome]; !slices.Equal(got, []uint64{400_000, 50_000, 250_000}) {
		t.Errorf("a's stall some by interval %v, want 400 ms, 50 ms since it was made again, 250 ms", got)
	}
	if got := a.IO.Seconds.Counters[results.CounterStallFull]; !slices.Equal(got, []uint64{100_000, 0, 20_000}) {
		t.Errorf("a's stall full by interval %v", got)
	}
	if got := a.IO.Totals["rios"]; got != 10+3+5 {
		t.Errorf("a's reads %d, want 10, 3 after it was made again, 5", got)
	}
	if m := a.IO.Summary.Mean[results.FigureStallSome]; !near(m, 100*700_000/3e6, 1e-9) {
		t.Errorf("a's mean stall some %v %%, want %v", m, 100*700_000/3e6)
	}
	var resets []string
	for _, e := range doc.Events {
		if e.Source == "a" && e.Kind == results.EventReset {
			resets = append(resets, e.Detail)
		}
	}
	if len(resets) != 2 || !anyNote(resets, "io.pressure: now inode") {
		t.Errorf("a's resets %q, want its io.stat line's and its io.pressure's", resets)
	}

	if b.Pressure != results.PressureHost || b.IO == nil {
		t.Fatalf("b: pressure %q, io %v", b.Pressure, b.IO)
	}
	for _, name := range []string{results.CounterStallSome, results.CounterStallFull} {
		if _, ok := b.IO.Totals[name]; ok {
			t.Errorf("b keeps no io.pressure, yet has a %s counter", name)
		}
	}
	if _, ok := b.IO.Summary.Mean[results.FigureStallSome]; ok {
		t.Errorf("b keeps no io.pressure, yet has stall figures: %v", b.IO.Summary.Mean)
	}
	if !anyNote(doc.Accounting.Notes, "No io.pressure for b") {
		t.Errorf("no note on b's missing io.pressure in %q", doc.Accounting.Notes)
	}

	// c: its first interval, then a gap from the moment its io.pressure
	// went, said so.
	if c.IO == nil || c.IO.Seconds.Len() != 1 || c.IO.Totals[results.CounterStallSome] != 0 || c.IO.Totals["rios"] != 0 {
		t.Errorf("c: %d intervals, totals %v; want its first interval alone", c.IO.Seconds.Len(), c.IO.Totals)
	}
	if n := events(doc, "c", results.EventGone); n != 1 {
		t.Errorf("c gone %d times in %+v", n, doc.Events)
	}
	for _, e := range doc.Events {
		if e.Source == "c" && !strings.Contains(e.Detail, "its io.pressure went") {
			t.Errorf("c: %s: %q", e.Kind, e.Detail)
		}
	}

	h := doc.HostPressure
	if h == nil || h.Kind != results.KindPressure || h.Summary == nil {
		t.Fatalf("host pressure %+v", h)
	}
	if got := h.Seconds.Counters[results.CounterStallSome]; !slices.Equal(got, []uint64{600_000, 400_000, 100_000}) {
		t.Errorf("the host's stall some by interval %v", got)
	}
	if m := h.Summary.Mean[results.FigureStallFull]; !near(m, 100*300_000/3e6, 1e-9) {
		t.Errorf("the host's mean stall full %v", m)
	}
	if !anyNote(doc.Accounting.Notes, "pressure stall information (PSI)") {
		t.Errorf("no note on what a stall share is in %q", doc.Accounting.Notes)
	}

	// The document carries it all, and reads back.
	data, err := encodeObservation(doc)
	testenv.Must(t, err)
	back, err := results.ReadObservation(strings.NewReader(string(data)))
	testenv.Must(t, err)
	if back.HostPressure == nil || back.HostPressure.Totals[results.CounterStallSome] != 1_100_000 || systemsOf(back)["b"].Pressure != results.PressureHost {
		t.Errorf("read back: host pressure %+v, systems %+v", back.HostPressure, back.Systems)
	}
}

// A host without /proc/pressure/io (PSI disabled at boot) has no host
// series and says so; its systems' stall is not known.
func TestObserverNoHostPressure(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 1000, 8000, 500, 8000, 100)
	f.cg("/a", 0, 0)
	o, step := f.observing(cgroup.Controller{}, "/a=a")
	for sec := range 3 {
		f.cg("/a", uint64(sec*10), 0)
		step(sec)
	}
	doc := o.build()
	if doc.HostPressure != nil {
		t.Errorf("a host pressure series %+v, without /proc/pressure/io", doc.HostPressure)
	}
	if a := systemsOf(doc)["a"]; a.Pressure != results.PressureNone || a.IO.Totals["rios"] != 20 {
		t.Errorf("a: pressure %q, totals %v", a.Pressure, a.IO.Totals)
	}
	if !anyNote(doc.Accounting.Notes, "This host keeps no pressure stall information") {
		t.Errorf("notes %q", doc.Accounting.Notes)
	}
	if len(doc.Events) != 0 {
		t.Errorf("events %+v: a host without pressure is no error", doc.Events)
	}
}

// On cgroup v1 the host's pressure is the only one: every system says
// its stall is the host's.
func TestObserverV1Stall(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 1000, 8000, 500, 8000, 100)
	v1 := func(reads uint64) {
		dir := filepath.Join(f.cgroup, "erp")
		f.write(filepath.Join(dir, "blkio.throttle.io_serviced_recursive"), fmt.Sprintf("254:0 Read %d\n254:0 Write 0\nTotal %d\n", reads, reads))
		f.write(filepath.Join(dir, "blkio.throttle.io_service_bytes_recursive"), fmt.Sprintf("254:0 Read %d\n254:0 Write 0\nTotal %d\n", reads*4096, reads*4096))
	}
	v1(0)
	f.hostPSI(1000, 500)
	o, step := f.observing(cgroup.Controller{Mode: cgroup.Hybrid, Version: 1, Root: f.cgroup, Dir: f.cgroup, Name: "blkio"}, "/erp=erp")
	for sec := range 3 {
		v1(uint64(sec * 10))
		f.hostPSI(1000+uint64(sec)*300_000, 500+uint64(sec)*100_000)
		step(sec)
	}
	doc := o.build()
	erp := systemsOf(doc)["erp"]
	if erp.Pressure != results.PressureHost || erp.IO.Totals["rios"] != 20 {
		t.Errorf("erp: pressure %q, totals %v", erp.Pressure, erp.IO.Totals)
	}
	if _, ok := erp.IO.Totals[results.CounterStallSome]; ok {
		t.Errorf("a v1 cgroup with stall counters: %v", erp.IO.Totals)
	}
	if h := doc.HostPressure; h == nil || h.Summary.Mean[results.FigureStallSome] != 30 || h.Summary.Mean[results.FigureStallFull] != 10 {
		t.Errorf("the host's pressure %+v, want 30 %% some, 10 %% full", h)
	}
	if !anyNote(doc.Accounting.Notes, "Cgroup v1 keeps no pressure per cgroup") {
		t.Errorf("notes %q", doc.Accounting.Notes)
	}
}

// A pressure file with a some line alone (the host's cpu file before
// Linux 5.13 is one; io always has both) gives a series of the some
// stall alone: no full stall of zero.
func TestObserverSomeStallAlone(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 1000, 8000, 500, 8000, 100)
	some := func(us uint64) {
		f.write(filepath.Join(f.proc, "pressure", "io"), fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", us))
	}
	some(0)
	o, step := f.observing(cgroup.Controller{})
	step(0)
	some(500_000)
	step(1)
	h := o.build().HostPressure
	if h == nil || h.Summary.Mean[results.FigureStallSome] != 50 {
		t.Fatalf("host pressure %+v, want 50 %% some", h)
	}
	if _, ok := h.Totals[results.CounterStallFull]; ok {
		t.Errorf("a full stall counter without a full line: %v", h.Totals)
	}
	if _, ok := h.Summary.Mean[results.FigureStallFull]; ok {
		t.Errorf("a full stall figure without a full line: %v", h.Summary.Mean)
	}
}
