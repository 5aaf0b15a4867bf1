package report

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// ObservationWriteFunc renders an observation in one format.
type ObservationWriteFunc func(w io.Writer, o *results.Observation) error

// observationWriters are the formats an observation renders in, in the
// order they are listed: its figures are not a results file's matrix,
// so it has a registry of its own.
var observationWriters = []struct {
	name  string
	write ObservationWriteFunc
}{
	{"text", writeObservationText},
	{"markdown", writeObservationMarkdown},
	{"csv", writeObservationCSV},
	{"html", writeObservationHTML},
	// The document itself, re-indented: what a script reads.
	{"json", func(w io.Writer, o *results.Observation) error { return WriteJSON(w, o) }},
}

// ObservationFormats are the names of the formats an observation renders in.
var ObservationFormats = func() []string {
	names := make([]string, len(observationWriters))
	for i, f := range observationWriters {
		names[i] = f.name
	}
	return names
}()

// LookupObservation returns the writer of an observation format.
func LookupObservation(format string) (ObservationWriteFunc, error) {
	for _, f := range observationWriters {
		if f.name == format {
			return f.write, nil
		}
	}
	return nil, fmt.Errorf("%w %q for an observation (valid: %s)", ErrBadFormat, format, strings.Join(ObservationFormats, ", "))
}

// WriteObservation renders o in one of ObservationFormats.
func WriteObservation(w io.Writer, o *results.Observation, format string) error {
	write, err := LookupObservation(format)
	if err != nil {
		return err
	}
	return write(w, o)
}

// The counters of a device's (and a cgroup's) timelines, as observe
// records them from /proc/diskstats and io.stat.
const (
	cReads, cWrites, cReadBytes, cWriteBytes = "rios", "wios", "rbytes", "wbytes"
	cReadTicks, cWriteTicks                  = "rticks_ms", "wticks_ms"
	cIOTicks, cQueue                         = "io_ticks_ms", "queue_ms"
	cDiscards, cFlushes                      = "dios", "fios"
)

// ioCounters name a series' read and write counters.
type ioCounters struct{ reads, writes, readBytes, writeBytes string }

// countersOf are a series' counters by its kind: a device's and a
// cgroup's are the kernel's, a database's its own.
func countersOf(kind string) ioCounters {
	if kind == "mysql" {
		return ioCounters{"data_reads", "data_writes", "data_read", "data_written"}
	}
	return ioCounters{cReads, cWrites, cReadBytes, cWriteBytes}
}

// databaseOrder puts MySQL's counters in the order a reader compares
// them; others follow by name.
var databaseOrder = []string{"data_reads", "data_writes", "data_read", "data_written", "data_fsyncs", "dblwr_writes", "os_log_written"}

// databaseBytes are the database counters that count bytes, not I/Os.
var databaseBytes = map[string]bool{"data_read": true, "data_written": true, "os_log_written": true}

// span is a run of a timeline's intervals: each counter's increase
// summed, and the time they cover on the monotonic clock.
type span struct {
	sums map[string]uint64
	us   int64
}

// spanOf sums the intervals [from, to) of t. A counter a source did not
// record counts nothing.
func spanOf(t results.Timeline, from, to int) span {
	s := span{sums: map[string]uint64{}}
	for i := from; i < to; i++ {
		if i < len(t.ElapsedUS) {
			s.us += t.ElapsedUS[i]
		}
		for name, c := range t.Counters {
			if i < len(c) {
				s.sums[name] += c[i]
			}
		}
	}
	return s
}

// rate is counter c's increase per second; NaN over no time.
func (s span) rate(c string) float64 {
	if s.us <= 0 {
		return math.NaN()
	}
	return float64(s.sums[c]) / (float64(s.us) / 1e6)
}

// per is counter c's increase per unit of counter of; NaN where of did
// not move (no I/O has no average size or wait).
func (s span) per(c, of string) float64 {
	if s.sums[of] == 0 {
		return math.NaN()
	}
	return float64(s.sums[c]) / float64(s.sums[of])
}

// busy is a millisecond counter's increase over the span's milliseconds:
// the time-averaged number of I/Os it stands for.
func (s span) busy(c string) float64 {
	if s.us <= 0 {
		return math.NaN()
	}
	return float64(s.sums[c]) / (float64(s.us) / 1e3)
}

// iostat is a device's figures over a span as sysstat's iostat -x
// computes them from two /proc/diskstats readings (its S_VALUE over
// rd_ios, rd_sect, rd_ticks, rq_ticks and tot_ticks): rates over the
// elapsed time, sizes and waits per I/O. Bytes stand for its sectors.
type iostat struct {
	Reads, Writes, Discards, Flushes float64 // per second
	ReadKB, WriteKB                  float64 // KiB per second
	ReadSize, WriteSize              float64 // KiB per I/O
	ReadAwait, WriteAwait            float64 // ms per I/O
	AquSz, UtilPct                   float64
}

