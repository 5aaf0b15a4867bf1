package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// KindObservation is the "kind" of the document `iomatrix observe`
// writes: what running systems demanded of their devices, sampled on an
// interval, with no I/O of its own. It follows the schema rules of the
// results file (schema_version, tool, fields added and never renamed)
// and is told apart from it by its kind.
const KindObservation = "observation"

// Observation is the document of `iomatrix observe`. It is a valid
// document whenever it is on disk: observe saves it atomically at least
// every ten seconds while it runs, FinishedAt empty until it stops.
type Observation struct {
	SchemaVersion int    `json:"schema_version"`
	Kind          string `json:"kind"`
	Tool          Tool   `json:"tool"`
	Host          Host   `json:"host"`
	StartedAt     string `json:"started_at"`
	// FinishedAt is empty while the observation runs (or after it was
	// killed); Stop then says why it ended: "duration", "interrupted"
	// (SIGINT or SIGTERM) or "error" (Error says which).
	FinishedAt string           `json:"finished_at"`
	SavedAt    string           `json:"saved_at"`
	Stop       string           `json:"stop,omitempty"`
	Error      string           `json:"error,omitempty"`
	Settings   ObserveSettings  `json:"settings"`
	Accounting Accounting       `json:"accounting"`
	Devices    []ObservedSeries `json:"devices"`
	Systems    []ObservedSystem `json:"systems"`
	// HostPressure is the whole host's I/O pressure, /proc/pressure/io,
	// observed wherever the kernel keeps it (absent: it keeps none, or
	// the document is older than the field): a series of kind
	// KindPressure whose counters are the stall times and whose figures
	// are the stall shares (FigureStallSome, FigureStallFull). On cgroup
	// v1 it is the only pressure there is.
	HostPressure *ObservedSeries `json:"host_pressure,omitempty"`
	// Events are what happened to the sources: a device or cgroup that
	// appeared or went, a counter that was reset or wrapped, a source
	// that failed to read. Each one explains a gap or a fresh baseline.
	Events []ObserveEvent `json:"events"`
}

// How an observation ended (Observation.Stop).
const (
	StopDuration    = "duration"
	StopInterrupted = "interrupted"
	StopError       = "error"
)

// ObserveSettings are observe's options as recorded. No DSN or password
// is ever recorded: databases by the system they belong to.
type ObserveSettings struct {
	IntervalNS int64 `json:"interval_ns"`
	// DurationNS is 0 for an observation that ran until interrupted.
	DurationNS int64 `json:"duration_ns"`
	// SecondsWindowNS is how long the per-interval timelines reach back;
	// per-minute aggregates cover the whole observation.
	SecondsWindowNS int64 `json:"seconds_window_ns"`
	SaveEveryNS     int64 `json:"save_every_ns"`
	// Devices as asked: names, or "auto" for every real disk.
	Devices []string `json:"devices"`
	// Cgroups as asked: "auto", or PATH=NAME specs.
	Cgroups []string `json:"cgroups"`
	// Databases are the systems a database was read for, and its kind
	// ("mysql").
	Databases []string `json:"databases,omitempty"`
}

// Accounting states how the kernel counted what the document holds, on
// the host it ran on: cgroup figures are not diskstats' figures.
type Accounting struct {
	// CgroupVersion is 1 or 2 (0: no cgroup I/O accounting was read);
	// CgroupMode "legacy", "hybrid" or "unified".
	CgroupVersion int    `json:"cgroup_version"`
	CgroupMode    string `json:"cgroup_mode,omitempty"`
	// Writeback is where buffered writeback is charged on this host:
	// "root" (v1, or v2 without the memory controller on the system's
	// cgroup) or "cgroup" (v2 with it). Systems carry their own.
	Writeback string `json:"writeback,omitempty"`
	// Notes are the facts stated beside the figures, one sentence each.
	Notes []string `json:"notes"`
}

