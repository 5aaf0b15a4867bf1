package report

import (
	"encoding/csv"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/results"
)

// csvColumns flattens a result: every field of the results schema, one
// column each, so a spreadsheet or a script needs no JSON.
var csvColumns = []csvColumn{
	{"name", func(r *results.Result) string { return r.Name }},
	{"access", func(r *results.Result) string { return string(r.Pattern.Access) }},
	{"block_size", func(r *results.Result) string { return itoa(r.Pattern.BlockSize) }},
	{"read_pct", func(r *results.Result) string { return itoa(r.Pattern.ReadPct) }},
	{"queue_depth", func(r *results.Result) string { return itoa(r.Pattern.QueueDepth) }},
	{"jobs", func(r *results.Result) string { return itoa(r.Pattern.Jobs) }},
	{"started_at", func(r *results.Result) string { return r.StartedAt }},
	{"duration_ns", func(r *results.Result) string { return itoa(r.DurationNS) }},
	{"engine", func(r *results.Result) string { return r.Engine }},
	{"ramp_ns", func(r *results.Result) string { return itoa(r.RampNS) }},
	{"total_ios", func(r *results.Result) string { return utoa(r.Total.IOs) }},
	{"total_bytes", func(r *results.Result) string { return utoa(r.Total.Bytes) }},
	{"total_iops", func(r *results.Result) string { return ftoa(r.Total.IOPS) }},
	{"total_mib_per_s", func(r *results.Result) string { return ftoa(r.Total.MiBPerS) }},
	{"cpu_user_pct", func(r *results.Result) string { return ftoa(r.CPU.UserPct) }},
	{"cpu_sys_pct", func(r *results.Result) string { return ftoa(r.CPU.SysPct) }},
	{"device_ios", func(r *results.Result) string { return uncounted(r, utoa(r.Device.IOs)) }},
	{"device_util_pct", func(r *results.Result) string { return uncounted(r, ftoa(r.Device.UtilPct)) }},
	{"completed_reads", func(r *results.Result) string { return utoa(r.Completed.Reads) }},
	{"completed_writes", func(r *results.Result) string { return utoa(r.Completed.Writes) }},
	{"timeline_iops", func(r *results.Result) string {
		s := make([]string, len(r.TimelineIOPS))
		for i, v := range r.TimelineIOPS {
			s[i] = ftoa(v)
		}
		return strings.Join(s, " ")
	}},
	{"error", func(r *results.Result) string {
		if r.Error == nil {
			return ""
		}
		return r.Error.Error()
	}},
}

// csvColumn is one column of the long form.
type csvColumn struct {
	name string
	get  func(r *results.Result) string
}