func iostatOf(s span) iostat {
	return iostat{
		Reads:      s.rate(cReads),                   // r/s = Δrd_ios/Δt
		Writes:     s.rate(cWrites),                  // w/s = Δwr_ios/Δt
		Discards:   s.rate(cDiscards),                // d/s
		Flushes:    s.rate(cFlushes),                 // f/s
		ReadKB:     s.rate(cReadBytes) / 1024,        // rkB/s = Δrd_sect/2/Δt
		WriteKB:    s.rate(cWriteBytes) / 1024,       // wkB/s
		ReadSize:   s.per(cReadBytes, cReads) / 1024, // rareq-sz = Δrd_sect/Δrd_ios/2
		WriteSize:  s.per(cWriteBytes, cWrites) / 1024,
		ReadAwait:  s.per(cReadTicks, cReads), // r_await = Δrd_ticks/Δrd_ios
		WriteAwait: s.per(cWriteTicks, cWrites),
		AquSz:      s.busy(cQueue),         // aqu-sz = Δrq_ticks/Δt
		UtilPct:    100 * s.busy(cIOTicks), // %util = Δtot_ticks/Δt
	}
}

// hourRange is the run of t's intervals that end within the busiest
// hour h: [from, to), empty when none does.
func hourRange(t results.Timeline, h *results.BusiestHour) (from, to int) {
	from = len(t.EndMS)
	for i, end := range t.EndMS {
		if end > h.StartMS && end <= h.EndMS {
			from = min(from, i)
			to = i + 1
		}
	}
	if to == 0 {
		return 0, 0
	}
	return from, to
}

// num renders a figure as the tables write values: thousands
// separators, decimals only where they carry information; "-" where
// there is no figure (no I/O has no size or wait), never 0.
func num(v float64) string {
	// The bounds are where rounding reaches the next magnitude: 99.97
	// is "100", not "100.0".
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case a >= 99.95:
		return units.Thousands(v, 0)
	case a >= 9.995:
		return units.Thousands(v, 1)
	}
	return units.Thousands(v, 2)
}

// pct renders a share (0 to 1) in whole percent, "<1%" for a share that
// is there but rounds away.
func pct(share float64) string {
	switch p := math.Round(100 * share); {
	case p == 0 && share > 0:
		return "<1%"
	default:
		return fmt.Sprintf("%.0f%%", p)
	}
}

// sizeMix renders size classes as a histogram line, "4K 61% · 16K 30% ·
// 1M 9%": each class's share of all the I/Os, the empty ones left out.
func sizeMix(classes []results.SizeClass) string {
	var total uint64
	for _, c := range classes {
		total += c.Reads + c.Writes
	}
	if total == 0 {
		return ""
	}
	sorted := slices.Clone(classes)
	slices.SortFunc(sorted, func(a, b results.SizeClass) int { return int(a.Bytes - b.Bytes) })
	var parts []string
	for _, c := range sorted {
		if n := c.Reads + c.Writes; n > 0 {
			parts = append(parts, strings.ToUpper(results.ShortSize(c.Bytes))+" "+pct(float64(n)/float64(total)))
		}
	}
	return strings.Join(parts, " · ")
}

// offset renders a time since the observation's start, "+1h30m0s".
func offset(ms int64) string {
	return "+" + (time.Duration(ms) * time.Millisecond).String()
}

// clockSpan renders a busiest hour's times, "2024-05-01 09:30:00–10:30:00
// UTC", from its RFC 3339 ends (as written, where they do not parse).
func clockSpan(start, end string) string {
	s, err1 := time.Parse(time.RFC3339, start)
	e, err2 := time.Parse(time.RFC3339, end)
	if err1 != nil || err2 != nil {
		return start + " – " + end
	}
	endLayout := "15:04:05"
	if e.Format(time.DateOnly) != s.Format(time.DateOnly) {
		endLayout = time.DateTime
	}
	return s.Format(time.DateTime) + "–" + e.Format(endLayout) + " " + zoneName(s)
}

// zoneName is UTC, or the offset from it: "+02:00".
func zoneName(t time.Time) string {
	if z := t.Format("Z07:00"); z != "Z" {
		return z
	}
	return "UTC"
}

// hourLabel names a busiest hour in a table's row.
func hourLabel(h *results.BusiestHour) string {
	if h.Whole {
		return "whole (under an hour)"
	}
	if s, err := time.Parse(time.RFC3339, h.Start); err == nil {
		e, _ := time.Parse(time.RFC3339, h.End)
		return "busiest hour " + s.Format("15:04") + "–" + e.Format("15:04")
	}
	return "busiest hour " + offset(h.StartMS)
}

