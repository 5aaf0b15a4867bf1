package results

import "fmt"

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
}

// Writes reports whether the pattern can issue writes.
func (p Pattern) Writes() bool { return p.ReadPct < 100 }

// Name is the stable identifier of a pattern, e.g. rand-4k-r90-qd32,
// seq-read-1m-qd8, rand-16k-r70-qd1-j8.
func (p Pattern) Name() string {
	var n string
	if p.Access == Sequential {
		dir := fmt.Sprintf("r%d", p.ReadPct)
		switch p.ReadPct {
		case 100:
			dir = "read"
		case 0:
			dir = "write"
		}
		n = fmt.Sprintf("seq-%s-%s-qd%d", dir, ShortSize(p.BlockSize), p.QueueDepth)
	} else {
		n = fmt.Sprintf("rand-%s-r%d-qd%d", ShortSize(p.BlockSize), p.ReadPct, p.QueueDepth)
	}
	if p.Jobs > 1 {
		n += fmt.Sprintf("-j%d", p.Jobs)
	}
	return n
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