// ObserveEvent is one thing that happened to a source.
type ObserveEvent struct {
	At string `json:"at"` // RFC 3339
	// OffsetMS is the event's time since the observation's start.
	OffsetMS int64 `json:"offset_ms"`
	// Source names the device ("vda"), the system ("erp"), or a
	// system's database ("erp/mysql").
	Source string `json:"source"`
	// Kind is one of the ObserveEvent kinds below.
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// The kinds of ObserveEvent.
const (
	EventAppeared = "appeared" // a source seen for the first time, or again
	EventGone     = "gone"     // a source that can no longer be read
	EventReset    = "reset"    // a counter went back: restarted or recreated
	EventWrap     = "wrap"     // a 32-bit counter wrapped
	EventError    = "error"    // a source failed to read (Detail says why)
)

// KindPressure is the kind of the host's pressure series.
const KindPressure = "pressure"

// The stall counters (a series' timelines and totals), in µs: how long
// some, and all, of the source's non-idle tasks were stalled on I/O
// (the pressure files' total=, the kernel's PSI); and the figures made
// of them (a summary's), the share of each interval's time so stalled,
// in percent of wall time. A source without pressure has neither, never
// zeros.
const (
	CounterStallSome = "stall_some_us"
	CounterStallFull = "stall_full_us"
	FigureStallSome  = "stall_some_pct"
	FigureStallFull  = "stall_full_pct"
)

// Where a system's stall figures come from (ObservedSystem.Pressure).
const (
	// PressureCgroup: its cgroup's own io.pressure, in its IO series.
	PressureCgroup = "cgroup"
	// PressureHost: its cgroup keeps none (cgroup v1, PSI disabled for
	// it) and the host's stands for it (Observation.HostPressure).
	PressureHost = "host"
	// PressureNone: neither its cgroup nor the host keeps any.
	PressureNone = "none"
)

// ObservedSeries is one source's figures: a device's counters, or a
// system's cgroup or database counters, or the host's pressure.
type ObservedSeries struct {
	Name string `json:"name"`
	// Device is MAJ:MIN for a device; Kind "device", "cgroup",
	// KindPressure, or a database's: "mysql" or "postgres".
	Device string `json:"device,omitempty"`
	Kind   string `json:"kind"`
	// Seconds holds the last SecondsWindowNS of intervals at full
	// resolution; Minutes every minute of the observation, each the sum
	// of its intervals.
	Seconds Timeline `json:"seconds"`
	Minutes Timeline `json:"minutes"`
	// Totals are the counters' increase over the whole observation.
	Totals  map[string]uint64 `json:"totals"`
	Summary *SeriesSummary    `json:"summary,omitempty"`
	// UncountedIntervals, on a device under cgroup v1, are the intervals
	// in which the device did I/O and the v1 hierarchy counted none of it:
	// the kernel counts a device's cgroup I/O only once a throttle rule
	// was set on the device (any rule, in any cgroup). Systems' figures
	// on it are then missing, not zero.
	UncountedIntervals int `json:"uncounted_intervals,omitempty"`
	// ReadSpreadUS is the widest window, over the observation, between
	// the clock read just before one reading of the source and the one
	// just after; a reading is placed at its window's middle, so each
	// interval's ends are known to within half of this.
	ReadSpreadUS int64 `json:"read_spread_us,omitempty"`
}

// ObservedSystem is one system: a cgroup, and a database belonging to
// it where one was read.
type ObservedSystem struct {
	Name string `json:"name"`
	// Cgroup is the cgroup's path below the controller's hierarchy ("/"
	// the root); empty for a system known only by its database.
	Cgroup string `json:"cgroup,omitempty"`
	// Writeback is where its buffered writeback is charged ("root" or
	// "cgroup").
	Writeback string `json:"writeback,omitempty"`
	// IO is the cgroup's I/O, summed over the observed devices; PerDevice
	// is the whole observation's totals by device.
	IO        *ObservedSeries         `json:"io,omitempty"`
	PerDevice map[string]DeviceTotals `json:"per_device,omitempty"`
	// Database is the database's own counters (MySQL's SHOW GLOBAL
	// STATUS, PostgreSQL's statistics views), and CrossCheck the two
	// views compared where both exist.
	Database   *ObservedSeries `json:"database,omitempty"`
	CrossCheck *CrossCheck     `json:"cross_check,omitempty"`
	// Concurrency is the system's share of its devices' time-averaged
	// queue (aqu-sz) at its busiest hour: the I/Os it kept in flight.
	Concurrency float64 `json:"concurrency,omitempty"`
	// Sessions is the most client sessions its database had connected at
	// a reading, the observer's own left out (0: not known).
	Sessions int `json:"sessions,omitempty"`
	// Pressure says where the system's stall on I/O is told:
	// PressureCgroup, PressureHost or PressureNone (empty in a document
	// older than the field).
	Pressure string `json:"pressure,omitempty"`
}

// DeviceTotals is a system's I/O on one device over the observation.
type DeviceTotals struct {
	ReadIOs    uint64 `json:"rios"`
	WriteIOs   uint64 `json:"wios"`
	ReadBytes  uint64 `json:"rbytes"`
	WriteBytes uint64 `json:"wbytes"`
}

// CrossCheck compares a database's view of its I/O with its cgroup's,
// over the intervals both were read in.
type CrossCheck struct {
	// The database's reads and writes per second, and the cgroup's.
	DBReadIOPS      float64 `json:"db_read_iops"`
	DBWriteIOPS     float64 `json:"db_write_iops"`
	CgroupReadIOPS  float64 `json:"cgroup_read_iops"`
	CgroupWriteIOPS float64 `json:"cgroup_write_iops"`
	DBReadKBps      float64 `json:"db_read_kbps"`
	DBWriteKBps     float64 `json:"db_write_kbps"`
	CgroupReadKBps  float64 `json:"cgroup_read_kbps"`
	CgroupWriteKBps float64 `json:"cgroup_write_kbps"`
	// Ratios are the cgroup's figure over the database's (0 when the
	// database's is 0).
	ReadRatio  float64 `json:"read_ratio"`
	WriteRatio float64 `json:"write_ratio"`
	// Notes explain the difference: what the database counts that never
	// reaches the device and what reaches the device that it does not
	// count.
	Notes []string `json:"notes"`
}

// Timeline is a series' counters interval by interval, one array per
// counter, all of the same length as EndMS.
type Timeline struct {
	// StepNS is the nominal interval: the sampling interval, or a minute.
	StepNS int64 `json:"step_ns"`
	// EndMS is each interval's end, in ms since the observation's start;
	// a gap in it is time the source could not be read. ElapsedUS is
	// each interval's length on the monotonic clock: rates are the
	// counters' increase over it, not over the nominal step.
	EndMS     []int64 `json:"end_ms"`
	ElapsedUS []int64 `json:"elapsed_us"`
	// Counters are the increase of each counter in each interval.
	Counters map[string][]uint64 `json:"counters"`

	// Stable, with Cache set, is how many intervals from the start will
	// never change: their encoding is kept in Cache between saves.
	Stable int            `json:"-"`
	Cache  *TimelineCache `json:"-"`
	slot   int            // EncodeObservation's stand-in
}

// Len is the number of intervals.
func (t Timeline) Len() int { return len(t.EndMS) }

// Rate is counter c's rate per second in interval i.
// A counter the timeline lacks, or an interval it does not hold, is 0.
func (t Timeline) Rate(c string, i int) float64 {
	col := t.Counters[c]
	if i < 0 || i >= len(col) || i >= len(t.ElapsedUS) || t.ElapsedUS[i] <= 0 {
		return 0
	}
	return float64(col[i]) / (float64(t.ElapsedUS[i]) / 1e6)
}

// SeriesSummary is what a series demanded over the observation.
type SeriesSummary struct {
	// ObservedNS is the time its intervals cover; Intervals and Minutes
	// how many there were.
	ObservedNS int64 `json:"observed_ns"`
	Intervals  int   `json:"intervals"`
	Minutes    int   `json:"minutes"`
	// Figures are by name: "reads" and "writes" (I/Os per second),
	// "ios" (both), "rkb" and "wkb" (KiB per second); a device's also
	// "flushes" (per second). A database's are its data reads and writes
	// under those names, and per second:
	//   - MySQL: "fsyncs", "dblwr_writes", "log_kb" (KiB), and
	//     "durable_writes", the same as fsyncs (Innodb_data_fsyncs: the
	//     redo log's flushes at commit and the data files' fsyncs).
	//   - PostgreSQL: reads are the blocks it read from the OS (page-cache
	//     hits among them), writes the data-file blocks written by the
	//     checkpointer, the background writer and the backends
	//     ("checkpoint_writes", "clean_writes", "backend_writes"), in KiB
	//     by the block size; "hits" (shared_buffers), "commits",
	//     "wal_writes", "wal_syncs", "wal_kb" (KiB), "wal_records", "fpi"
	//     (full-page images), "backend_fsyncs", pg_stat_io's "io_reads",
	//     "io_writes", "io_extends", "io_fsyncs" (16 on), and
	//     "durable_writes": the WAL's flushes (wal_sync; wal_write under
	//     wal_sync_method open_datasync or open_sync, whose writes are
	//     durable themselves) plus the backends' own fsyncs.
	// durable_writes are, in both, the writes that had to reach stable
	// storage before the server went on: each a cache flush on a device
	// with a volatile write cache. A series with stall times (a v2
	// cgroup's, the host's pressure) has FigureStallSome and
	// FigureStallFull: percentages, whose mean is over time and whose
	// spreads are each interval's (minute's) share; the host's pressure
	// has those alone.
	Mean      map[string]float64 `json:"mean"`
	PerSecond map[string]Spread3 `json:"per_second"`
	PerMinute map[string]Spread3 `json:"per_minute"`
	// BusiestHour is the 60 consecutive minutes with the highest mean
	// I/O rate (the whole observation when it is shorter); the host's
	// pressure's, those with the most stall (some).
	BusiestHour *BusiestHour `json:"busiest_hour,omitempty"`
	// SizeMix is the whole observation's I/Os by size class.
	SizeMix []SizeClass `json:"size_mix,omitempty"`
	// Device figures (iostat's, over the whole observation): aqu-sz,
	// %util and the average waits in ms.
	AquSz   *float64 `json:"aqu_sz,omitempty"`
	UtilPct *float64 `json:"util_pct,omitempty"`
	RAwait  *float64 `json:"r_await_ms,omitempty"`
	WAwait  *float64 `json:"w_await_ms,omitempty"`
}

// Spread3 is the percentiles and the maximum of a figure's rates, each
// interval (second or minute) one value.
type Spread3 struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	// PrecisionPct is set when the percentiles come from a histogram
	// (per-second rates over an observation longer than its window): each
	// is within that share of the exact value.
	PrecisionPct float64 `json:"precision_pct,omitempty"`
}

