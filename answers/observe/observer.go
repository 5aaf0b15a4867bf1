// Package observe samples what running systems demand of their block
// devices, with no I/O of its own: /proc/diskstats for the devices (the
// figures iostat prints, by its formulas), each system's cgroup
// counters (with its stall on I/O where its cgroup keeps pressure), the
// host's pressure, and optionally a database's own view of its I/O. It keeps
// per-interval timelines for a bounded window and per-minute ones for the
// whole observation, summarizes them (mean, percentiles, the busiest
// hour) and saves the document atomically as it goes. Options are the
// observation's settings as a user gives them, checked with the sources
// they name before any sampling (Options.Config, Config.OpenDatabases).
package observe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
)

// Config is one observation's sources and schedule.
type Config struct {
	FS      sysfs.FS
	Devices DeviceSelection
	// DeviceArgs are the devices as asked, recorded ("auto" when none).
	DeviceArgs []string

	// Ctrl is the cgroup I/O controller (Version 0: none; then no
	// cgroups may be asked for).
	Ctrl        cgroup.Controller
	Cgroups     []CgroupSpec
	AutoCgroups bool

	Databases []DatabaseSource
	// EnableV1Counters, on cgroup v1, sets and at once removes a throttle
	// rule on each observed device (in a cgroup of the observer's own),
	// so that the kernel counts the device's cgroup I/O from then on.
	EnableV1Counters bool

	Interval, Duration time.Duration
	// Window is how far back the document's per-interval timelines
	// reach (memory keeps at least an hour: the busiest hour's size mix is
	// taken from its intervals).
	Window    time.Duration
	SaveEvery time.Duration
	Out       string

	// Saved is called after each save (progress); may be nil.
	Saved func(SaveInfo)
}

// DatabaseSource is a database read for the system of the same name.
type DatabaseSource struct {
	System string
	DB     Database
	// Cgroup is the server's cgroup where it is known (its pid's): the
	// system is then observed through it as well.
	Cgroup string
}

// SaveInfo describes one save, for progress and for its cost.
type SaveInfo struct {
	Elapsed time.Duration
	Bytes   int
	Took    time.Duration
	Devices int
	Systems int
	Final   bool
}

// MinWindow is the shortest per-interval window of the document, and
// DefaultWindow its default: ten minutes at full resolution keep the file
// of a week small, the busiest hour is judged from memory.
const (
	MinWindow     = time.Minute
	DefaultWindow = 10 * time.Minute
)

// Observer runs one observation.
type Observer struct {
	cfg     Config
	start   time.Time
	doc     *results.Observation
	sel     *selector
	devices map[sysfs.DevNum]*deviceState
	devList []sysfs.DevNum // in order of first sight
	systems []*systemState
	byName  map[string]*systemState
	host    hostState
	events  []results.ObserveEvent
	// realClock stamps each reading with the time it was read (see
	// readAt); off in tests that script the time.
	realClock bool
	// now is the clock timed reads (time.Now when nil; a test's own
	// clock to time reads without waiting).
	now func() time.Time
	// sampled: the first sample was taken; a source seen after it came
	// during the observation.
	sampled bool
}

type deviceState struct {
	dev  sysfs.DevNum
	name string
	tr   tracker
	s    *series
	gone bool
	// On v1: the root hierarchy's recursive counts of the device, and the
	// intervals in which the device did I/O that no cgroup counted.
	rootTr     tracker
	lastIOs    uint64 // the device's reads and writes in the last interval
	lastRoot   uint64 // the root's count of them in the interval before
	uncounted  int
	haveLatest bool
}

// hostState is the host's I/O pressure, /proc/pressure/io.
type hostState struct {
	tr   tracker
	s    *series // nil until read: the kernel keeps none, or not yet
	gone bool
	// none is why the host has no pressure, once a read told.
	none string
}

// hostPressureSource names the host's pressure in events, as
// "system/kind" names a database.
const hostPressureSource = "host/pressure"

type systemState struct {
	name, cgroupPath string
	reader           *cgroupReader
	lines            map[sysfs.DevNum]*tracker
	stallTr          tracker // its io.pressure, where its series keeps it
	known            bool    // the cgroup was read at least once
	gone             bool
	io               *series
	perDevice        map[sysfs.DevNum]*results.DeviceTotals
	db               *DatabaseSource
	dbTr             tracker
	dbUptime         uint64
	dbAt             time.Duration // when dbUptime was read
	dbQueries        uint64
	dbSessions       int // the most at a reading
	dbEpoch          string
	dbGone           bool
	dbSeries         *series
	writeback        string
}