// obsPart is a part of an observation's report: a device, the systems'
// sum, a system, the events. Text, Markdown and HTML draw the same
// parts; HTML adds the charts of the series it names.
type obsPart struct {
	Title  string
	Tables []obsTable
	// Notes follow the tables: what their figures mean.
	Notes []string
	// Device, System and Pressure are what a part is about, for the
	// charts.
	Device   *results.ObservedSeries
	System   *results.ObservedSystem
	Pressure *results.ObservedSeries
}

// obsTable is one table: a header, rows of strings (the first column
// the rows' labels) and the lines that follow it.
type obsTable struct {
	Title  string
	Header []string
	Rows   [][]string
	Notes  []string
	// Text is how many columns, from the first, hold words rather than
	// numbers (at least the labels'): they are left-aligned.
	Text int
}

// observationHeader is the title and the lines that say what was
// observed, where, when and how often.
func observationHeader(o *results.Observation) (title string, lines []string) {
	h := o.Host
	title = "iomatrix observation"
	if h.Hostname != "" {
		title += " of " + h.Hostname
	}
	host := []string{}
	if h.Hostname != "" {
		host = append(host, "host "+h.Hostname)
	}
	if h.Kernel != "" {
		host = append(host, "kernel "+h.Kernel)
	}
	if h.CPUs > 0 {
		host = append(host, units.Count(h.CPUs, "CPU"))
	}
	lines = append(lines, strings.Join(append(host, o.Tool.Name+" "+o.Tool.Version), ", "))
	when := "started " + o.StartedAt
	switch {
	case o.FinishedAt != "":
		when += ", finished " + o.FinishedAt
		if o.Stop != "" {
			when += " (" + o.Stop + ")"
		}
	case o.SavedAt != "":
		when += "; not finished: still running, or killed: last saved at " + o.SavedAt
	default:
		when += "; not finished: still running, or killed"
	}
	lines = append(lines, when)
	if o.Error != "" {
		lines = append(lines, "stopped by an error: "+o.Error)
	}
	s := o.Settings
	every := fmt.Sprintf("interval %s; each interval kept for the last %s, each minute for the whole observation",
		time.Duration(s.IntervalNS), time.Duration(s.SecondsWindowNS))
	if observed := observedMS(o); observed > 0 {
		every += fmt.Sprintf("; %s observed", time.Duration(observed)*time.Millisecond)
	}
	if s.DurationNS > 0 {
		every += fmt.Sprintf(" of %s asked", time.Duration(s.DurationNS))
	} else {
		every += ", until interrupted"
	}
	lines = append(lines, every)
	var asked []string
	for _, a := range []struct {
		what  string
		specs []string
	}{{"devices", s.Devices}, {"cgroups", s.Cgroups}, {"databases", s.Databases}} {
		if len(a.specs) > 0 {
			asked = append(asked, a.what+" "+strings.Join(a.specs, ", "))
		}
	}
	if len(asked) > 0 {
		lines = append(lines, "sources: "+strings.Join(asked, "; "))
	}
	return title, lines
}

// observedMS is how far the observation's minutes reach.
func observedMS(o *results.Observation) int64 {
	var last int64
	each(o, func(_ string, s *results.ObservedSeries) {
		if n := s.Minutes.Len(); n > 0 {
			last = max(last, s.Minutes.EndMS[n-1])
		}
	})
	return last
}

// each calls f with every series of o and the name it goes by: a
// device's, the host's pressure's ("host"), a system's (its cgroup),
// "system/kind" for a database.
func each(o *results.Observation, f func(name string, s *results.ObservedSeries)) {
	for i := range o.Devices {
		f(o.Devices[i].Name, &o.Devices[i])
	}
	if o.HostPressure != nil {
		f(o.HostPressure.Name, o.HostPressure)
	}
	for _, sys := range o.Systems {
		if sys.IO != nil {
			f(sys.Name, sys.IO)
		}
		if sys.Database != nil {
			f(sys.Name+"/"+sys.Database.Kind, sys.Database)
		}
	}
}

