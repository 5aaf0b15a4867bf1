package results

// Replay is what a replayed trace held and what its replay did.
type Replay struct {
	// Trace is the file replayed, Format how it was read (fio-iolog-v2,
	// fio-iolog-v3, blktrace, blkparse), Device the device or file of the
	// trace whose I/Os were replayed.
	Trace  string `json:"trace"`
	Format string `json:"format"`
	Device string `json:"device,omitempty"`
	// IOs are the reads and writes of the trace (each replayed once),
	// Reads of them reads; ReadBytes and WriteBytes their sizes summed.
	IOs        uint64 `json:"ios"`
	Reads      uint64 `json:"reads"`
	ReadBytes  uint64 `json:"read_bytes"`
	WriteBytes uint64 `json:"write_bytes"`
	// Speed scales the trace's time (2: twice as fast); SpanNS is the
	// time from its first I/O's start to its last's, at that speed.
	Speed  float64 `json:"speed"`
	SpanNS int64   `json:"span_ns"`
	// Untimed: the trace records no times (a version 2 iolog without
	// waits), and every I/O was due at once.
	Untimed bool `json:"untimed,omitempty"`
	// OffsetRule is how the trace's offsets were mapped onto the target;
	// Wrapped I/Os were moved by it to fit the target, Realigned ones
	// rounded to its alignment.
	OffsetRule string `json:"offset_rule"`
	Wrapped    uint64 `json:"wrapped,omitempty"`
	Realigned  uint64 `json:"realigned,omitempty"`
	// Skipped is what the trace holds that was not replayed.
	Skipped ReplaySkipped `json:"skipped"`
	// TracePerSecond counts the trace's I/Os by the second (at Speed) in
	// which they were recorded to start; PerSecond the replay's I/Os by
	// the second of the window in which they completed.
	TracePerSecond []uint64 `json:"trace_per_second"`
	PerSecond      []uint64 `json:"per_second"`
	// Sizes are the I/Os of each size, the trace's and the window's,
	// the most frequent size first; size 0 holds the rest when the trace
	// has more sizes than the engine counts apart (16).
	Sizes []ReplaySize `json:"sizes"`
}

// ReplaySkipped counts what a replay does not issue.
type ReplaySkipped struct {
	// Flushes: blktrace's flushes (alone, or before a write, which is
	// replayed), fio's sync and datasync.
	Flushes uint64 `json:"flushes"`
	// Discards: blktrace's discards, fio's trims.
	Discards uint64 `json:"discards"`
	// Empty: other events of no data.
	Empty uint64 `json:"empty"`
}

// ReplaySize is the I/Os of one size in a replay.
type ReplaySize struct {
	Size        int64  `json:"size"`
	TraceReads  uint64 `json:"trace_reads"`
	TraceWrites uint64 `json:"trace_writes"`
	ReadIOs     uint64 `json:"read_ios"`
	WriteIOs    uint64 `json:"write_ios"`
}