// New checks the configuration against the host before any sampling:
// every named cgroup must exist and be readable. A cgroup that cannot be
// observed is bad input naming the cgroup option and the cgroup.
func New(cfg Config) (*Observer, error) {
	if cfg.Interval <= 0 {
		return nil, errors.New("interval must be positive")
	}
	if cfg.Window < MinWindow {
		cfg.Window = DefaultWindow
	}
	if cfg.SaveEvery <= 0 {
		cfg.SaveEvery = 10 * time.Second
	}
	o := &Observer{cfg: cfg, devices: map[sysfs.DevNum]*deviceState{}, byName: map[string]*systemState{},
		sel: &selector{sys: cfg.FS, sel: cfg.Devices, known: map[sysfs.DevNum]selected{}}}
	if (len(cfg.Cgroups) > 0 || cfg.AutoCgroups) && cfg.Ctrl.Version == 0 {
		return nil, fault.Input("cgroup", "no cgroup I/O controller (v1 blkio or v2 io) to read systems from")
	}
	for _, spec := range cfg.Cgroups {
		if _, ok := o.byName[spec.Name]; ok {
			return nil, fault.AsInput(&sourceError{"cgroup", spec.Path, errors.New("a second system of that name (name them apart: PATH=NAME)")})
		}
		st := o.addCgroup(spec)
		if _, _, err := st.reader.read(); err != nil {
			return nil, fault.AsInput(&sourceError{"cgroup", spec.Path, cgroupWhy(cfg.Ctrl, err)})
		}
	}
	for i := range cfg.Databases {
		d := &cfg.Databases[i]
		if _, ok := dbKinds[d.DB.Kind()]; !ok {
			return nil, fmt.Errorf("database for system %s: unknown kind %q", d.System, d.DB.Kind())
		}
		st, ok := o.byName[d.System]
		switch {
		case !ok && d.Cgroup != "" && o.observer(d.Cgroup) != nil:
			other := o.observer(d.Cgroup)
			return nil, fault.AsInput(&sourceError{d.DB.Kind(), d.System, fmt.Errorf(
				"its server runs in cgroup %s, observed already as system %s (cgroup %s): give the two one name", d.Cgroup, other.name, other.cgroupPath)})
		case !ok && d.Cgroup != "":
			st = o.addCgroup(CgroupSpec{Path: d.Cgroup, Name: d.System})
		case !ok:
			st = o.newSystem(d.System) // known by its database alone
		}
		if st.db != nil {
			return nil, fmt.Errorf("database for system %s given twice", d.System)
		}
		st.db = d
	}
	return o, nil
}

// cgroupWhy says why a cgroup cannot be read.
func cgroupWhy(ctrl cgroup.Controller, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist) && ctrl.Version == 2:
		return errors.New("no such cgroup, or it has no io.stat (the io controller is not enabled in its parent's cgroup.subtree_control)")
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no such cgroup in " + ctrl.Dir)
	}
	return err
}

// newSystem adds a system of that name.
func (o *Observer) newSystem(name string) *systemState {
	st := &systemState{name: name}
	o.systems = append(o.systems, st)
	o.byName[name] = st
	return st
}

// addCgroup adds a system observed through a cgroup.
func (o *Observer) addCgroup(spec CgroupSpec) *systemState {
	st := o.newSystem(spec.Name)
	o.attach(st, spec)
	return st
}

// attach makes a cgroup the system's.
func (o *Observer) attach(st *systemState, spec CgroupSpec) {
	dir := filepath.Join(o.cfg.Ctrl.Dir, spec.Path)
	st.cgroupPath = spec.Path
	st.reader = &cgroupReader{ctrl: o.cfg.Ctrl, dir: dir}
	st.perDevice = map[sysfs.DevNum]*results.DeviceTotals{}
	st.writeback = writeback(o.cfg.Ctrl, dir)
}

// Run samples until the duration is over or ctx is cancelled, saving the
// document every SaveEvery and once more at the end; it returns the final
// document. A failure to save is an error that ends the observation (the
// document on disk stays the last one saved).
func (o *Observer) Run(ctx context.Context) (*results.Observation, error) {
	if err := o.begin(time.Now()); err != nil {
		return nil, err
	}
	o.realClock = true
	if err := o.sample(ctx, 0); err != nil {
		return nil, err
	}
	if err := o.save(0, false); err != nil {
		return nil, err
	}
	lastSave := time.Duration(0)
	lastScan := time.Duration(0)
	stop := results.StopDuration
	for k := int64(1); ; k++ {
		next := time.Duration(k) * o.cfg.Interval
		if o.cfg.Duration > 0 && next > o.cfg.Duration {
			next = o.cfg.Duration
		}
		wait := time.Until(o.start.Add(next))
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				stop = results.StopInterrupted
			case <-t.C:
			}
		} else if behind := -wait; behind > o.cfg.Interval {
			// Fell behind (a stopped process, a slow source): skip the
			// ticks missed; the next interval is simply longer.
			k += int64(behind / o.cfg.Interval)
		}
		at := time.Since(o.start)
		if err := o.sample(ctx, at); err != nil {
			return o.finish(at, results.StopError, err)
		}
		if stop == results.StopInterrupted || ctx.Err() != nil {
			return o.finish(at, results.StopInterrupted, nil)
		}
		if o.cfg.Duration > 0 && at >= o.cfg.Duration {
			return o.finish(at, stop, nil)
		}
		if o.cfg.AutoCgroups && at-lastScan >= 10*time.Second {
			lastScan = at
			if err := o.rescan(at); err != nil {
				o.event(at, "cgroups", results.EventError, err.Error())
			}
		}
		if at-lastSave >= o.cfg.SaveEvery {
			lastSave = at
			if err := o.save(at, false); err != nil {
				return nil, err
			}
		}
	}
}

