package results

import (
	"fmt"
	"strconv"
	"strings"
)

// Access is the offset pattern of a workload.
type Access string

// The two access patterns.
const (
	Random     Access = "random"
	Sequential Access = "sequential"
)

// Pattern is one workload: what a single cell of the matrix measures.
type Pattern struct {
	Access     Access `json:"access"`
	BlockSize  int64  `json:"block_size"`
	ReadPct    int    `json:"read_pct"`
	QueueDepth int    `json:"queue_depth"`
	Jobs       int    `json:"jobs"`
	// Rate, when set, makes the pattern open-loop: I/Os start on a
	// schedule at this rate, whatever the device is doing, and QueueDepth
	// is the most allowed in flight. Part of the pattern's identity.
	Rate Rate `json:"rate,omitzero"`
	// BSSplit, when set, is the block-size mix in canonical form (see
	// the pattern language's BSSplit.Canonical); BlockSize is then its largest size.
	BSSplit string `json:"bssplit,omitempty"`
	// Distribution, when set, is the skewed offset distribution of a
	// random pattern in canonical form (see the pattern language's Distribution.String).
	Distribution string `json:"random_distribution,omitempty"`
	// Compress and Dedupe are the written data's content, in fio's
	// meaning (buffer_compress_percentage, dedupe_percentage with
	// dedupe_mode=repeat): the percentage each 512-byte chunk of a write
	// compresses by, and the percentage of writes that repeat an earlier
	// write's content. 0 is random and unique data.
	Compress int `json:"compress_pct,omitempty"`
	Dedupe   int `json:"dedupe_pct,omitempty"`
	// Sync, when set, makes the writes durable as a commit's are, in
	// canonical form: "dsync" (each write with RWF_DSYNC / O_DSYNC
	// semantics), "fdatasync:N" or "fsync:N" (a sync after every N-th
	// write of a stream, its wait counted in that write's latency).
	Sync string `json:"sync,omitempty"`
}

// Rate is an open-loop pattern's schedule: a total rate (the direction of
// each I/O drawn by ReadPct), or a rate per direction.
type Rate struct {
	IOPS      float64 `json:"iops,omitempty"`
	ReadIOPS  float64 `json:"read_iops,omitempty"`
	WriteIOPS float64 `json:"write_iops,omitempty"`
	// Arrival is ArrivalPoisson or ArrivalUniform.
	Arrival string `json:"arrival,omitempty"`
	// BurstIOPS, with a rate per direction, is how many of WriteIOPS
	// arrive in bursts of BurstSize writes at one moment, as a
	// database's background writer queues a batch of pages at once
	// (InnoDB's page cleaner); the bursts themselves arrive at
	// BurstIOPS/BurstSize a second, the other writes one at a time.
	BurstIOPS float64 `json:"burst_iops,omitempty"`
	BurstSize int     `json:"burst_size,omitempty"`
}

// Bursty tells whether some of the writes arrive in bursts.
func (r Rate) Bursty() bool { return r.BurstIOPS > 0 && r.BurstSize > 1 }

// How the I/Os of an open-loop pattern arrive (Rate.Arrival).
const (
	// ArrivalPoisson: independent arrivals, exponential gaps at the rate.
	ArrivalPoisson = "poisson"
	// ArrivalUniform: evenly spaced arrivals, one every 1/rate.
	ArrivalUniform = "uniform"
	// ArrivalTrace: a recorded trace's times (iomatrix replay); Rate.IOPS
	// is then the trace's mean rate.
	ArrivalTrace = "trace"
)

// Open tells whether the rate sets a schedule: an open-loop pattern.
func (r Rate) Open() bool { return r.IOPS > 0 || r.ReadIOPS > 0 || r.WriteIOPS > 0 }

// PerDirection tells whether reads and writes have schedules of their own.
func (r Rate) PerDirection() bool { return r.IOPS == 0 && (r.ReadIOPS > 0 || r.WriteIOPS > 0) }

