package report

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Metric selects what a cell shows.
type Metric string

// The metrics. Latency is in microseconds and comes from total.lat_ns, the
// summary of the merged read and write histogram: for a mixed pattern the
// only true percentile of what a client issuing that mix sees. A result
// without it (an older results file, a fio import) falls back on its
// directions: a single-direction pattern's figure is exact; a mixed one gets
// the I/O-weighted mean of the read and the write figure, which is not a
// percentile of anything, so its cell is marked approximate (FlagApprox)
// and every output says so (ApproxMark, ApproxNote).
const (
	IOPS     Metric = "iops"
	MiBps    Metric = "mibps"
	LatMean  Metric = "lat-mean"
	LatP50   Metric = "lat-p50"
	LatP99   Metric = "lat-p99"
	LatP999  Metric = "lat-p99.9"
	DefaultM        = IOPS
)

// Metrics lists the valid metric names in display order.
var Metrics = []Metric{IOPS, MiBps, LatMean, LatP50, LatP99, LatP999}

// ErrBadMetric is returned for unknown metric names.
var ErrBadMetric = errors.New("unknown metric")

// ParseMetric checks a metric name: one of Metrics, or a bound metric
// "iops@p99<2ms" (see Bounded).
func ParseMetric(s string) (Metric, error) {
	if rest, ok := strings.CutPrefix(s, "iops@"); ok {
		key, val, _ := strings.Cut(rest, "<")
		b, err := ParseBound(key, val)
		if err != nil {
			return "", fmt.Errorf("%w %q: %w (e.g. iops@p99<2ms)", ErrBadMetric, s, err)
		}
		return Metric("iops@" + b.String()), nil
	}
	for _, m := range Metrics {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Metrics))
	for i, m := range Metrics {
		names[i] = string(m)
	}
	return "", fmt.Errorf("%w %q (valid: %s, iops@p99<DURATION)", ErrBadMetric, s, strings.Join(names, ", "))
}

// Bounded is the latency bound of a metric "iops@p99<2ms": per row, the
// highest measured IOPS whose latency figure stays under the bound (see
// BuildMetric). ok is false for the other metrics.
func (m Metric) Bounded() (b Bound, ok bool) {
	rest, ok := strings.CutPrefix(string(m), "iops@")
	if !ok {
		return Bound{}, false
	}
	key, val, _ := strings.Cut(rest, "<")
	b, err := ParseBound(key, val)
	return b, err == nil
}

// under tells whether a result's latency figure proves the bound: there,
// below it, and neither approximate nor resting on too few I/Os.
func (b Bound) under(r results.Result) bool {
	v, f := b.Metric.Measure(r)
	return !b.Metric.Absent(r) && !f.Has(FlagApprox) && !f.Has(FlagFewIOs) && v < float64(b.Max)/float64(time.Microsecond)
}

// Absent tells whether a result has no figure of the metric: the latency
// of a result that completed no I/O (an empty sample has no latency, and
// 0 µs would read as one), or of a fleet cell where no member did. Its
// IOPS and MiB/s are measured zeros, never absent.
func (m Metric) Absent(r results.Result) bool {
	if !m.LowerIsBetter() {
		return false
	}
	if r.Fleet != nil {
		_, ok := r.Fleet.Metrics[string(m)]
		return !ok
	}
	_, samples, _ := m.latency(r)
	return samples == 0
}

// Unit is the unit of the metric's values.
func (m Metric) Unit() string {
	if _, ok := m.Bounded(); ok {
		return "IOPS"
	}
	switch m {
	case IOPS:
		return "IOPS"
	case MiBps:
		return "MiB/s"
	}
	return "µs"
}

// LowerIsBetter tells whether smaller values are better: latencies are,
// rates are not.
func (m Metric) LowerIsBetter() bool {
	_, bounded := m.Bounded()
	return m != IOPS && m != MiBps && !bounded
}