// begin starts the document and finds the auto cgroups.
func (o *Observer) begin(start time.Time) error {
	o.start = start
	o.doc = results.NewObservation(o.settings(), o.start.UTC().Format(time.RFC3339))
	if o.cfg.AutoCgroups {
		if err := o.rescan(0); err != nil {
			return fmt.Errorf("find cgroups: %w", err)
		}
	}
	return nil
}

func (o *Observer) finish(at time.Duration, stop string, cause error) (*results.Observation, error) {
	o.doc.Stop = stop
	o.doc.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	if cause != nil {
		o.doc.Error = cause.Error()
	}
	if err := o.save(at, true); err != nil {
		return o.doc, err
	}
	return o.doc, cause
}

func (o *Observer) settings() results.ObserveSettings {
	s := results.ObserveSettings{IntervalNS: o.cfg.Interval.Nanoseconds(), DurationNS: o.cfg.Duration.Nanoseconds(),
		SecondsWindowNS: o.cfg.Window.Nanoseconds(), SaveEveryNS: o.cfg.SaveEvery.Nanoseconds(),
		Devices: o.cfg.DeviceArgs, Cgroups: []string{}}
	if len(s.Devices) == 0 {
		s.Devices = []string{"auto"}
	}
	if o.cfg.AutoCgroups {
		s.Cgroups = append(s.Cgroups, "auto")
	}
	for _, c := range o.cfg.Cgroups {
		s.Cgroups = append(s.Cgroups, c.Path+"="+c.Name)
	}
	for _, d := range o.cfg.Databases {
		s.Databases = append(s.Databases, d.System+" ("+d.DB.Kind()+")")
	}
	return s
}

// sample reads every source once, at offset at since the start. Each
// source's reading is stamped with the moment it was read (a slow source
// read a while after the others must not have its I/O divided by the
// others' time); a test's scripted history keeps at for all.
func (o *Observer) sample(ctx context.Context, at time.Duration) error {
	var stats map[sysfs.DevNum]sysfs.DiskStats
	var names map[sysfs.DevNum]string
	at0, spread, err := o.timed(at, func() (err error) {
		stats, names, err = o.cfg.FS.AllDiskStats()
		return err
	})
	if err != nil {
		return fmt.Errorf("read diskstats: %w", err)
	}
	o.sampleDevices(at0, spread, stats, names)
	o.sampleHostPressure(at)
	if o.cfg.Ctrl.Version == 1 {
		o.sampleV1Root()
	}
	for _, st := range o.systems {
		if st.reader != nil {
			o.sampleCgroup(at, st)
		}
		if st.db != nil {
			o.sampleDatabase(ctx, at, st)
		}
	}
	o.sampled = true
	return nil
}

// Reading a source is a window in time: the counters are the kernel's
// at some moment between the clock read just before and the one just
// after. A reading is placed at its window's middle. A process starved of
// CPU (a guest whose host is busy) can lose tens of milliseconds inside
// that window, and then the reading's moment is not known: so a read
// whose window is wider than tightRead is made again, up to readTries in
// all, and the narrowest kept. A source's widest window over the
// observation is in its document (read_spread_us).
const (
	tightRead = 2 * time.Millisecond
	readTries = 3
)

// timed reads a source with read and returns the reading's moment and
// its window's width; in a test that scripts the time, at and no width.
// A read that fails is not made again.
func (o *Observer) timed(at time.Duration, read func() error) (time.Duration, time.Duration, error) {
	if !o.realClock {
		return at, 0, read()
	}
	now := o.now
	if now == nil {
		now = time.Now
	}
	best, width := time.Duration(0), time.Duration(-1)
	for range readTries {
		before := now().Sub(o.start)
		if err := read(); err != nil {
			return now().Sub(o.start), 0, err
		}
		after := now().Sub(o.start)
		if w := after - before; width < 0 || w < width {
			best, width = before+w/2, w
		}
		if width <= tightRead {
			break
		}
	}
	return best, width, nil
}

func (o *Observer) sampleDevices(at, spread time.Duration, stats map[sysfs.DevNum]sysfs.DiskStats, names map[sysfs.DevNum]string) {
	for dev, st := range stats {
		name := names[dev]
		if !o.sel.take(dev, name) {
			continue
		}
		d, ok := o.devices[dev]
		if !ok {
			if o.cfg.EnableV1Counters && o.cfg.Ctrl.Version == 1 {
				if err := EnableV1Counters(o.cfg.Ctrl, dev, os.Getpid()); err != nil {
					o.event(at, name, results.EventError, err.Error())
				}
			}
			d = &deviceState{dev: dev, name: name}
			d.s = newSeries(name, "device", dev.String(), deviceLayout, o.cfg.Window, o.start)
			o.devices[dev] = d
			o.devList = append(o.devList, dev)
			if o.sampled { // not in the first sample: it came since
				o.event(at, name, results.EventAppeared, "device "+dev.String())
			}
		}
		if d.gone {
			d.gone = false
			o.event(at, name, results.EventAppeared, "device "+dev.String()+" is back")
		}
		n := d.s.count
		d.s.spread = max(d.s.spread, spread)
		o.record(at, name, &d.tr, d.s, name, deviceCounters(st), false, deviceScale)
		d.haveLatest = d.s.count > n
		if d.haveLatest {
			last := d.s.kept[len(d.s.kept)-1].c
			d.lastIOs = last[deviceLayout.rios] + last[deviceLayout.wios]
		}
	}
	for _, dev := range o.devList {
		if _, ok := stats[dev]; ok {
			continue
		}
		d := o.devices[dev]
		if !d.gone {
			d.gone = true
			d.tr.gone()
			o.event(at, d.name, results.EventGone, "device "+dev.String()+" left /proc/diskstats")
		}
	}
}

