package observe

import (
	"math"
	"slices"
	"time"

	"github.com/iomatrix/iomatrix/results"
)

// A series accumulates one source's intervals: the last window of them at
// full resolution, every minute of the observation as the sum of its
// intervals, the totals, a histogram of each figure's per-interval rates
// (the per-second percentiles of a week cannot be kept value by value),
// the size mix, and the busiest hour so far. Add is called once per
// interval, from one goroutine.
type series struct {
	name, kind, device string
	layout             *layout
	// window is how far back the document's per-interval timeline
	// reaches; keep how far back memory does: at least an hour and a
	// minute, so that the hour a minute's end closes still has all its
	// intervals, the first one included.
	window, keep time.Duration
	start        time.Time // the observation's, for the busiest hour's times

	kept     []interval // ascending from head; those older than keep dropped
	head     int
	dropped  bool     // some intervals left memory
	mins     minutes  // closed minutes, by column
	cur      interval // the open minute
	curIdx   int64
	curUsed  bool
	totals   []uint64
	observed int64         // µs covered by intervals
	lastAt   time.Duration // the last reading's offset: the next interval starts there
	spread   time.Duration // the widest reading window (timed)
	count    int

	hist []logHist // per figure (layout.figures), per-interval rates
	// perMinute caches the per-minute spreads, which change only when a
	// minute closes: sorting a week of minutes at every save would cost
	// more than all the sampling.
	minCache      results.TimelineCache // the closed minutes' encoding
	sortedMinutes [][]float64           // per figure, the closed minutes' rates sorted
	sizeMix       sizeMix               // every interval's I/Os by average size
	busiest       *results.BusiestHour
	bestIOs       float64 // the busiest hour's mean I/O rate
}

// interval is one interval's (or one minute's) counter increases.
type interval struct {
	endMS, elapsedUS int64
	c                []uint64
}

// A layout names a source kind's counters and where its figures come
// from.
type layout struct {
	counters []string
	// Indices of the read and write I/O counts and bytes; -1 in a layout
	// of stall times alone (the host's pressure), which has no I/Os.
	rios, wios, rbytes, wbytes int
	// extra figures (mean rates) beyond the five every series of I/Os
	// has.
	extra []figure
	// device: the counters for iostat's queue, utilization and waits.
	device bool
	// stall is the index of the some-stall time, in a layout that has
	// one; -1 otherwise.
	stall int
	figs  []figure // built once: figures()
}

// figure is a named rate computed from an interval's counters.
type figure struct {
	name string
	of   func(c []uint64) float64 // per interval, before dividing by time
	// share: the figure is a share of the interval's time, in percent,
	// which cannot exceed 100 (see rate).
	share bool
}

// rate is the figure over an interval (or a sum of them) secs long.
// A share of time is held to 100 %: the kernel's clock and the
// reading's stamp (the middle of its window, see Observer.timed) differ
// by up to half a read's window at each end, which may put a little
// more stall in an interval than it lasted.
func (f figure) rate(c []uint64, secs float64) float64 {
	r := f.of(c) / secs
	if f.share {
		r = min(r, 100)
	}
	return r
}

// The figures every series of I/Os has: I/Os per second by direction
// and both, and KiB per second by direction.
func (l *layout) figures() []figure {
	if l.figs != nil {
		return l.figs
	}
	var f []figure
	if l.io() {
		f = []figure{
			{name: "reads", of: func(c []uint64) float64 { return float64(c[l.rios]) }},
			{name: "writes", of: func(c []uint64) float64 { return float64(c[l.wios]) }},
			{name: "ios", of: func(c []uint64) float64 { return float64(c[l.rios] + c[l.wios]) }},
			{name: "rkb", of: func(c []uint64) float64 { return float64(c[l.rbytes]) / 1024 }},
			{name: "wkb", of: func(c []uint64) float64 { return float64(c[l.wbytes]) / 1024 }},
		}
	}
	l.figs = append(f, l.extra...)
	return l.figs
}

// io tells whether the layout counts I/Os.
func (l *layout) io() bool { return l.rios >= 0 }

