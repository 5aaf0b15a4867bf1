package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/iotest"
)

// csvColumns flattens a result: every field of the results schema, one
// column each, so a spreadsheet or a script needs no JSON.
var csvColumns = []struct {
	name string
	get  func(r *iotest.Result) string
}{
	{"name", func(r *iotest.Result) string { return r.Name }},
	{"access", func(r *iotest.Result) string { return string(r.Pattern.Access) }},
	{"block_size", func(r *iotest.Result) string { return itoa(r.Pattern.BlockSize) }},
	{"read_pct", func(r *iotest.Result) string { return itoa(r.Pattern.ReadPct) }},
	{"queue_depth", func(r *iotest.Result) string { return itoa(r.Pattern.QueueDepth) }},
	{"jobs", func(r *iotest.Result) string { return itoa(r.Pattern.Jobs) }},
	{"started_at", func(r *iotest.Result) string { return r.StartedAt }},
	{"duration_ns", func(r *iotest.Result) string { return itoa(r.DurationNS) }},
	{"engine", func(r *iotest.Result) string { return r.Engine }},
	{"ramp_ns", func(r *iotest.Result) string { return itoa(r.RampNS) }},
	{"total_ios", func(r *iotest.Result) string { return utoa(r.Total.IOs) }},
	{"total_bytes", func(r *iotest.Result) string { return utoa(r.Total.Bytes) }},
	{"total_iops", func(r *iotest.Result) string { return ftoa(r.Total.IOPS) }},
	{"total_mib_per_s", func(r *iotest.Result) string { return ftoa(r.Total.MiBPerS) }},
	{"cpu_user_pct", func(r *iotest.Result) string { return ftoa(r.CPU.UserPct) }},
	{"cpu_sys_pct", func(r *iotest.Result) string { return ftoa(r.CPU.SysPct) }},
	{"device_ios", func(r *iotest.Result) string { return utoa(r.Device.IOs) }},
	{"device_util_pct", func(r *iotest.Result) string { return ftoa(r.Device.UtilPct) }},
	{"completed_reads", func(r *iotest.Result) string { return utoa(r.Completed.Reads) }},
	{"completed_writes", func(r *iotest.Result) string { return utoa(r.Completed.Writes) }},
	{"timeline_iops", func(r *iotest.Result) string {
		s := make([]string, len(r.TimelineIOPS))
		for i, v := range r.TimelineIOPS {
			s[i] = ftoa(v)
		}
		return strings.Join(s, " ")
	}},
	{"error", func(r *iotest.Result) string {
		if r.Error == nil {
			return ""
		}
		return r.Error.Error()
	}},
}

func init() {
	for _, dir := range []string{"read", "write"} {
		d := func(r *iotest.Result) *iotest.DirStats {
			if dir == "read" {
				return &r.Read
			}
			return &r.Write
		}
		csvColumns = append(csvColumns, []struct {
			name string
			get  func(r *iotest.Result) string
		}{
			{dir + "_ios", func(r *iotest.Result) string { return utoa(d(r).IOs) }},
			{dir + "_bytes", func(r *iotest.Result) string { return utoa(d(r).Bytes) }},
			{dir + "_iops", func(r *iotest.Result) string { return ftoa(d(r).IOPS) }},
			{dir + "_mib_per_s", func(r *iotest.Result) string { return ftoa(d(r).MiBPerS) }},
			{dir + "_lat_min_ns", func(r *iotest.Result) string { return utoa(d(r).LatNS.Min) }},
			{dir + "_lat_mean_ns", func(r *iotest.Result) string { return ftoa(d(r).LatNS.Mean) }},
			{dir + "_lat_p50_ns", func(r *iotest.Result) string { return utoa(d(r).LatNS.P50) }},
			{dir + "_lat_p90_ns", func(r *iotest.Result) string { return utoa(d(r).LatNS.P90) }},
			{dir + "_lat_p99_ns", func(r *iotest.Result) string { return utoa(d(r).LatNS.P99) }},
			{dir + "_lat_p99.9_ns", func(r *iotest.Result) string { return utoa(d(r).LatNS.P999) }},
			{dir + "_lat_p99.99_ns", func(r *iotest.Result) string { return utoa(d(r).LatNS.P9999) }},
			{dir + "_lat_max_ns", func(r *iotest.Result) string { return utoa(d(r).LatNS.Max) }},
		}...)
	}
}

func itoa[T int | int64](v T) string { return strconv.FormatInt(int64(v), 10) }
func utoa(v uint64) string           { return strconv.FormatUint(v, 10) }
func ftoa(v float64) string          { return strconv.FormatFloat(v, 'f', -1, 64) }

// writeCSV emits one row per result (long form), or with Wide the matrix:
// per table a header row (title, columns) and its rows, tables separated by
// an empty row. Numbers are plain (no separators) so spreadsheets read them.
func writeCSV(w io.Writer, doc *iotest.Document, o Options) error {
	cw := csv.NewWriter(w)
	if o.Wide {
		m := BuildMetric(doc.Results, metricOf(o))
		for i, t := range m.Tables {
			if i > 0 {
				cw.Write([]string{})
			}
			cw.Write(append([]string{t.Title}, t.Cols...))
			for r, label := range t.Rows {
				row := []string{label}
				for c := range t.Cols {
					v := ""
					if cell := t.Cells[r][c]; cell != nil {
						v = ftoa(roundTo(cell.Value, 2))
					}
					row = append(row, v)
				}
				cw.Write(row)
			}
		}
		cw.Flush()
		return cw.Error()
	}
	header := make([]string, len(csvColumns))
	for i, c := range csvColumns {
		header[i] = c.name
	}
	cw.Write(header)
	for i := range doc.Results {
		row := make([]string, len(csvColumns))
		for j, c := range csvColumns {
			row[j] = c.get(&doc.Results[i])
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

func roundTo(v float64, decimals int) float64 {
	p, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', decimals, 64), 64)
	return p
}