// Title is the metric's name in table titles.
func (m Metric) Title() string {
	if b, ok := m.Bounded(); ok {
		return "best IOPS with " + b.String()
	}
	switch m {
	case IOPS:
		return "IOPS"
	case MiBps:
		return "MiB/s"
	case LatMean:
		return "mean latency (µs)"
	case LatP50:
		return "p50 latency (µs)"
	case LatP99:
		return "p99 latency (µs)"
	case LatP999:
		return "p99.9 latency (µs)"
	}
	return string(m)
}

// Value is the metric of one result.
func (m Metric) Value(r results.Result) float64 {
	v, _ := m.Measure(r)
	return v
}

// quantile is the percentile a latency metric shows, 0 for the others
// (and for p50, which any measured cell has enough I/Os for).
func (m Metric) quantile() float64 {
	switch m {
	case LatP99:
		return 99
	case LatP999:
		return 99.9
	}
	return 0
}

// Measure is the metric of one result and the flags its figure carries:
// approximate, a percentile on too few I/Os, a window that never
// converged. It is the one rule by which matrices, compare and the
// sweep's progress line read a result.
func (m Metric) Measure(r results.Result) (float64, Flags) {
	if _, ok := m.Bounded(); ok {
		return IOPS.Measure(r) // the bound picks the cells (BuildMetric)
	}
	if r.Fleet != nil {
		return fleetMeasure(r.Fleet, m)
	}
	var f Flags
	if r.Unsettled() {
		f |= FlagUnsettled
	}
	if r.DeviceChanged != nil {
		f |= FlagDeviceChanged
	}
	if r.Bursting != nil {
		f |= FlagBursting
	}
	switch m {
	case IOPS:
		return r.Total.IOPS, f
	case MiBps:
		return r.Total.MiBPerS, f
	}
	v, samples, approx := m.latency(r)
	if approx {
		f |= FlagApprox
	}
	if q := m.quantile(); q > 0 && samples > 0 && !results.Confident(q, samples) {
		f |= FlagFewIOs
	}
	return v, f
}

// latency is a latency metric of one result in µs, the number of I/Os it
// rests on (the fewer of the two directions for a stand-in), and whether
// it is the stand-in.
func (m Metric) latency(r results.Result) (v float64, samples uint64, approx bool) {
	pick := func(l results.Latency) float64 {
		switch m {
		case LatMean:
			return l.Mean
		case LatP50:
			return float64(l.P50)
		case LatP99:
			return float64(l.P99)
		case LatP999:
			return float64(l.P999)
		}
		return 0
	}
	rd, wr := float64(r.Read.IOs), float64(r.Write.IOs)
	switch {
	case r.Total.LatNS != nil:
		return pick(*r.Total.LatNS) / 1000, r.Total.LatNS.Samples(r.Total.IOs), false
	case rd+wr == 0:
		return 0, 0, false
	case wr == 0:
		return pick(r.Read.LatNS) / 1000, r.Read.LatNS.Samples(r.Read.IOs), false
	case rd == 0:
		return pick(r.Write.LatNS) / 1000, r.Write.LatNS.Samples(r.Write.IOs), false
	}
	samples = min(r.Read.LatNS.Samples(r.Read.IOs), r.Write.LatNS.Samples(r.Write.IOs))
	return (rd*pick(r.Read.LatNS) + wr*pick(r.Write.LatNS)) / (rd + wr) / 1000, samples, true
}

// Matrix is the pivoted view of a run: one table per block size for random
// I/O and one table for sequential I/O.
type Matrix struct {
	Metric Metric
	Tables []Table
}

// Table has rows and columns of cells; a nil cell was not measured, or
// has no figure of the metric (Metric.Absent): never shown as 0.
type Table struct {
	Title     string
	Access    results.Access
	BlockSize int64 // random tables only
	Rows      []string
	Cols      []string
	Cells     [][]*Cell
}

// Cell is one measured pattern.
type Cell struct {
	Value  float64
	Result *results.Result
	// CDM marks the cells CrystalDiskMark reports for a disk: 4K random at
	// QD1 and QD32, 100 % and 0 % reads, one job.
	CDM bool
	// Flags mark a value that is not a plain figure (see Metric.Measure):
	// renderings must show it as such.
	Flags Flags
}