// sampleV1Root finds the devices whose I/O the v1 hierarchy did not
// count in the last interval: the root's recursive counts hold every
// cgroup's.
func (o *Observer) sampleV1Root() {
	m, _, err := cgroupReader{ctrl: o.cfg.Ctrl, dir: o.cfg.Ctrl.Dir}.read()
	if err != nil {
		return
	}
	for _, dev := range o.devList {
		d := o.devices[dev]
		c := m[dev]
		st := d.rootTr.next("root", []uint64{c.ReadIOs, c.WriteIOs}, false)
		if st.delta == nil || !d.haveLatest {
			continue
		}
		// The root is read a moment after diskstats, so an I/O that
		// completes between the two reads is the root's in one interval
		// and the device's in the next: a device is uncounted only when
		// the root counted nothing in the interval before either (seen
		// on a loaded machine: 100 reads counted by the cgroup, and one
		// interval taken for uncounted).
		root := st.delta[0] + st.delta[1]
		if d.lastIOs > 0 && root == 0 && d.lastRoot == 0 {
			d.uncounted++
		}
		d.lastRoot = root
	}
}

// EnableV1Counters makes a cgroup v1 kernel count cgroup I/O on dev: it
// does so only once a throttle rule was set on the device, and goes on
// after the rule is removed. The rule is set and removed in a cgroup of
// the caller's own (named by pid), removed at once: nothing is limited.
func EnableV1Counters(ctrl cgroup.Controller, dev sysfs.DevNum, pid int) error {
	dir := filepath.Join(ctrl.Dir, fmt.Sprintf("iomatrix-observe-%d", pid))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("enable v1 counters on %s: %w", dev, err)
	}
	defer os.Remove(dir)
	file := filepath.Join(dir, "blkio.throttle.read_iops_device")
	if err := os.WriteFile(file, []byte(dev.String()+" 1000000000"), 0); err != nil {
		return fmt.Errorf("enable v1 counters on %s: %w", dev, err)
	}
	if err := os.WriteFile(file, []byte(dev.String()+" 0"), 0); err != nil {
		return fmt.Errorf("enable v1 counters on %s: remove the rule: %w", dev, err)
	}
	return nil
}

// record feeds one reading to a tracker and the interval it closes to a
// series, with the tracker's events.
func (o *Observer) record(at time.Duration, source string, tr *tracker, s *series, id string, c []uint64, restarted bool, scale []uint64) {
	o.apply(at, source, s, tr.next(id, c, restarted), scale)
}

// apply records a tracker's step: its event, and the interval it closes
// (counters scaled by scale, when given) unless it is a baseline.
func (o *Observer) apply(at time.Duration, source string, s *series, st step, scale []uint64) {
	if st.event != "" {
		o.event(at, source, st.event, st.why)
	}
	if st.delta == nil {
		s.lastAt = at // a baseline: the next interval starts here
		return
	}
	d := st.delta
	if scale != nil {
		d = slices.Clone(d)
		for i := range d {
			d[i] *= scale[i]
		}
	}
	o.addInterval(s, at, d)
}

// lastAt is each series' last reading time; an interval runs from it.
func (o *Observer) addInterval(s *series, at time.Duration, d []uint64) {
	endMS := at.Milliseconds()
	elapsed := at - s.lastAt
	s.lastAt = at
	if elapsed <= 0 {
		return
	}
	s.add(endMS, elapsed.Microseconds(), d)
}

// sampleHostPressure reads the host's I/O pressure. A host without it
// (PSI disabled at boot, a kernel before 4.20) has no such series, and
// says why once; one that had it and can no longer be read is gone.
func (o *Observer) sampleHostPressure(at time.Duration) {
	h := &o.host
	var p sysfs.Pressure
	at, spread, err := o.timed(at, func() (err error) {
		p, err = o.cfg.FS.IOPressure()
		return err
	})
	if err != nil {
		switch {
		case h.s != nil && !h.gone:
			h.gone = true
			h.tr.gone()
			o.event(at, hostPressureSource, results.EventGone, err.Error())
		case h.s == nil && h.none == "":
			h.none = err.Error()
			if !errors.Is(err, sysfs.ErrNoPressure) {
				o.event(at, hostPressureSource, results.EventError, err.Error())
			}
		}
		return
	}
	if h.s == nil {
		l := hostStallLayout
		if !p.HasFull {
			l = hostSomeStallLayout
		}
		h.s = newSeries("host", results.KindPressure, "", l, o.cfg.Window, o.start)
		h.none = ""
	}
	if h.gone {
		h.gone = false
		o.event(at, hostPressureSource, results.EventAppeared, "read again")
	}
	h.s.spread = max(h.s.spread, spread)
	o.record(at, hostPressureSource, &h.tr, h.s, "host", stallCounters(p, hasFull(h.s.layout)), false, nil)
}