// accountingNotes are how the kernel counted what the document holds,
// stated beside the figures: a cgroup's I/Os are not a device's.
func accountingNotes(o *results.Observation) []string {
	a := o.Accounting
	if len(a.Notes) > 0 {
		// The writer states them in its own words, from what it found.
		return a.Notes
	}
	// A document without them still says how it was counted in its
	// fields: what its cgroup version and writeback mean.
	var notes []string
	files := map[int]string{1: "blkio.throttle.io_serviced and io_service_bytes", 2: "io.stat"}[a.CgroupVersion]
	mode := ""
	if a.CgroupMode != "" {
		mode = " (" + a.CgroupMode + ")"
	}
	switch {
	case files != "":
		notes = append(notes, fmt.Sprintf("cgroup v%d%s: a system's counts are its cgroup's %s, bios counted as they are submitted, "+
			"before the block layer merges or splits them; a device's are /proc/diskstats' requests, counted as they complete: "+
			"the systems need not add up to the devices", a.CgroupVersion, mode, files))
	case len(o.Systems) > 0:
		notes = append(notes, "no cgroup I/O accounting was read: the systems' figures are their databases' own")
	}
	switch a.Writeback {
	case "root":
		notes = append(notes, "buffered writeback is charged to the root cgroup on this host: a system's cgroup counts its direct "+
			"and synchronous I/O, while the page cache's writeback of what it wrote is the root's")
	case "cgroup":
		notes = append(notes, "buffered writeback is charged to the cgroup that dirtied the pages (cgroup v2 with the memory controller)")
	}
	for _, sys := range o.Systems {
		if sys.Writeback != "" && sys.Writeback != a.Writeback {
			notes = append(notes, fmt.Sprintf("%s: its buffered writeback is charged to %s", sys.Name, map[string]string{
				"root": "the root cgroup", "cgroup": "its own cgroup"}[sys.Writeback]))
		}
	}
	return notes
}

// iostatHeader are iostat -x's columns, d/s and f/s where the device
// discarded or flushed.
func iostatHeader(discards, flushes bool) []string {
	h := []string{"", "r/s", "w/s", "rkB/s", "wkB/s", "rareq-sz", "wareq-sz", "r_await", "w_await", "aqu-sz", "%util"}
	if discards {
		h = append(h, "d/s")
	}
	if flushes {
		h = append(h, "f/s")
	}
	return h
}

func iostatRow(label string, f iostat, discards, flushes bool) []string {
	row := []string{label, num(f.Reads), num(f.Writes), num(f.ReadKB), num(f.WriteKB), num(f.ReadSize), num(f.WriteSize),
		num(f.ReadAwait), num(f.WriteAwait), num(f.AquSz), num(f.UtilPct)}
	if discards {
		row = append(row, num(f.Discards))
	}
	if flushes {
		row = append(row, num(f.Flushes))
	}
	return row
}

// iostatNotes say where the device figures come from, and what %util
// cannot tell.
var iostatNotes = []string{
	"device figures are iostat -x's, from the intervals' /proc/diskstats counters with sysstat's formulas: " +
		"r/s = Δreads/Δt, rkB/s = Δbytes/1024/Δt, rareq-sz = Δbytes/Δreads/1024 (kB), r_await = Δread ticks/Δreads (ms), " +
		"aqu-sz = Δweighted queue time/Δt, %util = Δio ticks/Δt × 100 (w_ and the writes alike); a dash where there was no I/O to average",
	"%util is the share of time the device had at least one I/O in flight: it says nothing of the limit of a device " +
		"that serves many at once (SSD, NVMe, RAID, a cloud volume), which can show 100% with room to spare",
}

// devicePart is a device's iostat figures over the whole observation and
// at its busiest hour.
func devicePart(d *results.ObservedSeries) obsPart {
	whole := spanOf(d.Minutes, 0, d.Minutes.Len())
	discards, flushes := whole.sums[cDiscards] > 0, whole.sums[cFlushes] > 0
	label := "whole observation"
	if whole.us > 0 {
		label += " (" + (time.Duration(whole.us) * time.Microsecond).Round(time.Second).String() + ")"
	}
	t := obsTable{Header: iostatHeader(discards, flushes)}
	t.Rows = append(t.Rows, iostatRow(label, iostatOf(whole), discards, flushes))
	if s := d.Summary; s != nil && s.BusiestHour != nil {
		// A busiest hour that is the whole observation is the row above.
		if from, to := hourRange(d.Minutes, s.BusiestHour); to > from && !s.BusiestHour.Whole {
			t.Rows = append(t.Rows, iostatRow(hourLabel(s.BusiestHour), iostatOf(spanOf(d.Minutes, from, to)), discards, flushes))
		}
		if !s.BusiestHour.Whole {
			t.Notes = append(t.Notes, "busiest hour: "+whenBusiest(s.BusiestHour))
		}
	}
	if n := d.UncountedIntervals; n > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("no cgroup counted this device's I/O in %s: the systems' figures on it are missing there, not zero "+
			"(cgroup v1 counts a device's I/O only once a throttle rule was set on it)", units.Count(n, "interval")))
	}
	title := "device " + d.Name
	if d.Device != "" {
		title += " (" + d.Device + ")"
	}
	tables := []obsTable{t}
	if s := d.Summary; s != nil && flushes {
		if _, ok := s.Mean["flushes"]; ok {
			// How often the device was asked to make its cache durable:
			// the spread tells a steady fsync load from bursts.
			tables = append(tables, obsTable{Title: d.Name + ": flushes", Header: spreadHeader,
				Rows: [][]string{spreadRow("f/s", "flushes", s, 1)}, Notes: []string{spreadNote}})
		}
	}
	return obsPart{Title: title, Tables: tables, Device: d}
}