func init() {
	for _, dir := range []string{"read", "write"} {
		d := func(r *results.Result) *results.DirStats {
			if dir == "read" {
				return &r.Read
			}
			return &r.Write
		}
		csvColumns = append(csvColumns, []csvColumn{
			{dir + "_ios", func(r *results.Result) string { return utoa(d(r).IOs) }},
			{dir + "_bytes", func(r *results.Result) string { return utoa(d(r).Bytes) }},
			{dir + "_iops", func(r *results.Result) string { return ftoa(d(r).IOPS) }},
			{dir + "_mib_per_s", func(r *results.Result) string { return ftoa(d(r).MiBPerS) }},
		}...)
		csvColumns = append(csvColumns, latencyColumns(dir, func(r *results.Result) *results.Latency {
			if d(r).IOs == 0 {
				return nil
			}
			return &d(r).LatNS
		})...)
	}
	// Last, so that the columns of files written before total.lat_ns keep
	// their positions for scripts that read them by index.
	csvColumns = append(csvColumns, latencyColumns("total", func(r *results.Result) *results.Latency {
		if r.Total.IOs == 0 {
			return nil
		}
		return r.Total.LatNS
	})...)
	// How each window ended, and which percentiles rest on too few I/Os:
	// appended after everything else, for the same reason.
	csvColumns = append(csvColumns,
		csvColumn{"stop", func(r *results.Result) string { return r.Stop }},
		csvColumn{"rounds", func(r *results.Result) string { return itoa(r.Rounds) }},
		csvColumn{"ci_pct", func(r *results.Result) string {
			if r.CIPct == nil {
				return ""
			}
			return ftoa(*r.CIPct)
		}},
		csvColumn{"restarts", func(r *results.Result) string { return itoa(r.Restarts) }},
		csvColumn{"read_lat_low_confidence", func(r *results.Result) string { return lowConfidence(&r.Read.LatNS, r.Read.IOs) }},
		csvColumn{"write_lat_low_confidence", func(r *results.Result) string { return lowConfidence(&r.Write.LatNS, r.Write.IOs) }},
		csvColumn{"total_lat_low_confidence", func(r *results.Result) string { return lowConfidence(r.Total.LatNS, r.Total.IOs) }},
	)
	// An open-loop result's schedule and response time (both directions
	// merged: rate_response_lat_*), after every column before them for the
	// same reason; empty in a closed-loop result's row.
	rate := func(get func(s *results.RateStats) string) func(r *results.Result) string {
		return func(r *results.Result) string {
			if r.Rate == nil {
				return ""
			}
			return get(r.Rate)
		}
	}
	csvColumns = append(csvColumns,
		csvColumn{"rate_arrival", rate(func(s *results.RateStats) string { return s.Arrival })},
		csvColumn{"rate_target_iops", rate(func(s *results.RateStats) string { return ftoa(s.TargetIOPS) })},
		csvColumn{"rate_scheduled_iops", rate(func(s *results.RateStats) string { return ftoa(s.ScheduledIOPS) })},
		csvColumn{"rate_achieved_iops", rate(func(s *results.RateStats) string { return ftoa(s.AchievedIOPS) })},
		csvColumn{"rate_sustained", rate(func(s *results.RateStats) string { return strconv.FormatBool(s.Sustained) })},
		csvColumn{"rate_lateness_p99_ns", rate(func(s *results.RateStats) string { return utoa(s.LatenessNS.P99) })},
		csvColumn{"rate_late_ios", rate(func(s *results.RateStats) string { return utoa(s.LateIOs) })},
		csvColumn{"rate_max_backlog", rate(func(s *results.RateStats) string { return utoa(s.MaxBacklog) })},
		csvColumn{"rate_backlog_at_end", rate(func(s *results.RateStats) string { return utoa(s.BacklogAtEnd) })},
	)
	csvColumns = append(csvColumns, latencyColumns("rate_response", func(r *results.Result) *results.Latency { return r.Total.ResponseLatNS })...)
	// A durable-write cell's mode, syncs and the disk's flushes, last for
	// the same reason; empty where there are none.
	syncs := func(get func(s *results.SyncStats) uint64) func(r *results.Result) string {
		return func(r *results.Result) string {
			if r.Syncs == nil {
				return ""
			}
			return utoa(get(r.Syncs))
		}
	}
	csvColumns = append(csvColumns,
		csvColumn{"sync", func(r *results.Result) string { return r.Pattern.Sync }},
		csvColumn{"syncs_submitted", syncs(func(s *results.SyncStats) uint64 { return s.Submitted })},
		csvColumn{"syncs_completed", syncs(func(s *results.SyncStats) uint64 { return s.Completed })},
		csvColumn{"syncs_failed", syncs(func(s *results.SyncStats) uint64 { return s.Failed })},
		csvColumn{"device_flushes", func(r *results.Result) string { return uncounted(r, utoa(r.Device.Flushes)) }},
	)
	csvColumns = append(csvColumns, latencyColumns("sync", func(r *results.Result) *results.Latency {
		if r.Syncs == nil {
			return nil
		}
		return &r.Syncs.LatNS
	})...)
	// The sentinels' mark, last for the same reason: "changed" (measured
	// on the changed device), "in_shift" (in the interval of a move),
	// empty where the cell is not marked.
	csvColumns = append(csvColumns, csvColumn{"device_changed", func(r *results.Result) string {
		switch m := r.DeviceChanged; {
		case m == nil:
			return ""
		case m.InShift:
			return "in_shift"
		}
		return "changed"
	}})
	// Then the burst's mark: "bursting" where a sentinel found the volume
	// above the baseline of the burst the sweep was told of.
	csvColumns = append(csvColumns, csvColumn{"bursting", func(r *results.Result) string {
		if r.Bursting != nil {
			return "bursting"
		}
		return ""
	}})
}