// BusiestHour is where a series was busiest.
type BusiestHour struct {
	Start string `json:"start"` // RFC 3339
	End   string `json:"end"`
	// StartMS and EndMS as in Timeline.
	StartMS int64 `json:"start_ms"`
	EndMS   int64 `json:"end_ms"`
	// Whole is set when the observation was shorter than an hour: the
	// figures are the whole observation's.
	Whole bool               `json:"whole,omitempty"`
	Mean  map[string]float64 `json:"mean"`
	// ReadShare is reads over all I/Os in that hour.
	ReadShare float64 `json:"read_share"`
	// SizeMix is that hour's I/Os by size class, from each interval's
	// average request size.
	SizeMix []SizeClass `json:"size_mix,omitempty"`
	// AquSz is a device's time-averaged queue in that hour.
	AquSz *float64 `json:"aqu_sz,omitempty"`
}

// SizeClass counts I/Os whose interval's average size was at most
// Bytes (and more than the class below).
type SizeClass struct {
	Bytes  int64  `json:"bytes"`
	Reads  uint64 `json:"reads"`
	Writes uint64 `json:"writes"`
}

// NewObservation starts an observation document.
func NewObservation(s ObserveSettings, startedAt string) *Observation {
	return &Observation{
		SchemaVersion: SchemaVersion,
		Kind:          KindObservation,
		Tool:          Tool{Name: "iomatrix", Version: Version},
		Host:          HostInfo(),
		StartedAt:     startedAt,
		Settings:      s,
		Accounting:    Accounting{Notes: []string{}},
		Devices:       []ObservedSeries{},
		Systems:       []ObservedSystem{},
		Events:        []ObserveEvent{},
	}
}