// Flags is every flag a cell of the table carries.
func (t Table) Flags() Flags {
	var f Flags
	for _, row := range t.Cells {
		for _, c := range row {
			if c != nil {
				f |= c.Flags
			}
		}
	}
	return f
}

// Flags is every flag a cell of the matrix carries.
func (m Matrix) Flags() Flags {
	var f Flags
	for _, t := range m.Tables {
		f |= t.Flags()
	}
	return f
}

// Build pivots results into IOPS tables.
func Build(rs []results.Result) Matrix { return BuildMetric(rs, IOPS) }

// BuildMetric pivots results into tables of the given metric.
//
// Random results: one table per block size; rows are read % (descending),
// columns queue depths (ascending). When any result of a block size runs
// more than one job, its columns become QD×jobs pairs, ordered by the I/Os
// in flight (QD × jobs), so a thread-scaling profile reads left to right.
// Sequential results form one table: rows read %, columns block size × QD
// (× jobs). Open-loop results are left out: they are Curves.
func BuildMetric(rs []results.Result, m Metric) Matrix {
	if b, ok := m.Bounded(); ok {
		return bestUnder(BuildMetric(rs, IOPS), m, b)
	}
	mx := Matrix{Metric: m}
	groups := map[shape][]*results.Result{}
	var seq []*results.Result
	for i := range rs {
		r := &rs[i]
		if OpenLoop(*r) {
			// A rate is no queue depth: in a QD column the cell would
			// read as a closed-loop figure, and two rates of one shape
			// would take the same cell. The load–latency curves show
			// these (Curves).
			continue
		}
		if r.Pattern.Access == results.Sequential {
			seq = append(seq, r)
			continue
		}
		k := shape{r.Pattern.BlockSize, r.Pattern.BSSplit, r.Pattern.Distribution, content(r.Pattern), r.Pattern.Sync}
		groups[k] = append(groups[k], r)
	}
	shapes := make([]shape, 0, len(groups))
	for k := range groups {
		shapes = append(shapes, k)
	}
	slices.SortFunc(shapes, func(a, b shape) int {
		return cmp.Or(cmp.Compare(a.bs, b.bs), cmp.Compare(a.mix, b.mix), cmp.Compare(a.dist, b.dist), cmp.Compare(a.content, b.content),
			cmp.Compare(a.sync, b.sync))
	})
	for _, sh := range shapes {
		rs, bs := groups[sh], sh.bs
		multi := slices.ContainsFunc(rs, func(r *results.Result) bool { return r.Pattern.Jobs > 1 })
		t := pivot(fmt.Sprintf("random %s %s", sh, m.Title()), rs, m, func(p results.Pattern) colKey {
			return colKey{inflight: p.QueueDepth * p.Jobs, qd: p.QueueDepth, jobs: p.Jobs}
		}, func(k colKey) string {
			if multi {
				return fmt.Sprintf("QD%d×%d", k.qd, k.jobs)
			}
			return fmt.Sprintf("QD%d", k.qd)
		})
		t.Access, t.BlockSize = results.Random, bs
		mx.Tables = append(mx.Tables, t)
	}
	if len(seq) > 0 {
		t := pivot("sequential "+m.Title(), seq, m, func(p results.Pattern) colKey {
			return colKey{bs: p.BlockSize, qd: p.QueueDepth, jobs: p.Jobs, mix: p.BSSplit, content: content(p), sync: p.Sync}
		}, func(k colKey) string {
			size := strings.ToUpper(results.ShortSize(k.bs))
			if k.mix != "" {
				size = k.mix
			}
			s := fmt.Sprintf("%s QD%d", size, k.qd)
			if k.jobs > 1 {
				s += fmt.Sprintf("×%d", k.jobs)
			}
			if k.content != "" {
				s += " (" + k.content + ")"
			}
			if k.sync != "" {
				s += " " + k.sync
			}
			return s
		})
		t.Access = results.Sequential
		mx.Tables = append(mx.Tables, t)
	}
	return mx
}

