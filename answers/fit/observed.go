package fit

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Statistic is which figure of an observation stands for a system's
// demand in the workload file.
type Statistic struct {
	// Kind is "mean", "busiest-hour", "pNN" or "max"; PerSecond takes the
	// percentile or maximum of the per-second rates instead of the
	// per-minute ones.
	Kind      string
	Pct       float64
	PerSecond bool
	text      string
}

// DefaultStatistic is the p95 of the per-minute rates over the whole
// observation: a level the systems exceed three minutes in an hour, not
// one spike.
const DefaultStatistic = "p95"

// ParseStatistic reads --statistic: mean, busiest-hour, p50, p95, p99 or
// max of the per-minute rates, or p50-second… max-second of the
// per-second ones.
func ParseStatistic(s string) (Statistic, error) {
	st := Statistic{text: s}
	base, sec := strings.CutSuffix(s, "-second")
	st.PerSecond = sec
	switch {
	case base == "mean" && !sec, base == "busiest-hour" && !sec:
		st.Kind = base
	case base == "max":
		st.Kind = "max"
	case base == "p50", base == "p95", base == "p99":
		st.Kind, st.Pct = "p", map[string]float64{"p50": 50, "p95": 95, "p99": 99}[base]
	default:
		return Statistic{}, fmt.Errorf("%q is not a statistic: mean, busiest-hour, p50, p95, p99 or max (of the per-minute rates), or p50-second, p95-second, p99-second, max-second", s)
	}
	return st, nil
}

// String is the statistic as written.
func (s Statistic) String() string { return s.text }

// Describe says in words what the statistic takes.
func (s Statistic) Describe() string {
	per := "per-minute"
	if s.PerSecond {
		per = "per-second"
	}
	switch s.Kind {
	case "mean":
		return "the mean over the whole observation"
	case "busiest-hour":
		return "the mean of its busiest hour (the 60 minutes with the most I/O)"
	case "max":
		return "the highest of its " + per + " rates"
	}
	return fmt.Sprintf("the p%g of its %s rates over the whole observation", s.Pct, per)
}

// of picks the statistic's figure f (reads, writes) from a summary.
func (s Statistic) of(sum *results.SeriesSummary, f string) float64 {
	spread := sum.PerMinute
	if s.PerSecond {
		spread = sum.PerSecond
	}
	switch s.Kind {
	case "mean":
		return sum.Mean[f]
	case "busiest-hour":
		if sum.BusiestHour == nil {
			return sum.Mean[f]
		}
		return sum.BusiestHour.Mean[f]
	case "max":
		return spread[f].Max
	}
	sp := spread[f]
	return map[float64]float64{50: sp.P50, 95: sp.P95, 99: sp.P99}[s.Pct]
}