// whenBusiest says when a busiest hour was, by the clock and since the
// start.
func whenBusiest(h *results.BusiestHour) string {
	return fmt.Sprintf("%s (%s to %s)", clockSpan(h.Start, h.End), offset(h.StartMS), offset(h.EndMS))
}

// spreadHeader heads a table of figures: the mean, the busiest hour's,
// and the spread of the minutes' and the intervals' rates.
var spreadHeader = []string{"", "mean", "busiest hour", "minute p50", "p95", "p99", "max", "second p50", "p95", "p99", "max"}

// spreadNote says what spreadHeader's columns are.
const spreadNote = "each figure per second: the mean over the observation, the busiest hour's mean, " +
	"and the spread of each minute's and each interval's rate"

// spreadRow is a figure's row of the spread table, each value divided by
// scale (1024 for bytes shown as KiB).
func spreadRow(label, figure string, s *results.SeriesSummary, scale float64) []string {
	row := []string{label, num(lookup(s.Mean, figure) / scale)}
	if h := s.BusiestHour; h != nil {
		row = append(row, num(lookup(h.Mean, figure)/scale))
	} else {
		row = append(row, "-")
	}
	for _, spreads := range []map[string]results.Spread3{s.PerMinute, s.PerSecond} {
		sp, ok := spreads[figure]
		if !ok {
			row = append(row, "-", "-", "-", "-")
			continue
		}
		row = append(row, num(sp.P50/scale), num(sp.P95/scale), num(sp.P99/scale), num(sp.Max/scale))
	}
	return row
}

// lookup is m[k], NaN where m has none.
func lookup(m map[string]float64, k string) float64 {
	if v, ok := m[k]; ok {
		return v
	}
	return math.NaN()
}

// precisionNote says how close the per-second percentiles are, when
// they come from a histogram.
func precisionNote(s *results.SeriesSummary) []string {
	worst := 0.0
	for _, sp := range s.PerSecond {
		worst = max(worst, sp.PrecisionPct)
	}
	if worst == 0 {
		return nil
	}
	return []string{fmt.Sprintf("per-second percentiles are from a histogram (the observation outlasts its window): each within %s of the exact value", units.FormatPercent(worst))}
}

// figureOrder is the order of a summary's figures: every series' five,
// a device's flushes, the stall shares, then a database's own.
var figureOrder = []string{"reads", "writes", "ios", "rkb", "wkb", "flushes",
	results.FigureStallSome, results.FigureStallFull, "fsyncs", "dblwr_writes", "log_kb"}

var figureLabels = map[string]string{"reads": "r/s", "writes": "w/s", "ios": "IOPS", "rkb": "rkB/s", "wkb": "wkB/s",
	"flushes": "f/s", results.FigureStallSome: "stall some %", results.FigureStallFull: "stall full %"}

// stallFigures are the stall shares and the counters they are made of:
// µs of stall over the µs elapsed, in percent.
var stallFigures = []struct{ figure, counter string }{
	{results.FigureStallSome, results.CounterStallSome},
	{results.FigureStallFull, results.CounterStallFull},
}

// stallShare is a stall counter's share of a span's time, in percent
// (at most 100, as observe holds it); NaN over no time.
func (s span) stallShare(c string) float64 {
	return min(100, s.rate(c)/1e4)
}

// figureLabel names a figure in a table's row, with the divisor that
// turns its rate into the label's unit.
func figureLabel(name string) (string, float64) {
	switch {
	case figureLabels[name] != "":
		return figureLabels[name], 1
	case databaseBytes[name]:
		return name + " kB/s", 1024 // a counter of bytes, as the database names it
	case strings.HasSuffix(name, "_kb"):
		return strings.TrimSuffix(name, "_kb") + " kB/s", 1
	}
	return name + "/s", 1
}