// lowConfidence lists the percentiles of l that rest on too few I/Os, as
// its file records them or, for a file written before it did, as the I/O
// count says.
func lowConfidence(l *results.Latency, ios uint64) string {
	if l == nil || ios == 0 {
		return ""
	}
	c := *l
	c.MarkConfidence(c.Samples(ios))
	return c.LowConfidence
}

// latencyColumns are prefix_lat_*_ns; their cells are empty where lat is
// nil, never 0: where the direction (or the pattern) did no I/O, as a
// latency of 0 ns would be a measurement and an empty sample has none, and
// where a file has no total.lat_ns (an older iomatrix, a fio import). The
// counts and rates of a direction without I/O stay 0: those are measured
// zeros, and the sums of columns stay right.
func latencyColumns(prefix string, lat func(r *results.Result) *results.Latency) []csvColumn {
	col := func(field string, get func(l *results.Latency) string) csvColumn {
		return csvColumn{prefix + "_lat_" + field + "_ns", func(r *results.Result) string {
			if l := lat(r); l != nil {
				return get(l)
			}
			return ""
		}}
	}
	return []csvColumn{
		col("min", func(l *results.Latency) string { return utoa(l.Min) }),
		col("mean", func(l *results.Latency) string { return ftoa(l.Mean) }),
		col("p50", func(l *results.Latency) string { return utoa(l.P50) }),
		col("p90", func(l *results.Latency) string { return utoa(l.P90) }),
		col("p99", func(l *results.Latency) string { return utoa(l.P99) }),
		col("p99.9", func(l *results.Latency) string { return utoa(l.P999) }),
		col("p99.99", func(l *results.Latency) string { return utoa(l.P9999) }),
		col("max", func(l *results.Latency) string { return utoa(l.Max) }),
	}
}

func itoa[T int | int64](v T) string { return strconv.FormatInt(int64(v), 10) }
func utoa(v uint64) string           { return strconv.FormatUint(v, 10) }
func ftoa(v float64) string          { return strconv.FormatFloat(v, 'f', -1, 64) }

// writeCSV emits one row per result (long form), or with Wide the matrix:
// per table a header row (title, columns) and its rows, tables separated by
// an empty row. Numbers are plain (no separators) so spreadsheets read them.
//
// A wide table with flagged cells keeps its cells numeric; it is followed
// by a flag table of the same shape, titled "<title>: marks", with the
// signs of each cell's flags ("~", "?", "*") exactly where the value
// table's cell has them, and a row per note that explains a sign used.
// Column and row labels line up, so the flags can be read off (or looked
// up) cell by cell.
func writeCSV(w io.Writer, doc *results.Document, o Options) error {
	cw := csv.NewWriter(w)
	if o.Wide {
		m := BuildMetric(doc.Results, metricOf(o))
		for i, t := range m.Tables {
			if i > 0 {
				cw.Write([]string{})
			}
			writeCSVTable(cw, t.Title, t, func(c *Cell) string { return ftoa(roundTo(c.Value, 2)) })
			if len(doc.Members) > 0 {
				// A fleet's spread: the tables of the fewest and the most.
				for _, end := range []struct {
					name string
					get  func(results.Spread) float64
				}{{"min", func(s results.Spread) float64 { return s.Min }}, {"max", func(s results.Spread) float64 { return s.Max }}} {
					cw.Write([]string{})
					writeCSVTable(cw, t.Title+": "+end.name+" across members", t, func(c *Cell) string {
						return ftoa(roundTo(end.get(c.Result.Fleet.Metrics[string(m.Metric)]), 2))
					})
				}
			}
			if flags := t.Flags(); flags != 0 {
				cw.Write([]string{})
				writeCSVTable(cw, t.Title+": marks", t, func(c *Cell) string { return c.Flags.Signs() })
				for _, note := range flags.Notes() {
					cw.Write([]string{note})
				}
			}
		}
		for _, c := range Curves(doc.Results) {
			cw.Write([]string{})
			writeCSVCurve(cw, c)
		}
		if lines := DriftLines(doc); len(lines) > 0 {
			cw.Write([]string{})
			for _, l := range lines {
				cw.Write([]string{l})
			}
		}
		if len(doc.Members) > 0 {
			header, rows := membersRows(Members(doc, m.Metric, outlierOf(o)), m.Metric)
			cw.Write([]string{})
			cw.Write(header)
			for _, r := range rows {
				cw.Write(r)
			}
			cw.Write([]string{membersNote(m.Metric, outlierOf(o))})
		}
		cw.Flush()
		return cw.Error()
	}
	header, rows := longForm(doc)
	cw.Write(header)
	for _, r := range rows {
		cw.Write(r)
	}
	cw.Flush()
	return cw.Error()
}