// ObservedWorkload writes the workload file `fit --workload` reads from
// an observation, in version 2: each system's reads and writes per
// second at the statistic, raised by headroomPct, its dominant block size
// (the size class with the most I/Os in its busiest hour), its bound on
// I/Os in flight from its database's sessions (issuers),
// and its share of its devices' queue then as a comment (what a database
// had in flight on a fast device understates what it has on a slow one:
// a consolidation of MariaDB and PostgreSQL rehearsed each at its
// observed 1 in flight gave PostgreSQL 250 of a 600-IOPS volume's I/Os a
// second where it got 134 for real, MariaDB's many threads and page
// cleaner queueing more); and
// its shape: its read share and size mix in that hour, its durable
// writes per second at the statistic (its database's, or unknown), and
// where its timeline is in the observation. Systems that did no I/O are
// left out, and said so. source names the observation's file and out
// the workload file's, which the timeline's path is made relative to
// when both are on the same path tree.
func ObservedWorkload(o *results.Observation, st Statistic, headroomPct float64, source, out string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# A workload observed by iomatrix observe: %s\n", source)
	fmt.Fprintf(&b, "# host %s, from %s to %s.\n", o.Host.Hostname, o.StartedAt, orRunning(o))
	fmt.Fprintf(&b, "# reads and writes: for each system, %s (--statistic %s).\n", st.Describe(), st)
	if headroomPct > 0 {
		fmt.Fprintf(&b, "# headroom: %s added to every rate (--headroom).\n", units.FormatPercent(headroomPct))
	} else {
		b.WriteString("# headroom: none (add some with --headroom, or judge with fit's own margin).\n")
	}
	b.WriteString("# block_size: the size class with the most I/Os in the system's busiest hour (from each interval's average size).\n")
	b.WriteString("# concurrency: the most I/Os the system keeps in flight, from its database's sessions where they were read, which a\n")
	b.WriteString("# rehearsal keeps to: one per session when the system reads from the volume (each waits on its own read), one for\n")
	b.WriteString("# its log's flushes (one at a time), one for a background writer (more data writes than flushes). On a slow volume\n")
	b.WriteString("# a database queues up to its bound, and its share of a shared volume follows it. Left out where no database was\n")
	b.WriteString("# read: set one where you know it. A system's share of its devices' time-averaged queue (aqu-sz), in a comment,\n")
	b.WriteString("# is what it had in flight on the observed devices, which on a fast one says little of the bound.\n")
	b.WriteString("# read_share and bssplit (reads,writes, % of each direction's I/Os by size): that hour's.\n")
	b.WriteString("# durable_writes: the flushes per second a commit waits on, from the system's database at the same statistic (headroom added), or unknown.\n")
	b.WriteString("# Each flush is among the writes, as the kernel counts it (an empty write, against a cap's write budget too): a rehearsal\n")
	b.WriteString("# writes the rest as data and issues the flushes as its syncs.\n")
	b.WriteString("# write_bursts: how many of the data writes a second come in bursts (writes, at the same statistic, headroom added) of\n")
	b.WriteString("# size writes at once: InnoDB's page-cleaner batches (its data writes over its doublewrite batches); a rehearsal\n")
	b.WriteString("# queues each burst at one moment. Left out where the database does not say (PostgreSQL, or no doublewrite).\n")
	b.WriteString("# timeline: the system's series in the observation (a relative path is from this file's directory), which a rehearsal replays.\n")
	b.WriteString("# Figures are the cgroup's (bios at submission) where the system has one, else its database's.\n")
	b.WriteString("# Add latency bounds where the systems need them, e.g. latency: \"p99<5ms\".\n")
	fmt.Fprintf(&b, "version: %d\nheadroom_pct: %s\nsystems:\n", WorkloadV2, num(headroomPct))
	obsPath := relativeTo(source, out)
	var n int
	for _, sys := range o.Systems {
		s, from, series := sys.IO, "cgroup "+sys.Cgroup, SeriesIO
		if s == nil || s.Summary == nil {
			s, from, series = sys.Database, "database", SeriesDatabase
		}
		if s == nil || s.Summary == nil {
			fmt.Fprintf(&b, "  # %s: never read\n", sys.Name)
			continue
		}
		sum := s.Summary
		k := 1 + headroomPct/100
		reads, writes := math.Ceil(st.of(sum, "reads")*k), math.Ceil(st.of(sum, "writes")*k)
		d, durable := durableWrites(sys.Database, st)
		d = math.Ceil(d * k)
		if durable && series == SeriesDatabase {
			// A database's writes leave out its flushes, which the
			// kernel counts as writes (the cgroup's figures hold them).
			writes += d
		}
		if reads+writes == 0 {
			fmt.Fprintf(&b, "  # %s: no I/O at that statistic (%s)\n", sys.Name, from)
			continue
		}
		fmt.Fprintf(&b, "  # %s: %s; mean %.0f r/s %.0f w/s", sys.Name, from, sum.Mean["reads"], sum.Mean["writes"])
		if h := sum.BusiestHour; h != nil {
			fmt.Fprintf(&b, "; busiest hour %s–%s %.0f r/s %.0f w/s, %.0f %% reads", clock(h.Start), clock(h.End), h.Mean["reads"], h.Mean["writes"], 100*h.ReadShare)
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "  - name: %s\n    reads: %s\n    writes: %s\n    block_size: %s\n",
			strconv.Quote(sys.Name), num(reads), num(writes), units.FormatSize(dominantSize(sum)))
		if n, why := issuers(sys.Sessions, reads, writes, d, durable); n > 0 {
			fmt.Fprintf(&b, "    concurrency: %d # %s\n", n, why)
		}
		if sys.Concurrency > 0 {
			fmt.Fprintf(&b, "    # in flight, observed: %s on average (aqu-sz share)\n", num(math.Round(sys.Concurrency*100)/100))
		}
		fmt.Fprintf(&b, "    read_share: %s\n", num(readShare(sum, reads, writes)))
		if mix := sizeMixSplit(busiestMix(sum)); mix != "" {
			fmt.Fprintf(&b, "    bssplit: %s\n", strconv.Quote(mix))
		}
		if durable {
			if d > writes {
				// A sync follows writes; more syncs than writes (a
				// database's fsyncs of files the cgroup's counts miss)
				// cannot be rehearsed.
				fmt.Fprintf(&b, "    # durable_writes: %s observed, more than the writes: held to them\n", num(d))
				d = writes
			}
			fmt.Fprintf(&b, "    durable_writes: %s\n", num(d))
		} else {
			fmt.Fprintf(&b, "    durable_writes: %s\n", unknown)
		}
		data := writes
		if durable && d < writes {
			data -= d
		}
		if size, bw := writeBursts(sys.Database, st); size > 1 && bw > 0 && data > 0 {
			bw = min(math.Ceil(bw*k), data)
			fmt.Fprintf(&b, "    write_bursts: {size: %d, writes: %s} # its page cleaner's batches, from its database\n", size, num(bw))
		}
		fmt.Fprintf(&b, "    timeline: {observation: %s, system: %s, series: %s}\n", strconv.Quote(obsPath), strconv.Quote(sys.Name), series)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no system did any I/O: no workload to write", source)
	}
	return b.Bytes(), nil
}

// minReadShare is the read share from which a system's sessions count
// in its bound: below it, few of its transactions wait on a read.
const minReadShare = 0.05