// orderFigures sorts figure (or counter) names as the tables list them:
// the known ones in their order, the others by name after them.
func orderFigures(names []string) []string {
	rank := func(n string) int {
		if i := slices.Index(figureOrder, n); i >= 0 {
			return i
		}
		if i := slices.Index(databaseOrder, n); i >= 0 {
			return len(figureOrder) + i
		}
		return len(figureOrder) + len(databaseOrder)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(names)
}

// spreadTable is a series' figures from its summary or, where the
// document has none yet (observe summarizes when it saves; a file cut
// short before then still has its timelines), the means of its minutes.
func spreadTable(title string, s *results.ObservedSeries) obsTable {
	t := obsTable{Title: title, Header: spreadHeader}
	if sum := s.Summary; sum != nil {
		var names []string
		for n := range sum.Mean {
			names = append(names, n)
		}
		for n := range sum.PerMinute {
			names = append(names, n)
		}
		for _, n := range orderFigures(names) {
			label, scale := figureLabel(n)
			t.Rows = append(t.Rows, spreadRow(label, n, sum, scale))
		}
		t.Notes = precisionNote(sum)
		return t
	}
	t.Header = []string{"", "mean"}
	whole := spanOf(s.Minutes, 0, s.Minutes.Len())
	c := countersOf(s.Kind)
	if s.Kind != results.KindPressure {
		t.Rows = [][]string{{"r/s", num(whole.rate(c.reads))}, {"w/s", num(whole.rate(c.writes))},
			{"IOPS", num(whole.rate(c.reads) + whole.rate(c.writes))},
			{"rkB/s", num(whole.rate(c.readBytes) / 1024)}, {"wkB/s", num(whole.rate(c.writeBytes) / 1024)}}
	}
	for _, f := range stallFigures {
		if _, ok := s.Minutes.Counters[f.counter]; ok {
			label, _ := figureLabel(f.figure)
			t.Rows = append(t.Rows, []string{label, num(whole.stallShare(f.counter))})
		}
	}
	if s.Kind != "cgroup" && s.Kind != "device" && s.Kind != results.KindPressure {
		// A database's counters beyond its reads and writes.
		var extra []string
		for n := range s.Minutes.Counters {
			if n != c.reads && n != c.writes && n != c.readBytes && n != c.writeBytes {
				extra = append(extra, n)
			}
		}
		for _, n := range orderFigures(extra) {
			label, scale := figureLabel(n)
			t.Rows = append(t.Rows, []string{label, num(whole.rate(n) / scale)})
		}
	}
	t.Notes = []string{"no summary in the document yet: the means are the minutes', and there is no spread"}
	return t
}

// systemPart is a system's demand: its cgroup's figures, its busiest
// hour, and its database's view beside its cgroup's.
func systemPart(o *results.Observation, sys *results.ObservedSystem) obsPart {
	title := "system " + sys.Name
	if sys.Cgroup != "" {
		title += " (cgroup " + sys.Cgroup + ")"
	}
	p := obsPart{Title: title, System: sys}
	explained := false
	add := func(t obsTable) {
		if !explained && len(t.Header) == len(spreadHeader) {
			// Once, under the first table of those columns.
			t.Notes = append([]string{spreadNote}, t.Notes...)
			explained = true
		}
		p.Tables = append(p.Tables, t)
	}
	if sys.IO != nil {
		add(cgroupTable(o, sys))
	}
	if db := sys.Database; db != nil {
		add(spreadTable(fmt.Sprintf("%s: its database's own counters (%s)", sys.Name, db.Kind), db))
	}
	if c := sys.CrossCheck; c != nil {
		p.Tables = append(p.Tables, crossCheckTable(sys.Name, sys.Database, c))
	}
	return p
}

// cgroupTable is a system's cgroup figures, with its busiest hour, its
// size mix, the I/Os it kept in flight and its totals by device.
func cgroupTable(o *results.Observation, sys *results.ObservedSystem) obsTable {
	t := spreadTable(sys.Name+": its cgroup's I/O", sys.IO)
	if s := sys.IO.Summary; s != nil {
		if h := s.BusiestHour; h != nil {
			line := "busiest hour: "
			if h.Whole {
				line += "the whole observation (shorter than an hour)"
			} else {
				line += whenBusiest(h)
			}
			line += "; reads " + pct(h.ReadShare) + " of its I/Os"
			if mix := sizeMix(h.SizeMix); mix != "" {
				line += "; sizes " + mix
			}
			t.Notes = append(t.Notes, line)
		}
		if mix := sizeMix(s.SizeMix); mix != "" {
			t.Notes = append(t.Notes, "sizes over the whole observation: "+mix)
		}
	}
	if sys.Concurrency > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("I/Os in flight at the busiest hour: %s (its share of its devices' aqu-sz)", num(sys.Concurrency)))
	}
	if note := systemStallNote(o, sys); note != "" {
		t.Notes = append(t.Notes, note)
	}
	t.Notes = append(t.Notes, perDeviceNotes(o, sys)...)
	return t
}

// systemStallNote says where a system's stall is told: "" for a
// document older than stall figures, which says nothing of them.
func systemStallNote(o *results.Observation, sys *results.ObservedSystem) string {
	switch sys.Pressure {
	case results.PressureCgroup:
		return "stall: its cgroup's io.pressure, the share of time (in percent, not per second) in which some (all) of its tasks waited on I/O"
	case results.PressureHost:
		why := "its cgroup keeps no io.pressure"
		if o.Accounting.CgroupVersion == 1 {
			why = "cgroup v1 keeps no pressure per cgroup"
		}
		return "stall: " + why + "; the host's pressure stands for it (host pressure, above)"
	case results.PressureNone:
		return "stall: not known (neither its cgroup nor the host keeps pressure)"
	}
	return ""
}