// activity is what ranks an interval (or an hour) among others for the
// busiest hour: its I/Os, or for a layout without them its stall time.
func (l *layout) activity(c []uint64) uint64 {
	if l.io() {
		return c[l.rios] + c[l.wios]
	}
	if l.stall >= 0 {
		return c[l.stall]
	}
	return 0
}

func (l *layout) index(name string) int {
	return slices.Index(l.counters, name)
}

func counterFigure(l *layout, name, counter string, scale float64) figure {
	i := l.index(counter)
	return figure{name: name, of: func(c []uint64) float64 { return float64(c[i]) * scale }}
}

// The layouts of the kinds of source. The device's counters are
// /proc/diskstats' (sectors turned into bytes); the cgroup's io.stat's
// (v1's serviced files give the same six), and on v2 its io.pressure's
// stall times where the kernel keeps them; the host's pressure
// /proc/pressure/io's; the database's its own.
var (
	deviceLayout = newDeviceLayout()
	cgroupLayout = newLayout([]string{"rios", "wios", "rbytes", "wbytes", "dios", "dbytes"},
		"rios", "wios", "rbytes", "wbytes", false)
	// A cgroup's io.pressure has both lines; one with some alone is
	// read, never given a full stall of zero.
	cgroupStallLayout     = withStall(cgroupLayout, true)
	cgroupSomeStallLayout = withStall(cgroupLayout, false)
	hostStallLayout       = withStall(nil, true)
	hostSomeStallLayout   = withStall(nil, false)
	databaseLayout        = newDatabaseLayout()
)

func newLayout(counters []string, r, w, rb, wb string, device bool) *layout {
	l := &layout{counters: counters, device: device, stall: -1}
	l.rios, l.wios, l.rbytes, l.wbytes = l.index(r), l.index(w), l.index(rb), l.index(wb)
	return l
}

// newDeviceLayout is diskstats' counters, with the flushes the device
// was asked for per second (a durable write's cost to a device that
// caches writes).
func newDeviceLayout() *layout {
	l := newLayout([]string{"rios", "wios", "rbytes", "wbytes", "rmerges", "wmerges",
		"rticks_ms", "wticks_ms", "io_ticks_ms", "queue_ms", "dios", "dbytes", "dticks_ms", "fios", "fticks_ms"},
		"rios", "wios", "rbytes", "wbytes", true)
	l.extra = []figure{counterFigure(l, "flushes", "fios", 1)}
	return l
}

// withStall is base's counters (none: the host's pressure alone)
// followed by the stall times, with the stall figures after base's.
func withStall(base *layout, full bool) *layout {
	counters := []string{results.CounterStallSome}
	if full {
		counters = append(counters, results.CounterStallFull)
	}
	l := &layout{rios: -1, wios: -1, rbytes: -1, wbytes: -1}
	if base != nil {
		*l = layout{counters: base.counters, rios: base.rios, wios: base.wios, rbytes: base.rbytes, wbytes: base.wbytes,
			device: base.device, extra: slices.Clone(base.extra)}
	}
	l.counters = append(slices.Clip(l.counters), counters...)
	l.stall = l.index(results.CounterStallSome)
	l.extra = append(l.extra, stallFigure(l, results.FigureStallSome, results.CounterStallSome))
	if full {
		l.extra = append(l.extra, stallFigure(l, results.FigureStallFull, results.CounterStallFull))
	}
	return l
}

// stallFigure is a stall time's share of the interval: µs over 1e4 are
// the hundredths of a second, which over the interval's seconds are the
// percentage of its time.
func stallFigure(l *layout, name, counter string) figure {
	i := l.index(counter)
	return figure{name: name, of: func(c []uint64) float64 { return float64(c[i]) / 1e4 }, share: true}
}

func newDatabaseLayout() *layout {
	l := newLayout(DatabaseCounters, "data_reads", "data_writes", "data_read", "data_written", false)
	l.extra = []figure{
		counterFigure(l, "fsyncs", "data_fsyncs", 1),
		counterFigure(l, "dblwr_writes", "dblwr_writes", 1),
		counterFigure(l, "log_kb", "os_log_written", 1.0/1024),
		// InnoDB's fsyncs: the redo log's at commit and the data files'
		// after their writes, each a write that had to reach stable
		// storage before the server went on.
		counterFigure(l, "durable_writes", "data_fsyncs", 1),
	}
	return l
}