// longForm is a document as the rows of a table, one per result, with
// csvColumns. A fleet's long form is its members' results, each row led
// by the member's label (a "member" column): the rows a spreadsheet
// pivots.
func longForm(doc *results.Document) (header []string, rows [][]string) {
	var lead []string
	if len(doc.Members) > 0 {
		lead = []string{"member"}
	}
	header = slices.Clone(lead)
	for _, c := range csvColumns {
		header = append(header, c.name)
	}
	row := func(label []string, r *results.Result) {
		out := slices.Clone(label)
		for _, c := range csvColumns {
			out = append(out, c.get(r))
		}
		rows = append(rows, out)
	}
	if len(doc.Members) == 0 {
		for i := range doc.Results {
			row(nil, &doc.Results[i])
		}
		return header, rows
	}
	for _, mem := range doc.Members {
		for i := range mem.Results {
			row([]string{mem.Label}, &mem.Results[i])
		}
	}
	return header, rows
}

// writeCSVTable writes a header row (title, columns) and a row per table
// row; a missing cell is empty.
func writeCSVTable(cw *csv.Writer, title string, t Table, text func(*Cell) string) {
	cw.Write(append([]string{title}, t.Cols...))
	for r, label := range t.Rows {
		row := []string{label}
		for _, cell := range t.Cells[r] {
			v := ""
			if cell != nil {
				v = text(cell)
			}
			row = append(row, v)
		}
		cw.Write(row)
	}
}

func roundTo(v float64, decimals int) float64 {
	p, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', decimals, 64), 64)
	return p
}

// writeCSVCurve writes a load–latency curve as the wide form's tables
// are: a header row led by its title, a row per offered load (the
// closed-loop maximum last, when there is one), plain numbers, then the
// knee and the notes a row each. A latency that is service time, or
// flagged, keeps its number; the marks column holds its signs.
func writeCSVCurve(cw *csv.Writer, c Curve) {
	cw.Write([]string{c.curveTitle(), "of_max_pct", "achieved_iops", "sustained", "p50_us", "p99_us", "p99.9_us", "latency", "knee", "marks"})
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return ftoa(roundTo(v, 2))
	}
	share := func(v float64) string {
		if c.Max == nil || c.Max.Total.IOPS <= 0 {
			return ""
		}
		return num(100 * v / c.Max.Total.IOPS)
	}
	for i, pt := range c.Points {
		kind, knee := "response", ""
		if pt.Service {
			kind = "service"
		}
		if i == c.Knee {
			knee = "knee"
		}
		cw.Write([]string{num(pt.Offered), share(pt.Offered), num(pt.Achieved), sustainedCSV(pt),
			num(pt.P50), num(pt.P99), num(pt.P999), kind, knee, (pt.Flags[0] | pt.Flags[1] | pt.Flags[2]).Signs()})
	}
	if m := c.Max; m != nil {
		row := []string{"closed loop QD" + itoa(m.Pattern.QueueDepth), "100", num(m.Total.IOPS), ""}
		var f Flags
		for _, metric := range []Metric{LatP50, LatP99, LatP999} {
			if metric.Absent(*m) {
				row = append(row, "")
				continue
			}
			v, mf := metric.Measure(*m)
			f |= mf
			row = append(row, num(v))
		}
		cw.Write(append(row, "service", "", f.Signs()))
	}
	for _, note := range c.curveNotes() {
		cw.Write([]string{note})
	}
}

// sustainedCSV is true or false, or empty for a result that records no
// schedule.
func sustainedCSV(pt CurvePoint) string {
	if !pt.Scheduled {
		return ""
	}
	return strconv.FormatBool(pt.Sustained)
}

// uncounted is v, or empty where the disk did not count the cell's I/O
// (DevStats.Uncounted): not a measured zero.
func uncounted(r *results.Result, v string) string {
	if r.Device.Uncounted != "" {
		return ""
	}
	return v
}