// hasFull tells whether a layout keeps the full stall.
func hasFull(l *layout) bool { return l.index(results.CounterStallFull) >= 0 }

func (o *Observer) sampleCgroup(at time.Duration, st *systemState) {
	var m map[sysfs.DevNum]cgroup.Counters
	var id string
	var psi sysfs.Pressure
	var psiErr error
	at, spread, err := o.timed(at, func() (err error) {
		m, id, err = st.reader.read()
		if err == nil {
			psi, psiErr = st.reader.pressure()
		}
		return err
	})
	lostStall := false
	if err == nil && psiErr != nil && st.io != nil && st.io.layout.stall >= 0 {
		// The system's series keeps its stall in every interval or in
		// none: an interval without it is a gap in the whole series,
		// never a stall of zero. The cgroup's io.pressure goes with the
		// cgroup, or when its cgroup.pressure is set to 0.
		err, lostStall = fmt.Errorf("io.pressure: %w", psiErr), true
	}
	if err != nil {
		if !st.gone && st.known {
			st.gone = true
			why := err.Error()
			switch {
			case lostStall && errors.Is(err, os.ErrNotExist) && st.reader.exists():
				why = "its io.pressure went (PSI disabled for the cgroup: cgroup.pressure 0): its stall, kept until now, can no longer be read"
			case errors.Is(err, os.ErrNotExist):
				why = "the cgroup was removed"
			}
			o.event(at, st.name, results.EventGone, why)
		}
		st.lines = nil // the next read is a baseline
		if !st.known && !o.sampled {
			o.event(at, st.name, results.EventError, err.Error())
		}
		return
	}
	if st.io == nil {
		l := cgroupLayout
		switch {
		case psiErr == nil && psi.HasFull:
			l = cgroupStallLayout
		case psiErr == nil:
			l = cgroupSomeStallLayout
		case !errors.Is(psiErr, sysfs.ErrNoPressure):
			o.event(at, st.name, results.EventError, "io.pressure: "+psiErr.Error()+": its stall is not observed")
		}
		st.io = newSeries(st.name, "cgroup", "", l, o.cfg.Window, o.start)
	}
	stall := st.io.layout.stall >= 0
	st.io.spread = max(st.io.spread, spread)
	if st.gone {
		st.gone = false
		o.event(at, st.name, results.EventAppeared, "the cgroup is there again ("+id+")")
	}
	if !st.known || st.lines == nil {
		// A baseline, line by line, every device's (one observed later
		// must not count its whole past at once).
		st.known, st.lines = true, map[sysfs.DevNum]*tracker{}
		for dev, c := range m {
			tr := &tracker{}
			tr.next(id, cgroupCounters(c), false)
			st.lines[dev] = tr
		}
		st.stallTr = tracker{}
		if stall {
			st.stallTr.next(id, stallCounters(psi, hasFull(st.io.layout)), false)
		}
		st.io.lastAt = at
		return
	}
	sum := make([]uint64, len(st.io.layout.counters))
	for dev, c := range m {
		tr, ok := st.lines[dev]
		if !ok {
			// io.stat lists a device once the cgroup has done I/O on it:
			// a new line counts from zero.
			tr = &tracker{}
			tr.next(id, make([]uint64, len(cgroupLayout.counters)), false)
			st.lines[dev] = tr
		}
		step := tr.next(id, cgroupCounters(c), false)
		if step.event != "" {
			o.event(at, st.name, step.event, dev.String()+": "+step.why)
		}
		if d, observed := o.devices[dev]; step.delta == nil || !observed || d.gone {
			continue
		}
		tot := st.perDevice[dev]
		if tot == nil {
			tot = &results.DeviceTotals{}
			st.perDevice[dev] = tot
		}
		tot.ReadIOs += step.delta[0]
		tot.WriteIOs += step.delta[1]
		tot.ReadBytes += step.delta[2]
		tot.WriteBytes += step.delta[3]
		for i, v := range step.delta {
			sum[i] += v
		}
	}
	if stall {
		// The cgroup's, whatever the devices: a task waits on I/O of any.
		step := st.stallTr.next(id, stallCounters(psi, hasFull(st.io.layout)), false)
		if step.event != "" {
			o.event(at, st.name, step.event, "io.pressure: "+step.why)
		}
		copy(sum[st.io.layout.stall:], step.delta)
	}
	o.addInterval(st.io, at, sum)
}