func newSeries(name, kind, device string, l *layout, window time.Duration, start time.Time) *series {
	return &series{name: name, kind: kind, device: device, layout: l, window: window, start: start,
		keep:   max(window, time.Hour) + time.Minute,
		totals: make([]uint64, len(l.counters)), hist: make([]logHist, len(l.figures()))}
}

const minuteMS = 60_000

// add records one interval, ending endMS after the observation's start
// and elapsedUS long on the monotonic clock, with the counters'
// increases c (not kept: copied).
func (s *series) add(endMS, elapsedUS int64, c []uint64) {
	iv := interval{endMS: endMS, elapsedUS: elapsedUS, c: slices.Clone(c)}
	idx := (endMS - 1) / minuteMS
	if s.curUsed && idx != s.curIdx {
		s.closeMinute()
	}
	if !s.curUsed {
		s.cur = interval{c: make([]uint64, len(c))}
		s.curIdx, s.curUsed = idx, true
	}
	s.cur.endMS = endMS
	s.cur.elapsedUS += elapsedUS
	for i, v := range c {
		s.cur.c[i] += v
		s.totals[i] += v
	}
	s.observed += elapsedUS
	s.count++
	secs := float64(elapsedUS) / 1e6
	if secs > 0 {
		for i, f := range s.layout.figures() {
			s.hist[i].add(f.rate(c, secs))
		}
	}
	s.sizeMix.add(s.layout, c)
	s.kept = append(s.kept, iv)
	cut := endMS - s.keep.Milliseconds()
	for s.kept[s.head].endMS <= cut {
		s.kept[s.head] = interval{}
		s.head++
		s.dropped = true
	}
	if s.head > 4096 && s.head > len(s.kept)/2 {
		s.kept = append(s.kept[:0], s.kept[s.head:]...)
		s.head = 0
	}
}

// closeMinute ends the open minute and judges whether the hour it ends is
// the busiest so far.
func (s *series) closeMinute() {
	s.mins.push(s.curIdx, s.cur)
	s.curUsed = false
	if s.sortedMinutes == nil {
		s.sortedMinutes = make([][]float64, len(s.layout.figures()))
	}
	if s.cur.elapsedUS > 0 {
		for i, f := range s.layout.figures() {
			r := f.rate(s.cur.c, float64(s.cur.elapsedUS)/1e6)
			j, _ := slices.BinarySearch(s.sortedMinutes[i], r)
			s.sortedMinutes[i] = slices.Insert(s.sortedMinutes[i], j, r)
		}
	}
	k := s.curIdx
	if k < 59 {
		return // no whole hour yet
	}
	first := s.mins.since(k - 59)
	sum := s.mins.sum(first, s.mins.len())
	if sum.elapsedUS == 0 {
		return
	}
	rate := float64(s.layout.activity(sum.c)) / (float64(sum.elapsedUS) / 1e6)
	if s.busiest != nil && rate <= s.bestIOs {
		return
	}
	s.bestIOs = rate
	s.busiest = s.hour(sum, (k-59)*minuteMS, sum.endMS, false)
}

// minutes are closed minutes column by column: a week of them is
// encoded and summed without an allocation per minute.
type minutes struct {
	idx, end, elapsed []int64 // each minute's index since the start, end, length
	cols              [][]uint64
}

func (m *minutes) len() int { return len(m.end) }

func (m *minutes) push(idx int64, iv interval) {
	if m.cols == nil {
		m.cols = make([][]uint64, len(iv.c))
	}
	m.idx, m.end, m.elapsed = append(m.idx, idx), append(m.end, iv.endMS), append(m.elapsed, iv.elapsedUS)
	for i, v := range iv.c {
		m.cols[i] = append(m.cols[i], v)
	}
}

// since is the first minute whose index is at least k.
func (m *minutes) since(k int64) int {
	i, _ := slices.BinarySearch(m.idx, k)
	return i
}