// bestUnder reduces each row of an IOPS matrix to its best cell whose
// latency proves the bound: one column, and no cell where none does
// (the title says so). A fleet cell is judged on its median member's
// figures.
func bestUnder(iops Matrix, m Metric, b Bound) Matrix {
	mx := Matrix{Metric: m}
	col := "best with " + b.String()
	for _, t := range iops.Tables {
		out := Table{Title: strings.TrimSuffix(t.Title, IOPS.Title()) + m.Title() + " (empty: no cell proves it)",
			Access: t.Access, BlockSize: t.BlockSize, Rows: t.Rows, Cols: []string{col}}
		for _, row := range t.Cells {
			var best *Cell
			for _, c := range row {
				if c != nil && b.under(*c.Result) && (best == nil || c.Value > best.Value) {
					best = c
				}
			}
			out.Cells = append(out.Cells, []*Cell{best})
		}
		mx.Tables = append(mx.Tables, out)
	}
	return mx
}

// shape is what one random table holds: a block size, or a block-size
// mix (whose block size is its largest), at one offset distribution and
// one durable-write mode. A mix, a skew or durable writes are another
// workload than the plain size's: a table of their own, never cells of
// the plain one. So is data that compresses or repeats (content).
type shape struct {
	bs                       int64
	mix, dist, content, sync string
}

func (s shape) String() string {
	t := units.FormatSize(s.bs)
	if s.mix != "" {
		t = s.mix
	}
	if s.dist != "" {
		t += " " + s.dist
	}
	if s.content != "" {
		t += " " + s.content
	}
	if s.sync != "" {
		t += " " + s.sync
	}
	return t
}

// content is what a pattern's writes carry, when it is not random,
// unique data: "compress 50 %".
func content(p results.Pattern) string {
	if p.Compress == 0 && p.Dedupe == 0 {
		return ""
	}
	return p.Content()
}

type colKey struct {
	bs       int64
	mix      string // sequential: a block-size mix of largest size bs
	content  string // sequential: data that compresses or repeats
	inflight int
	qd       int
	jobs     int
	sync     string // sequential: a durable-write mode
}

func compareCols(a, b colKey) int {
	return cmp.Or(cmp.Compare(a.bs, b.bs), cmp.Compare(a.mix, b.mix), cmp.Compare(a.inflight, b.inflight), cmp.Compare(a.qd, b.qd),
		cmp.Compare(a.jobs, b.jobs), cmp.Compare(a.content, b.content), cmp.Compare(a.sync, b.sync))
}

// ReadLabel names a row.
func ReadLabel(pct int) string {
	switch pct {
	case 100:
		return "read"
	case 0:
		return "write"
	}
	return fmt.Sprintf("%d%% read", pct)
}

func isCDM(p results.Pattern) bool {
	return p.Access == results.Random && p.BlockSize == 4096 && p.Jobs == 1 &&
		(p.QueueDepth == 1 || p.QueueDepth == 32) && (p.ReadPct == 100 || p.ReadPct == 0)
}

func pivot(title string, rs []*results.Result, m Metric, key func(results.Pattern) colKey, label func(colKey) string) Table {
	var reads []int
	var cols []colKey
	for _, r := range rs {
		if !slices.Contains(reads, r.Pattern.ReadPct) {
			reads = append(reads, r.Pattern.ReadPct)
		}
		if k := key(r.Pattern); !slices.Contains(cols, k) {
			cols = append(cols, k)
		}
	}
	slices.SortFunc(cols, compareCols)
	slices.Sort(reads)
	slices.Reverse(reads)
	t := Table{Title: title}
	for _, rd := range reads {
		t.Rows = append(t.Rows, ReadLabel(rd))
	}
	for _, c := range cols {
		t.Cols = append(t.Cols, label(c))
	}
	t.Cells = make([][]*Cell, len(reads))
	for i := range t.Cells {
		t.Cells[i] = make([]*Cell, len(cols))
	}
	for _, r := range rs {
		if m.Absent(*r) {
			continue
		}
		v, flags := m.Measure(*r)
		t.Cells[slices.Index(reads, r.Pattern.ReadPct)][slices.Index(cols, key(r.Pattern))] = &Cell{
			Value: v, Result: r, CDM: isCDM(r.Pattern), Flags: flags,
		}
	}
	return t
}