// issuers is a system's bound on I/Os in flight from its database's
// sessions (0: not known), its reads, writes (its durable writes' flushes
// among them) and durable writes a second, and why, in words: each
// session waits on one read at a time, counted when the system reads
// from the volume (a read share of minReadShare or more); the log's
// flushes come one at a time, as a commit waits on its flush and the
// next flush waits for the one before (InnoDB's redo log, PostgreSQL's
// WAL); a background writer (InnoDB's page cleaner, PostgreSQL's
// checkpointer) writes pages beside it, one more where there are more
// data writes than flushes. It leaves out a writer's batches (InnoDB's
// page cleaner queues dozens of pages at once), which the bound of one
// understates.
func issuers(sessions int, reads, writes, durable float64, durableKnown bool) (int, string) {
	if sessions <= 0 {
		return 0, ""
	}
	var n int
	var why []string
	if reads+writes > 0 && reads/(reads+writes) >= minReadShare {
		n += sessions
		why = append(why, fmt.Sprintf("%d sessions, each waiting on its own read", sessions))
	}
	if durableKnown && durable > 0 {
		n++
		why = append(why, "1 for its log's flushes")
		if writes-durable > durable {
			n++
			why = append(why, "1 for its background writer")
		}
	} else if writes > 0 {
		n++
		why = append(why, "1 for its writer")
	}
	if n == 0 {
		return 0, ""
	}
	return n, "from its database: " + strings.Join(why, ", ")
}

// readShare is the busiest hour's read share, or the rates' own where
// the summary has no busiest hour; held to what the rates allow (no
// reads when reads is 0, all reads when writes is).
func readShare(sum *results.SeriesSummary, reads, writes float64) float64 {
	share := reads / (reads + writes)
	if h := sum.BusiestHour; h != nil && h.Mean["reads"]+h.Mean["writes"] > 0 {
		share = h.ReadShare
	}
	switch {
	case reads == 0:
		return 0
	case writes == 0:
		return 1
	}
	return math.Round(share*1000) / 1000
}

// busiestMix is the busiest hour's size mix, or the whole observation's.
func busiestMix(sum *results.SeriesSummary) []results.SizeClass {
	if h := sum.BusiestHour; h != nil && len(h.SizeMix) > 0 {
		return h.SizeMix
	}
	return sum.SizeMix
}

// durableWrites is a database's durable writes per second at the
// statistic: its "durable_writes" figure, or for a MySQL series of an
// observation that predates that figure its "fsyncs" (the same
// counter).
func durableWrites(db *results.ObservedSeries, st Statistic) (float64, bool) {
	if db == nil || db.Summary == nil {
		return 0, false
	}
	if _, ok := db.Summary.Mean["durable_writes"]; ok {
		return st.of(db.Summary, "durable_writes"), true
	}
	if _, ok := db.Summary.Mean["fsyncs"]; ok && db.Kind == "mysql" {
		return st.of(db.Summary, "fsyncs"), true
	}
	return 0, false
}

// writeBursts is a database's data writes that come in bursts, and the
// writes of one burst (0: not known): InnoDB's page cleaner flushes its
// pages in batches through the doublewrite buffer, each batch one
// doublewrite write and its pages' own, queued together; its data writes
// a second over its doublewrite batches a second are one batch's writes
// (MariaDB's data writes leave the redo log's out). Without doublewrite
// batches (innodb_doublewrite off), and for PostgreSQL, whose
// checkpointer spreads its writes over the checkpoint, none is known.
func writeBursts(db *results.ObservedSeries, st Statistic) (int, float64) {
	if db == nil || db.Summary == nil || db.Kind != "mysql" {
		return 0, 0
	}
	batches, writes := db.Summary.Mean["dblwr_writes"], db.Summary.Mean["writes"]
	if !(batches > 0) || !(writes >= 2*batches) {
		return 0, 0
	}
	return int(math.Round(writes / batches)), st.of(db.Summary, "writes")
}

// relativeTo is path as seen from the directory of the file from, where
// both are relative or both absolute (the workload file may then move
// with the observation); path itself otherwise.
func relativeTo(path, from string) string {
	if from == "" || filepath.IsAbs(path) != filepath.IsAbs(from) {
		return path
	}
	rel, err := filepath.Rel(filepath.Dir(from), path)
	if err != nil {
		return path
	}
	return rel
}

func orRunning(o *results.Observation) string {
	if o.FinishedAt != "" {
		return o.FinishedAt
	}
	return o.SavedAt + " (last saved; the observation did not finish)"
}

func clock(rfc string) string {
	t, err := time.Parse(time.RFC3339, rfc)
	if err != nil {
		return rfc
	}
	return t.Format("Jan 2 15:04")
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// dominantSize is the size class with the most I/Os in the busiest
// hour, or over the whole observation; 4 KiB when nothing says.
func dominantSize(sum *results.SeriesSummary) int64 {
	mix := sum.SizeMix
	if h := sum.BusiestHour; h != nil && len(h.SizeMix) > 0 {
		mix = h.SizeMix
	}
	best, bs := uint64(0), int64(4096)
	for _, c := range mix {
		if n := c.Reads + c.Writes; n > best {
			best, bs = n, c.Bytes
		}
	}
	return max(bs, 512)
}