// sum adds minutes [from, to) into one interval (its end the last one's).
func (m *minutes) sum(from, to int) interval {
	out := interval{c: make([]uint64, len(m.cols))}
	for j := from; j < to; j++ {
		out.elapsedUS += m.elapsed[j]
		out.endMS = m.end[j]
	}
	for i, col := range m.cols {
		for _, v := range col[from:to] {
			out.c[i] += v
		}
	}
	return out
}

// within is the sum of the minutes ending in (startMS, endMS], the open
// one included.
func (s *series) within(startMS, endMS int64) interval {
	i, _ := slices.BinarySearch(s.mins.end, startMS+1)
	j, _ := slices.BinarySearch(s.mins.end, endMS+1)
	sum := s.mins.sum(i, j)
	if s.curUsed && s.cur.endMS > startMS && s.cur.endMS <= endMS {
		sum = sumOf([]interval{sum, s.cur}, len(s.layout.counters))
	}
	return sum
}

// hour summarizes a sum of minutes as an hour from startMS to endMS: its
// mean figures and read share from the minutes, its size mix from the
// intervals it holds that are still in memory (an hour just closed always
// is: memory keeps an hour and a minute).
func (s *series) hour(sum interval, startMS, endMS int64, whole bool) *results.BusiestHour {
	h := &results.BusiestHour{
		Start: s.at(startMS), End: s.at(endMS), StartMS: startMS, EndMS: endMS, Whole: whole,
		Mean: s.means(sum),
	}
	if ios := s.layout.activity(sum.c); s.layout.io() && ios > 0 {
		h.ReadShare = float64(sum.c[s.layout.rios]) / float64(ios)
	}
	var mix sizeMix
	for _, iv := range s.secs() {
		if iv.endMS > startMS && iv.endMS <= endMS {
			mix.add(s.layout, iv.c)
		}
	}
	h.SizeMix = mix.classes()
	if s.layout.device {
		h.AquSz = ptr(aquSz(s.layout, sum))
	}
	return h
}

func (s *series) at(ms int64) string {
	return s.start.Add(time.Duration(ms) * time.Millisecond).UTC().Format(time.RFC3339)
}

func sumOf(ivs []interval, n int) interval {
	sum := interval{c: make([]uint64, n)}
	for _, iv := range ivs {
		sum.elapsedUS += iv.elapsedUS
		sum.endMS = max(sum.endMS, iv.endMS)
		for i, v := range iv.c {
			sum.c[i] += v
		}
	}
	return sum
}

// means are the figures' rates over an interval (or a sum of them).
func (s *series) means(iv interval) map[string]float64 {
	m := map[string]float64{}
	secs := float64(iv.elapsedUS) / 1e6
	for _, f := range s.layout.figures() {
		if secs > 0 {
			m[f.name] = f.rate(iv.c, secs)
		} else {
			m[f.name] = 0
		}
	}
	return m
}

// openCounts tells whether the open minute counts as a minute of its own
// in the per-minute figures: once it covers half of one, or when it is
// all there is (a minute's rate is over the time its intervals cover).
func (s *series) openCounts() bool {
	return s.curUsed && (s.cur.elapsedUS >= minuteMS*1000/2 || s.mins.len() == 0)
}

// secs are the intervals in memory.
func (s *series) secs() []interval { return s.kept[s.head:] }

// recent are the intervals of the document's window.
func (s *series) recent() []interval {
	all := s.secs()
	if len(all) == 0 {
		return all
	}
	cut := all[len(all)-1].endMS - s.window.Milliseconds()
	i, _ := slices.BinarySearchFunc(all, cut+1, func(iv interval, t int64) int { return int(iv.endMS - t) })
	return all[i:]
}