// hostPressurePart is the host's stall on I/O, /proc/pressure/io.
func hostPressurePart(p *results.ObservedSeries) obsPart {
	t := spreadTable("", p)
	t.Notes = append([]string{"each figure a share of wall time, in percent: the mean over the observation, " +
		"the mean of the hour with the most stall (some), and the spread of each minute's and each interval's share"}, t.Notes...)
	if s := p.Summary; s != nil && s.BusiestHour != nil && !s.BusiestHour.Whole {
		t.Notes = append(t.Notes, "the hour with the most stall: "+whenBusiest(s.BusiestHour))
	}
	return obsPart{Title: "host pressure (/proc/pressure/io)", Tables: []obsTable{t}, Pressure: p,
		Notes: []string{
			"stall some: the share of time in which at least one non-idle task of the host waited on I/O; " +
				"stall full: in which all of them did at once, the time the whole host lost to I/O",
			"it is time, not I/Os: a device that answers slowly, or a cap that holds a system back, shows here " +
				"however few its I/Os; a system's own share, where its cgroup keeps one, is under the system",
		}}
}

// perDeviceNotes are a system's totals on each device, in the order of
// the observation's devices.
func perDeviceNotes(o *results.Observation, sys *results.ObservedSystem) []string {
	names := make([]string, 0, len(sys.PerDevice))
	for name := range sys.PerDevice {
		names = append(names, name)
	}
	rank := func(name string) int {
		for i, d := range o.Devices {
			if d.Name == name || d.Device == name {
				return i
			}
		}
		return len(o.Devices)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	var notes []string
	for _, name := range names {
		d := sys.PerDevice[name]
		notes = append(notes, fmt.Sprintf("on %s: %s reads (%s), %s writes (%s)", name,
			units.Thousands(float64(d.ReadIOs), 0), units.FormatSize(int64(d.ReadBytes)),
			units.Thousands(float64(d.WriteIOs), 0), units.FormatSize(int64(d.WriteBytes))))
	}
	return notes
}

// crossCheckTable puts the database's figures beside its cgroup's.
func crossCheckTable(system string, db *results.ObservedSeries, c *results.CrossCheck) obsTable {
	kind := "database"
	if db != nil {
		kind = db.Kind
	}
	ratio := func(cg, d float64) string {
		if d == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", cg/d)
	}
	t := obsTable{
		Title:  fmt.Sprintf("%s: the database's view beside its cgroup's", system),
		Header: []string{"", kind, "cgroup", "cgroup / " + kind},
		Rows: [][]string{
			{"r/s", num(c.DBReadIOPS), num(c.CgroupReadIOPS), ratio(c.CgroupReadIOPS, c.DBReadIOPS)},
			{"w/s", num(c.DBWriteIOPS), num(c.CgroupWriteIOPS), ratio(c.CgroupWriteIOPS, c.DBWriteIOPS)},
			{"rkB/s", num(c.DBReadKBps), num(c.CgroupReadKBps), ratio(c.CgroupReadKBps, c.DBReadKBps)},
			{"wkB/s", num(c.DBWriteKBps), num(c.CgroupWriteKBps), ratio(c.CgroupWriteKBps, c.DBWriteKBps)},
		},
		Notes: c.Notes,
	}
	return t
}

// eventsPart lists what happened to the sources.
func eventsPart(o *results.Observation) obsPart {
	t := obsTable{Header: []string{"", "at", "source", "event", "detail"}, Text: 5}
	for _, e := range o.Events {
		t.Rows = append(t.Rows, []string{offset(e.OffsetMS), e.At, e.Source, e.Kind, e.Detail})
	}
	return obsPart{Title: "events", Tables: []obsTable{t},
		Notes: []string{"a source that went leaves a gap in its timelines; one that was reset starts from a fresh baseline"}}
}

// observationParts are the report's parts in order: devices, systems,
// events. The devices' last part carries the notes on their figures.
func observationParts(o *results.Observation) []obsPart {
	var parts []obsPart
	for i := range o.Devices {
		parts = append(parts, devicePart(&o.Devices[i]))
	}
	if n := len(parts); n > 0 {
		parts[n-1].Notes = iostatNotes
	}
	if o.HostPressure != nil {
		parts = append(parts, hostPressurePart(o.HostPressure))
	}
	for i := range o.Systems {
		parts = append(parts, systemPart(o, &o.Systems[i]))
	}
	if len(o.Events) > 0 {
		parts = append(parts, eventsPart(o))
	}
	return parts
}

func writeObservationText(w io.Writer, o *results.Observation) error {
	return writeObservationTables(w, o, false)
}

func writeObservationMarkdown(w io.Writer, o *results.Observation) error {
	return writeObservationTables(w, o, true)
}

// writeObservationTables writes the report as text or as Markdown: the
// same lines and tables, with headings and lists where Markdown has
// them.
func writeObservationTables(w io.Writer, o *results.Observation, md bool) error {
	r := func() tw.Renderer { return asciiTable() }
	heading := func(level int, s string) string { return s + "\n" }
	item := func(s string) string { return "- " + s + "\n" }
	if md {
		r = func() tw.Renderer { return renderer.NewMarkdown() }
		heading = func(level int, s string) string { return strings.Repeat("#", level) + " " + s + "\n\n" }
	}
	bw := bufio.NewWriter(w)
	title, lines := observationHeader(o)
	bw.WriteString(heading(2, title))
	for _, l := range lines {
		if md {
			bw.WriteString(item(l))
		} else {
			bw.WriteString(l + "\n")
		}
	}
	if notes := accountingNotes(o); len(notes) > 0 {
		bw.WriteString("\n" + heading(3, "accounting"))
		for _, n := range notes {
			bw.WriteString(item(n))
		}
	}
	for _, p := range observationParts(o) {
		bw.WriteString("\n" + heading(3, p.Title))
		for i, t := range p.Tables {
			if i > 0 {
				bw.WriteString("\n")
			}
			if t.Title != "" {
				bw.WriteString(heading(4, t.Title))
			}
			if err := bw.Flush(); err != nil {
				return err
			}
			if len(t.Rows) > 0 {
				if err := renderAligned(w, t.Header, t.Rows, r(), max(1, t.Text)); err != nil {
					return err
				}
			}
			if len(t.Notes) > 0 && md {
				bw.WriteString("\n") // a markdown table would take the line under it as a row
			}
			for _, n := range t.Notes {
				bw.WriteString(item(n))
			}
		}
		if len(p.Notes) > 0 {
			bw.WriteString("\n")
		}
		for _, n := range p.Notes {
			bw.WriteString(item(n))
		}
	}
	return bw.Flush()
}

// observationCSVHeader is the CSV's columns: a row per interval (and per
// minute) per series; the device columns are empty for other series,
// the I/O columns for the host's pressure, and the stall columns for a
// series without stall times.
var observationCSVHeader = []string{"series", "kind", "resolution", "end", "elapsed_s",
	"reads_per_s", "writes_per_s", "rkb_per_s", "wkb_per_s", "r_await", "w_await", "aqu_sz", "util_pct",
	"flushes_per_s", "stall_some_pct", "stall_full_pct"}

// writeObservationCSV writes each series' minutes (resolution "minute")
// then its intervals ("interval"), a row each: plain numbers, times in
// RFC 3339, empty where there is no figure (a wait without I/O).
func writeObservationCSV(w io.Writer, o *results.Observation) error {
	start, err := time.Parse(time.RFC3339Nano, o.StartedAt)
	if err != nil {
		return fmt.Errorf("started_at %q: %w", o.StartedAt, err)
	}
	cw := csv.NewWriter(w)
	cw.Write(observationCSVHeader)
	cell := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		return ftoa(roundTo(v, 2))
	}
	each(o, func(name string, s *results.ObservedSeries) {
		c := countersOf(s.Kind)
		for _, res := range []struct {
			name string
			t    results.Timeline
		}{{"minute", s.Minutes}, {"interval", s.Seconds}} {
			for i := range res.t.EndMS {
				sp := spanOf(res.t, i, i+1)
				row := []string{name, s.Kind, res.name,
					start.Add(time.Duration(res.t.EndMS[i]) * time.Millisecond).Format(time.RFC3339Nano),
					ftoa(float64(sp.us) / 1e6)}
				if s.Kind != results.KindPressure {
					row = append(row, cell(sp.rate(c.reads)), cell(sp.rate(c.writes)), cell(sp.rate(c.readBytes)/1024), cell(sp.rate(c.writeBytes)/1024))
				} else {
					row = append(row, "", "", "", "")
				}
				if s.Kind == "device" {
					f := iostatOf(sp)
					row = append(row, cell(f.ReadAwait), cell(f.WriteAwait), cell(f.AquSz), cell(f.UtilPct), cell(f.Flushes))
				} else {
					row = append(row, "", "", "", "", "")
				}
				for _, f := range stallFigures {
					if _, ok := res.t.Counters[f.counter]; ok {
						row = append(row, cell(sp.stallShare(f.counter)))
					} else {
						row = append(row, "")
					}
				}
				cw.Write(row)
			}
		}
	})
	cw.Flush()
	return cw.Error()
}