func (o *Observer) sampleDatabase(ctx context.Context, at time.Duration, st *systemState) {
	// Not cancelled with ctx: the last reading, taken after an
	// interruption, is read too.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(o.cfg.Interval, time.Second))
	defer cancel()
	// A database is asked once: its answer's window is the network's.
	status, err := st.db.DB.Status(rctx)
	if o.realClock {
		at = time.Since(o.start)
	}
	source := st.name + "/" + st.db.DB.Kind()
	if err != nil {
		if !st.dbGone {
			st.dbGone = true
			o.event(at, source, results.EventGone, err.Error())
		}
		st.dbTr.gone()
		return
	}
	kind := dbKinds[st.db.DB.Kind()]
	if st.dbSeries == nil {
		st.dbSeries = newSeries(st.name, st.db.DB.Kind(), "", kind.layout, o.cfg.Window, o.start)
	}
	if st.dbGone {
		st.dbGone = false
		o.event(at, source, results.EventAppeared, "the server answers again")
		if st.restarted(at, status) {
			o.event(at, source, results.EventReset, fmt.Sprintf("restarted while it did not answer (up %d s): its I/O from the restart to now is not in the timeline", status.UptimeS))
		}
	}
	c := make([]uint64, len(kind.layout.counters))
	for i, name := range kind.layout.counters {
		c[i] = status.Counters[name]
	}
	restarted := st.dbTr.present && st.restarted(at, status)
	reset := st.dbTr.present && !restarted && status.Epoch != st.dbEpoch
	st.dbUptime, st.dbAt, st.dbQueries, st.dbEpoch = status.UptimeS, at, status.Queries, status.Epoch
	st.dbSessions = max(st.dbSessions, status.Sessions)
	if !kind.resetIsBaseline {
		o.record(at, source, &st.dbTr, st.dbSeries, "server", c, restarted, nil)
		return
	}
	got := st.dbTr.next("server", c, false)
	switch {
	case restarted:
		got = baseline(fmt.Sprintf("restarted (up %d s): its counters go on over a clean restart and start from zero after a crash, so the interval's I/O is not known; a fresh baseline", status.UptimeS))
	case reset:
		got = baseline("its statistics were reset, or it restarted: a fresh baseline")
	case got.event == results.EventReset:
		got = baseline(got.why + " (a statistics reset, or a database dropped): a fresh baseline")
	}
	o.apply(at, source, st.dbSeries, got, nil)
}

// baseline is a reset whose interval is not known: the reading is a
// fresh baseline.
func baseline(why string) step { return step{event: results.EventReset, why: why} }

// restarted tells whether the server restarted since it was last read:
// its statements counted fewer than then, or its uptime shorter than then
// plus the time since (less a second of rounding).
func (st *systemState) restarted(at time.Duration, status DBStatus) bool {
	if status.Queries > 0 && status.Queries < st.dbQueries {
		return true
	}
	since := uint64((at - st.dbAt) / time.Second)
	return status.UptimeS+1 < st.dbUptime+since
}

func (o *Observer) event(at time.Duration, source, kind, detail string) {
	o.events = append(o.events, results.ObserveEvent{At: o.start.Add(at).UTC().Format(time.RFC3339),
		OffsetMS: at.Milliseconds(), Source: source, Kind: kind, Detail: detail})
}

// rescan finds the auto cgroups: new ones become systems; those gone
// are found so by their next read.
func (o *Observer) rescan(at time.Duration) error {
	found, err := Discover(o.cfg.Ctrl.Dir)
	if err != nil {
		return err
	}
	for _, spec := range found {
		st, ok := o.byName[spec.Name]
		switch {
		case ok && st.reader == nil && o.observer(spec.Path) == nil:
			o.attach(st, spec) // a database's system: its cgroup found
			continue
		case o.observer(spec.Path) != nil:
			continue // observed already, or within or around a cgroup observed: its I/O is counted there
		case ok:
			spec.Name = spec.Path
			if _, ok := o.byName[spec.Name]; ok {
				continue
			}
		}
		added := o.addCgroup(spec)
		if at > 0 {
			o.event(at, added.name, results.EventAppeared, "cgroup "+spec.Path)
		}
	}
	return nil
}

// observer is the system that observes the cgroup path, or one within or
// around it; nil: none does.
func (o *Observer) observer(path string) *systemState {
	for _, st := range o.systems {
		if st.cgroupPath != "" && (st.cgroupPath == path || nested(st.cgroupPath, path)) {
			return st
		}
	}
	return nil
}

// save writes the document as it stands.
func (o *Observer) save(at time.Duration, final bool) error {
	began := time.Now()
	doc := o.build()
	data, err := encodeObservation(doc)
	if err != nil {
		return err
	}
	if o.cfg.Out != "" {
		if err := results.WriteBytesAtomic(o.cfg.Out, data); err != nil {
			return fmt.Errorf("save %s: %w", o.cfg.Out, err)
		}
	}
	if o.cfg.Saved != nil {
		o.cfg.Saved(SaveInfo{Elapsed: at, Bytes: len(data), Took: time.Since(began), Devices: len(doc.Devices),
			Systems: len(doc.Systems), Final: final})
	}
	return nil
}