// summary is what the series demanded so far.
func (s *series) summary() *results.SeriesSummary {
	all := interval{elapsedUS: s.observed, c: s.totals, endMS: s.lastEnd()}
	open := s.openCounts()
	n := s.mins.len()
	if open {
		n++
	}
	sum := &results.SeriesSummary{
		ObservedNS: s.observed * 1000, Intervals: s.count, Minutes: n,
		Mean:      s.means(all),
		PerSecond: map[string]results.Spread3{},
		PerMinute: map[string]results.Spread3{},
		SizeMix:   s.sizeMix.classes(),
	}
	for i, f := range s.layout.figures() {
		var v []float64
		if s.sortedMinutes != nil {
			v = s.sortedMinutes[i]
		}
		if open && s.cur.elapsedUS > 0 {
			r := f.rate(s.cur.c, float64(s.cur.elapsedUS)/1e6)
			j, _ := slices.BinarySearch(v, r)
			v = slices.Insert(slices.Clone(v), j, r)
		}
		sum.PerMinute[f.name] = spreadOf(v)
		if !s.dropped {
			sum.PerSecond[f.name] = spreadOf(rates(s.secs(), f))
		} else {
			sum.PerSecond[f.name] = s.hist[i].spread()
		}
	}
	switch {
	case s.busiest != nil:
		sum.BusiestHour = s.busiest
	case s.count > 0:
		// Shorter than an hour: the whole observation stands for it.
		sum.BusiestHour = s.hour(all, 0, all.endMS, true)
	}
	if s.layout.device && all.elapsedUS > 0 {
		l := s.layout
		sum.AquSz = ptr(aquSz(l, all))
		sum.UtilPct = ptr(min(100, float64(all.c[l.index("io_ticks_ms")])/(float64(all.elapsedUS)/1000)*100))
		if r := all.c[l.rios]; r > 0 {
			sum.RAwait = ptr(float64(all.c[l.index("rticks_ms")]) / float64(r))
		}
		if w := all.c[l.wios]; w > 0 {
			sum.WAwait = ptr(float64(all.c[l.index("wticks_ms")]) / float64(w))
		}
	}
	return sum
}

// aquSz is iostat's average queue size: the weighted time in queue over
// the time elapsed (Little's law: the mean number of requests in flight).
func aquSz(l *layout, iv interval) float64 {
	if iv.elapsedUS <= 0 {
		return 0
	}
	return float64(iv.c[l.index("queue_ms")]) / (float64(iv.elapsedUS) / 1000)
}

func rates(ivs []interval, f figure) []float64 {
	out := make([]float64, 0, len(ivs))
	for _, iv := range ivs {
		if iv.elapsedUS > 0 {
			out = append(out, f.rate(iv.c, float64(iv.elapsedUS)/1e6))
		}
	}
	return out
}

// spreadOf gives exact nearest-rank percentiles: the p-th is the
// smallest value at least p % of the values do not exceed.
func spreadOf(v []float64) results.Spread3 {
	if len(v) == 0 {
		return results.Spread3{}
	}
	if !slices.IsSorted(v) {
		slices.Sort(v)
	}
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(v)))) - 1
		return v[max(0, min(i, len(v)-1))]
	}
	return results.Spread3{P50: rank(50), P95: rank(95), P99: rank(99), Max: v[len(v)-1]}
}

// timeline renders intervals in the document's columnar form.
func (s *series) timeline(ivs []interval, step time.Duration) results.Timeline {
	t := results.Timeline{StepNS: step.Nanoseconds(), EndMS: make([]int64, len(ivs)), ElapsedUS: make([]int64, len(ivs)),
		Counters: map[string][]uint64{}}
	cols := make([][]uint64, len(s.layout.counters))
	for i := range cols {
		cols[i] = make([]uint64, len(ivs))
	}
	for j, iv := range ivs {
		t.EndMS[j], t.ElapsedUS[j] = iv.endMS, iv.elapsedUS
		for i, v := range iv.c {
			cols[i][j] = v
		}
	}
	for i, name := range s.layout.counters {
		t.Counters[name] = cols[i]
	}
	return t
}

// lastEnd is the end of the last interval added.
func (s *series) lastEnd() int64 {
	if s.curUsed {
		return s.cur.endMS
	}
	if n := s.mins.len(); n > 0 {
		return s.mins.end[n-1]
	}
	return 0
}