// DocumentKind reads the kind of an iomatrix document: "" for a results
// file, KindObservation, or another kind; errors as ReadDocument's.
func DocumentKind(data []byte) (string, error) {
	var probe struct {
		SchemaVersion *int   `json:"schema_version"`
		Tool          *Tool  `json:"tool"`
		Kind          string `json:"kind"`
		FioVersion    string `json:"fio version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return "", fmt.Errorf("%w: not JSON: %w", ErrBadDocument, err)
	}
	switch {
	case probe.FioVersion != "":
		return "", fmt.Errorf("%w: this is fio output (%s); convert it with `iomatrix import`", ErrBadDocument, probe.FioVersion)
	case probe.SchemaVersion == nil || probe.Tool == nil || probe.Tool.Name != "iomatrix":
		return "", fmt.Errorf("%w: JSON without iomatrix's schema_version and tool fields", ErrBadDocument)
	case *probe.SchemaVersion > SchemaVersion:
		return "", fmt.Errorf("%w: schema_version %d is newer than this iomatrix (%s) reads (%d); upgrade iomatrix", ErrBadDocument, *probe.SchemaVersion, Version, SchemaVersion)
	case *probe.SchemaVersion < 1:
		return "", fmt.Errorf("%w: schema_version %d", ErrBadDocument, *probe.SchemaVersion)
	}
	return probe.Kind, nil
}

// ReadObservation parses an observation document; a results file or
// anything else is refused with what it is.
func ReadObservation(r io.Reader) (*Observation, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	kind, err := DocumentKind(data)
	if err != nil {
		return nil, err
	}
	switch kind {
	case KindObservation:
	case "":
		return nil, fmt.Errorf("%w: a results file, not an observation (iomatrix observe writes those)", ErrBadDocument)
	default:
		return nil, fmt.Errorf("%w: a document of kind %q, not an observation", ErrBadDocument, kind)
	}
	var o Observation
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDocument, err)
	}
	return &o, nil
}

// ReadObservationFile reads and parses an observation document.
func ReadObservationFile(path string) (*Observation, error) {
	return readFile(path, ReadObservation)
}

// MarshalJSON writes a timeline with strconv's appenders, in the plain
// form encoding/json reads back (EncodeObservation, which observe saves
// with, goes further).
func (t Timeline) MarshalJSON() ([]byte, error) {
	if t.slot > 0 {
		return []byte(fmt.Sprintf(`"%s%d\u0000"`, slotMark, t.slot)), nil
	}
	return t.appendJSON(nil), nil
}

// TimelineCache keeps the encoding of a timeline that only grows: the
// intervals before Timeline.Stable never change, and are encoded once,
// not at every save of a week-long observation.
type TimelineCache struct {
	n            int
	end, elapsed []byte
	cols         map[string][]byte
}

func (t *Timeline) appendJSON(b []byte) []byte {
	c := t.Cache
	if c == nil || t.Stable < c.n {
		c = &TimelineCache{}
		if t.Cache != nil {
			*t.Cache = *c
			c = t.Cache
		}
	}
	if c.cols == nil {
		c.cols = map[string][]byte{}
	}
	stable := min(t.Stable, len(t.EndMS))
	if t.Cache == nil {
		stable = 0
	}
	c.end = appendInts(c.end, t.EndMS[c.n:stable], c.n > 0)
	c.elapsed = appendInts(c.elapsed, t.ElapsedUS[c.n:stable], c.n > 0)
	names := make([]string, 0, len(t.Counters))
	for n := range t.Counters {
		names = append(names, n)
		c.cols[n] = appendUints(c.cols[n], t.Counters[n][c.n:stable], c.n > 0)
	}
	c.n = stable
	slices.Sort(names)
	b = append(b, `{"step_ns":`...)
	b = strconv.AppendInt(b, t.StepNS, 10)
	b = append(b, `,"end_ms":[`...)
	b = appendInts(append(b, c.end...), t.EndMS[stable:], stable > 0)
	b = append(b, `],"elapsed_us":[`...)
	b = appendInts(append(b, c.elapsed...), t.ElapsedUS[stable:], stable > 0)
	b = append(b, `],"counters":{`...)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, n)
		b = append(b, ":["...)
		b = appendUints(append(b, c.cols[n]...), t.Counters[n][stable:], stable > 0)
		b = append(b, ']')
	}
	return append(b, "}}"...)
}

// sizeHint is about how many bytes the timeline encodes to.
func (t *Timeline) sizeHint() int {
	n := 64 + 24*(len(t.EndMS)-t.Stable)*(2+len(t.Counters))
	if c := t.Cache; c != nil {
		n += len(c.end) + len(c.elapsed)
		for _, col := range c.cols {
			n += len(col) + 16
		}
	}
	return n
}

func appendInts(b []byte, v []int64, comma bool) []byte {
	return appendNums(b, v, comma, func(b []byte, x int64) []byte { return strconv.AppendInt(b, x, 10) })
}

func appendUints(b []byte, v []uint64, comma bool) []byte {
	return appendNums(b, v, comma, func(b []byte, x uint64) []byte { return strconv.AppendUint(b, x, 10) })
}

// appendNums appends v comma-separated, with a comma first when comma is
// set (the numbers continue a list).
func appendNums[T any](b []byte, v []T, comma bool, app func([]byte, T) []byte) []byte {
	for _, x := range v {
		if comma {
			b = append(b, ',')
		}
		b, comma = app(b, x), true
	}
	return b
}

// slotMark starts the stand-in EncodeObservation has encoding/json write
// for a timeline (a NUL, which no name can hold, closes it).
const slotMark = `\u0000timeline:`

// EncodeObservation is the document's bytes as observe saves them:
// compact JSON, the timelines (nearly all of a week's bytes) written by
// their own encoder, cached where they only grow, and spliced in, so that
// encoding/json neither reflects over nor re-scans millions of numbers.
func EncodeObservation(o *Observation) ([]byte, error) {
	var tls []*Timeline
	add := func(s *ObservedSeries) {
		if s != nil {
			tls = append(tls, &s.Seconds, &s.Minutes)
		}
	}
	for i := range o.Devices {
		add(&o.Devices[i])
	}
	for i := range o.Systems {
		add(o.Systems[i].IO)
		add(o.Systems[i].Database)
	}
	add(o.HostPressure)
	for i, t := range tls {
		t.slot = i + 1
	}
	defer func() {
		for _, t := range tls {
			t.slot = 0
		}
	}()
	skeleton, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encode observation: %w", err)
	}
	size := len(skeleton)
	for _, t := range tls {
		size += t.sizeHint()
	}
	out := make([]byte, 0, size)
	mark := []byte(`"` + slotMark)
	for {
		i := bytes.Index(skeleton, mark)
		if i < 0 {
			break
		}
		rest := skeleton[i+len(mark):]
		j := bytes.Index(rest, []byte(`\u0000"`))
		n, err := strconv.Atoi(string(rest[:max(j, 0)]))
		if j < 0 || err != nil || n < 1 || n > len(tls) {
			return nil, fmt.Errorf("encode observation: a timeline's place is lost at byte %d", i)
		}
		out = tls[n-1].appendJSON(append(out, skeleton[:i]...))
		skeleton = rest[j+len(`\u0000"`):]
	}
	return append(append(out, skeleton...), '\n'), nil
}