// build puts the series in the document.
func (o *Observer) build() *results.Observation {
	doc := o.doc
	doc.SavedAt = time.Now().UTC().Format(time.RFC3339)
	doc.Devices = doc.Devices[:0]
	var blind []string
	for _, dev := range o.devList {
		d := o.devices[dev]
		r := d.s.result(o.cfg.Interval)
		r.UncountedIntervals = d.uncounted
		if d.uncounted > 0 {
			blind = append(blind, d.name)
		}
		doc.Devices = append(doc.Devices, *r)
	}
	// Stated afresh at each save: systems found since, devices found
	// uncounted since, change what holds.
	doc.Accounting = o.accounting(blind)
	doc.Systems = doc.Systems[:0]
	for _, st := range o.systems {
		sys := results.ObservedSystem{Name: st.name, Cgroup: st.cgroupPath, Writeback: st.writeback}
		if st.io != nil {
			sys.IO = st.io.result(o.cfg.Interval)
			sys.PerDevice = map[string]results.DeviceTotals{}
			for dev, t := range st.perDevice {
				name := dev.String()
				if d, ok := o.devices[dev]; ok {
					name = d.name
				}
				sys.PerDevice[name] = *t
			}
		}
		if st.dbSeries != nil {
			sys.Database = st.dbSeries.result(o.cfg.Interval)
			sys.Sessions = st.dbSessions
		}
		if sys.IO == nil && sys.Database == nil {
			continue // never read: its error is among the events
		}
		sys.CrossCheck = crossCheck(sys.IO, sys.Database)
		if sys.IO != nil {
			sys.Concurrency = o.concurrency(st, sys.IO.Summary)
		}
		sys.Pressure = o.pressureOf(st)
		doc.Systems = append(doc.Systems, sys)
	}
	doc.HostPressure = nil
	if o.host.s != nil {
		doc.HostPressure = o.host.s.result(o.cfg.Interval)
	}
	doc.Events = slices.Clone(o.events)
	return doc
}

// pressureOf says where a system's stall is told: its cgroup's own
// io.pressure, or else the host's where there is one.
func (o *Observer) pressureOf(st *systemState) string {
	switch {
	case st.io != nil && st.io.layout.stall >= 0:
		return results.PressureCgroup
	case o.host.s != nil:
		return results.PressureHost
	}
	return results.PressureNone
}

// pressureNotes state what the stall shares are and whose they are.
func (o *Observer) pressureNotes() []string {
	if o.host.s == nil && o.host.none != "" {
		return []string{fmt.Sprintf("This host keeps no pressure stall information (%s): no stall shares are observed, neither the host's nor the systems'.", o.host.none)}
	}
	notes := []string{"Stall shares (stall_some_pct, stall_full_pct) are the kernel's pressure stall information (PSI): the share of wall time in which at least one (some) or all (full) of the non-idle tasks waited on I/O. They measure time lost, not I/Os: a system that does few I/Os but waits long for each stalls more than one that does many quickly."}
	var none []string
	for _, st := range o.systems {
		if st.io != nil && st.io.layout.stall < 0 {
			none = append(none, st.name)
		}
	}
	switch {
	case o.cfg.Ctrl.Version == 1 && len(o.systems) > 0:
		notes = append(notes, "Cgroup v1 keeps no pressure per cgroup: the host's (/proc/pressure/io) is the only one, and it stands for every system.")
	case len(none) > 0 && o.host.s != nil:
		notes = append(notes, fmt.Sprintf("No io.pressure for %s (PSI disabled for the cgroup): the stall there is told only by the host's.", strings.Join(none, ", ")))
	case len(none) > 0:
		notes = append(notes, fmt.Sprintf("No io.pressure for %s (PSI disabled for the cgroup): the stall there is not known.", strings.Join(none, ", ")))
	}
	return notes
}

// concurrency is a system's share of its devices' time-averaged queue
// at its busiest hour: for each device it used, the device's aqu-sz in
// that hour times the system's share of the device's I/Os then (the
// system's I/Os in the hour apportioned over the devices as its totals
// are). Cgroup counts are bios and diskstats' requests, so a share is
// capped at 1.
func (o *Observer) concurrency(st *systemState, sum *results.SeriesSummary) float64 {
	if sum == nil || sum.BusiestHour == nil {
		return 0
	}
	h := sum.BusiestHour
	var all uint64
	for _, t := range st.perDevice {
		all += t.ReadIOs + t.WriteIOs
	}
	if all == 0 {
		return 0
	}
	sysIOs := h.Mean["ios"]
	var q float64
	for dev, t := range st.perDevice {
		d, ok := o.devices[dev]
		if !ok {
			continue
		}
		tot := d.s.within(h.StartMS, h.EndMS)
		if tot.elapsedUS == 0 {
			continue
		}
		secs := float64(tot.elapsedUS) / 1e6
		devIOs := float64(tot.c[deviceLayout.rios]+tot.c[deviceLayout.wios]) / secs
		if devIOs == 0 {
			continue
		}
		share := min(1, sysIOs*float64(t.ReadIOs+t.WriteIOs)/float64(all)/devIOs)
		q += aquSz(deviceLayout, tot) * share
	}
	return q
}