// minuteTimeline is the minutes as the document holds them, sharing the
// columns: the open minute is written in their spare room, past their
// length, where the next save writes it again until it closes.
func (s *series) minuteTimeline() results.Timeline {
	m := &s.mins
	n := m.len()
	t := results.Timeline{StepNS: time.Minute.Nanoseconds(), Counters: map[string][]uint64{}, Stable: n, Cache: &s.minCache}
	room := func(col []int64) []int64 {
		if cap(col) == len(col) {
			col = slices.Grow(col, 1)
		}
		return col
	}
	if s.curUsed {
		m.end, m.elapsed = room(m.end), room(m.elapsed)
		m.end[:n+1][n], m.elapsed[:n+1][n] = s.cur.endMS, s.cur.elapsedUS
		t.EndMS, t.ElapsedUS = m.end[:n+1], m.elapsed[:n+1]
	} else {
		t.EndMS, t.ElapsedUS = m.end, m.elapsed
	}
	if m.cols == nil {
		m.cols = make([][]uint64, len(s.layout.counters))
	}
	for i, name := range s.layout.counters {
		col := m.cols[i]
		if s.curUsed {
			if cap(col) == len(col) {
				col = slices.Grow(col, 1)
				m.cols[i] = col
			}
			col = col[:n+1]
			col[n] = s.cur.c[i]
		}
		t.Counters[name] = col
	}
	return t
}

// result is the series as the document holds it.
func (s *series) result(interval time.Duration) *results.ObservedSeries {
	out := &results.ObservedSeries{Name: s.name, Kind: s.kind, Device: s.device,
		Seconds: s.timeline(s.recent(), interval), Minutes: s.minuteTimeline(),
		Totals: map[string]uint64{}, ReadSpreadUS: s.spread.Microseconds()}
	for i, name := range s.layout.counters {
		out.Totals[name] = s.totals[i]
	}
	if s.count > 0 {
		out.Summary = s.summary()
	}
	return out
}

func ptr(v float64) *float64 { return &v }

// sizeMix counts I/Os by the size class of their interval's average
// size, reads and writes apart: classes are powers of two from 512 bytes
// to 16 MiB, each holding the averages above the class below.
type sizeMix struct {
	reads, writes [nSizeClasses]uint64
}

const nSizeClasses = 16 // 512 B … 16 MiB

func sizeClass(bytes, ios uint64) int {
	avg := float64(bytes) / float64(ios)
	c := 0
	for c < nSizeClasses-1 && avg > float64(int64(512)<<c) {
		c++
	}
	return c
}

func (m *sizeMix) add(l *layout, c []uint64) {
	if !l.io() {
		return
	}
	if r := c[l.rios]; r > 0 {
		m.reads[sizeClass(c[l.rbytes], r)] += r
	}
	if w := c[l.wios]; w > 0 {
		m.writes[sizeClass(c[l.wbytes], w)] += w
	}
}

func (m *sizeMix) classes() []results.SizeClass {
	var out []results.SizeClass
	for c := range nSizeClasses {
		if m.reads[c]+m.writes[c] > 0 {
			out = append(out, results.SizeClass{Bytes: int64(512) << c, Reads: m.reads[c], Writes: m.writes[c]})
		}
	}
	return out
}

// logHist is a histogram of rates in buckets 2^(1/128) wide (zero apart):
// a percentile read from it, the geometric middle of its bucket, is within
// 0.3 % of the exact value.
type logHist struct {
	zeros   uint64
	buckets map[int32]uint64
	n       uint64
	max     float64
}

const histPrecisionPct = 0.3

func (h *logHist) add(v float64) {
	h.n++
	h.max = max(h.max, v)
	if v <= 0 {
		h.zeros++
		return
	}
	if h.buckets == nil {
		h.buckets = map[int32]uint64{}
	}
	h.buckets[int32(math.Floor(math.Log2(v)*128))]++
}

func (h *logHist) quantile(p float64) float64 {
	rank := uint64(math.Ceil(p / 100 * float64(h.n)))
	if rank <= h.zeros {
		return 0
	}
	keys := make([]int32, 0, len(h.buckets))
	for k := range h.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	seen := h.zeros
	for _, k := range keys {
		seen += h.buckets[k]
		if seen >= rank {
			return min(math.Exp2((float64(k)+0.5)/128), h.max)
		}
	}
	return h.max
}

func (h *logHist) spread() results.Spread3 {
	if h.n == 0 {
		return results.Spread3{}
	}
	return results.Spread3{P50: h.quantile(50), P95: h.quantile(95), P99: h.quantile(99), Max: h.max,
		PrecisionPct: histPrecisionPct}
}