// Total is the rate of all I/Os.
func (r Rate) Total() float64 {
	if r.PerDirection() {
		return r.ReadIOPS + r.WriteIOPS
	}
	return r.IOPS
}

// FormatRate spells a rate in I/Os per second with no more digits than it
// has: 5000, 1234.5.
func FormatRate(iops float64) string { return strconv.FormatFloat(iops, 'f', -1, 64) }

// nameSuffix is the rate's part of a pattern name: -rate5000,
// -rate3000r1000w, -rate700r270w-wburst98x196 (196 of the writes a
// second in bursts of 98), and -uniform for uniform arrivals.
func (r Rate) nameSuffix() string {
	if !r.Open() {
		return ""
	}
	var s string
	if r.PerDirection() {
		s = "-rate"
		if r.ReadIOPS > 0 {
			s += FormatRate(r.ReadIOPS) + "r"
		}
		if r.WriteIOPS > 0 {
			s += FormatRate(r.WriteIOPS) + "w"
		}
		if r.Bursty() {
			s += fmt.Sprintf("-wburst%dx%s", r.BurstSize, FormatRate(r.BurstIOPS))
		}
	} else {
		s = "-rate" + FormatRate(r.IOPS)
	}
	if r.Arrival == ArrivalUniform {
		s += "-uniform"
	}
	return s
}

// Writes reports whether the pattern can issue writes.
func (p Pattern) Writes() bool { return p.ReadPct < 100 }

// Name is the stable identifier of a pattern, e.g. rand-4k-r90-qd32,
// seq-read-1m-qd8, rand-16k-r70-qd1-j8, rand-4k60+16k30+1m10-r90-qd32-zipf1.2,
// seq-write-128k-qd8-c50-d20.
func (p Pattern) Name() string {
	var n string
	size := ShortSize(p.BlockSize)
	if p.BSSplit != "" {
		size = splitName(p.BSSplit)
	}
	if p.Access == Sequential {
		dir := fmt.Sprintf("r%d", p.ReadPct)
		switch p.ReadPct {
		case 100:
			dir = "read"
		case 0:
			dir = "write"
		}
		n = fmt.Sprintf("seq-%s-%s-qd%d", dir, size, p.QueueDepth)
	} else {
		n = fmt.Sprintf("rand-%s-r%d-qd%d", size, p.ReadPct, p.QueueDepth)
	}
	if p.Jobs > 1 {
		n += fmt.Sprintf("-j%d", p.Jobs)
	}
	return n + distName(p.Distribution) + syncName(p.Sync) + p.Rate.nameSuffix() + p.contentSuffix()
}

// contentSuffix is the data content's part of a pattern name: -c50 for
// data that compresses by half, -d30 for 30 % repeated writes; nothing
// for random, unique data.
func (p Pattern) contentSuffix() string {
	var s string
	if p.Compress > 0 {
		s += fmt.Sprintf("-c%d", p.Compress)
	}
	if p.Dedupe > 0 {
		s += fmt.Sprintf("-d%d", p.Dedupe)
	}
	return s
}

// Content describes the data a pattern writes, in words: "random,
// unique" by default, else its compress and dedupe percentages.
func (p Pattern) Content() string {
	if p.Compress == 0 && p.Dedupe == 0 {
		return "random, unique"
	}
	var parts []string
	if p.Compress > 0 {
		parts = append(parts, fmt.Sprintf("compress %d %%", p.Compress))
	}
	if p.Dedupe > 0 {
		parts = append(parts, fmt.Sprintf("dedupe %d %%", p.Dedupe))
	}
	return strings.Join(parts, ", ")
}

// ShortSize renders block sizes the way pattern names use them: 4k, 16k, 1m.
func ShortSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dg", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dm", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dk", n>>10)
	default:
		return fmt.Sprintf("%db", n)
	}
}

// AnyWrites tells whether a pattern of pats writes.
func AnyWrites(pats []Pattern) bool {
	for _, p := range pats {
		if p.Writes() {
			return true
		}
	}
	return false
}