// accounting states how this host counts.
func (o *Observer) accounting(uncounted []string) results.Accounting {
	a := results.Accounting{CgroupVersion: o.cfg.Ctrl.Version, Notes: []string{
		"Device figures are /proc/diskstats' and iostat's: requests as the device completed them, after the block layer merged and split them. %util is the share of time the device had at least one request in flight; it says nothing of a device that serves many at once (an SSD or a RAID at 100 % may have room to spare).",
	}}
	if o.cfg.Ctrl.Version != 0 {
		a.CgroupMode = o.cfg.Ctrl.Mode.String()
		a.Notes = append(a.Notes, "Cgroup figures count bios as they were submitted, before merging (a split bio counts each piece): they are not diskstats' requests, and a cgroup's sum over a device need not equal the device's figures.")
	}
	switch o.cfg.Ctrl.Version {
	case 1:
		a.Writeback = "root"
		a.Notes = append(a.Notes, "This host accounts I/O in cgroup v1 (blkio): buffered writes reach the device from the kernel's flusher and are charged to the root cgroup, not to the system that dirtied the pages. A system's writes are its direct and synchronous ones only.")
	case 2:
		a.Writeback = "cgroup"
		var root []string
		for _, st := range o.systems {
			if st.reader != nil && st.writeback == "root" {
				root = append(root, st.name)
			}
		}
		if len(root) == 0 {
			a.Notes = append(a.Notes, "This host accounts I/O in cgroup v2 with the memory controller on the observed systems: buffered writeback is charged to the cgroup that dirtied the pages.")
		} else {
			a.Writeback = "root"
			a.Notes = append(a.Notes, fmt.Sprintf("This host accounts I/O in cgroup v2, but %s lack the memory controller: their buffered writeback is charged to the root cgroup, not to them.", strings.Join(root, ", ")))
		}
	}
	a.Notes = append(a.Notes, o.pressureNotes()...)
	if len(uncounted) > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("No cgroup counted the I/O of %s: this kernel counts a device's I/O in v1 cgroups only once a throttle rule was set on the device, and none was. The systems' figures on it are missing, not zero; observe again with --v1-enable-counters.", strings.Join(uncounted, ", ")))
	}
	return a
}

// crossCheck compares a database's view with its cgroup's over the whole
// observation.
func crossCheck(io, db *results.ObservedSeries) *results.CrossCheck {
	if io == nil || db == nil || io.Summary == nil || db.Summary == nil {
		return nil
	}
	m, d := io.Summary.Mean, db.Summary.Mean
	c := &results.CrossCheck{
		DBReadIOPS: d["reads"], DBWriteIOPS: d["writes"], CgroupReadIOPS: m["reads"], CgroupWriteIOPS: m["writes"],
		DBReadKBps: d["rkb"], DBWriteKBps: d["wkb"], CgroupReadKBps: m["rkb"], CgroupWriteKBps: m["wkb"],
	}
	if c.DBReadIOPS > 0 {
		c.ReadRatio = c.CgroupReadIOPS / c.DBReadIOPS
	}
	if c.DBWriteIOPS > 0 {
		c.WriteRatio = c.CgroupWriteIOPS / c.DBWriteIOPS
	}
	if k, ok := dbKinds[db.Kind]; ok { // New took no other kind
		c.Notes = k.notes(c, d)
	}
	return c
}

// crossNotes explain how InnoDB's counters differ from its cgroup's.
func crossNotes(c *results.CrossCheck, d map[string]float64) []string {
	notes := []string{
		"Reads served from the buffer pool never reach either count; the database's data reads are the pages it asked the OS for.",
	}
	switch {
	case c.DBReadIOPS > 0 && c.ReadRatio < 0.9:
		notes = append(notes, fmt.Sprintf("The cgroup saw %.0f %% of the database's reads: the rest came from the OS page cache (the server does not read with O_DIRECT), or were merged into larger requests.", 100*c.ReadRatio))
	case c.DBReadIOPS > 0 && c.ReadRatio > 1.1:
		notes = append(notes, fmt.Sprintf("The cgroup saw %.2f× the database's reads: other processes in the cgroup read too, or large reads were split, or read-ahead read more than asked.", c.ReadRatio))
	}
	if d["dblwr_writes"] > 0 {
		notes = append(notes, fmt.Sprintf("%.1f of the database's writes per second are doublewrite batches: each page is written twice, once to the doublewrite buffer and once in place.", d["dblwr_writes"]))
	}
	if d["log_kb"] > 0 {
		notes = append(notes, fmt.Sprintf("The redo log wrote %.0f KiB/s in small sequential writes, %.1f fsyncs/s; log writes are not counted among the data writes by every server version.", d["log_kb"], d["fsyncs"]))
	}
	switch {
	case c.DBWriteIOPS > 0 && c.WriteRatio < 0.9:
		notes = append(notes, fmt.Sprintf("The cgroup saw %.0f %% of the database's writes: buffered writes reached the device through the flusher (charged to the root on v1, or without the memory controller), or were merged.", 100*c.WriteRatio))
	case c.DBWriteIOPS > 0 && c.WriteRatio > 1.1:
		notes = append(notes, fmt.Sprintf("The cgroup saw %.2f× the database's writes: journal and metadata writes of the filesystem, fsync's flushes, and other processes in the cgroup count there and not in the database.", c.WriteRatio))
	}
	return notes
}

// encodeObservation is the document's bytes as saved.
func encodeObservation(doc *results.Observation) ([]byte, error) {
	return results.EncodeObservation(doc)
}
