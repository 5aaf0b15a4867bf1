package observe

import (
	"fmt"

	"github.com/iomatrix/iomatrix/results"
)

// A dbKind is what one kind of database brings to an observation: the
// layout of its series (its counters, in the order its Status names
// them, and its figures), how a reset of its counters is taken, and the
// words of its cross-check with its cgroup.
type dbKind struct {
	layout *layout
	// resetIsBaseline: the kind's counters survive a restart, and a
	// reset may zero some of them and leave others, so that after either
	// the interval's increase is not known and the reading is a fresh
	// baseline. Otherwise a restart zeroes every counter, and the
	// interval's increase is the new reading.
	resetIsBaseline bool
	notes           func(c *results.CrossCheck, d map[string]float64) []string
}

// dbKinds are the kinds of database, by Database.Kind.
var dbKinds = map[string]dbKind{
	"mysql":    {layout: databaseLayout, notes: crossNotes},
	"postgres": {layout: postgresLayout, resetIsBaseline: true, notes: postgresNotes},
}

var postgresLayout = newPostgresLayout()

// newPostgresLayout is PostgreSQL's: reads are the blocks it read from
// the OS, writes the data-file blocks it wrote (checkpointer, background
// writer and backends), in bytes by the block size; the other figures
// per second. durable_writes are the writes that had to reach stable
// storage before PostgreSQL went on: the WAL's flushes (its syncs, or its
// writes under open_datasync and open_sync) and the backends' own
// fsyncs.
func newPostgresLayout() *layout {
	l := newLayout(PostgresCounters, "blks_read", "blks_written", "read_bytes", "written_bytes", false)
	walFlushes, backendFsyncs := l.index("wal_flushes"), l.index("buffers_backend_fsync")
	l.extra = []figure{
		counterFigure(l, "hits", "blks_hit", 1),
		counterFigure(l, "commits", "xact_commit", 1),
		counterFigure(l, "checkpoint_writes", "buffers_checkpoint", 1),
		counterFigure(l, "clean_writes", "buffers_clean", 1),
		counterFigure(l, "backend_writes", "buffers_backend", 1),
		counterFigure(l, "backend_fsyncs", "buffers_backend_fsync", 1),
		counterFigure(l, "wal_writes", "wal_write", 1),
		counterFigure(l, "wal_syncs", "wal_sync", 1),
		counterFigure(l, "wal_kb", "wal_bytes", 1.0/1024),
		counterFigure(l, "wal_records", "wal_records", 1),
		counterFigure(l, "fpi", "wal_fpi", 1),
		{name: "durable_writes", of: func(c []uint64) float64 { return float64(c[walFlushes] + c[backendFsyncs]) }},
		counterFigure(l, "io_reads", "io_reads", 1),
		counterFigure(l, "io_writes", "io_writes", 1),
		counterFigure(l, "io_extends", "io_extends", 1),
		counterFigure(l, "io_fsyncs", "io_fsyncs", 1),
	}
	return l
}

// postgresNotes explain how PostgreSQL's counters differ from its
// cgroup's, with the observation's figures.
func postgresNotes(c *results.CrossCheck, d map[string]float64) []string {
	notes := []string{fmt.Sprintf("Blocks found in shared_buffers (%.0f/s) reach neither count. PostgreSQL reads and writes its data files through the OS page cache: its block reads (%.0f/s) include the page cache's hits, which never reach the device.",
		d["hits"], c.DBReadIOPS)}
	switch {
	case c.DBReadIOPS > 0 && c.ReadRatio < 0.9:
		notes = append(notes, fmt.Sprintf("The cgroup saw %.0f %% of PostgreSQL's block reads: the rest were page-cache hits, or were merged by read-ahead into larger requests.", 100*c.ReadRatio))
	case c.DBReadIOPS > 0 && c.ReadRatio > 1.1:
		notes = append(notes, fmt.Sprintf("The cgroup saw %.2f× PostgreSQL's block reads: the WAL, temporary files and other processes of the cgroup read too, or read-ahead read more than asked.", c.ReadRatio))
	}
	notes = append(notes, fmt.Sprintf("Its data-file writes (%.0f blocks/s: checkpointer %.0f, background writer %.0f, backends %.0f) are buffered: they reach the device later, merged, through the kernel's writeback (charged to the root cgroup on v1, or on v2 without the memory controller) and at each checkpoint's fsync.",
		c.DBWriteIOPS, d["checkpoint_writes"], d["clean_writes"], d["backend_writes"]))
	notes = append(notes, fmt.Sprintf("The WAL is not among the data writes but is the cgroup's: %.0f KiB/s of records in %.1f writes/s, each writing again the page the last one left partly filled, and %.1f durable writes/s (its flushes and the backends' own fsyncs), each also a cache flush on the device and an empty write in the cgroup.",
		d["wal_kb"], d["wal_writes"], d["durable_writes"]))
	if d["fpi"] > 0 && d["wal_records"] > 0 {
		notes = append(notes, fmt.Sprintf("%.1f full-page images/s (%.0f %% of the WAL's records): the first change of a page after each checkpoint writes the whole page into the WAL, which inflates its bytes while a checkpoint is recent.",
			d["fpi"], 100*d["fpi"]/d["wal_records"]))
	}
	if d["io_reads"]+d["io_writes"]+d["io_extends"] > 0 {
		notes = append(notes, fmt.Sprintf("pg_stat_io counts, for relations: %.0f reads/s, %.0f writes/s, %.0f extends/s (a relation growing, not among the data writes) and %.1f fsyncs/s.",
			d["io_reads"], d["io_writes"], d["io_extends"], d["io_fsyncs"]))
	}
	switch {
	case c.DBWriteIOPS > 0 && c.WriteRatio < 0.9:
		notes = append(notes, fmt.Sprintf("The cgroup saw %.0f %% of PostgreSQL's data writes: the rest reached the device through writeback charged elsewhere, were merged, or are still in the page cache.", 100*c.WriteRatio))
	case c.DBWriteIOPS > 0 && c.WriteRatio > 1.1:
		notes = append(notes, fmt.Sprintf("The cgroup saw %.2f× PostgreSQL's data writes: the WAL's writes and flushes, new WAL segments filled with zeros before use, relation extensions and other processes of the cgroup count there and not among them.", c.WriteRatio))
	case c.DBWriteIOPS == 0 && c.CgroupWriteIOPS > 0:
		notes = append(notes, "PostgreSQL wrote no data-file block the whole time (a checkpoint writes most of them, every checkpoint_timeout): the cgroup's writes are the WAL's and the other processes'.")
	}
	return notes
}
