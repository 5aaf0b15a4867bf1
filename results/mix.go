package results

import "strings"

// The naming of a pattern's block-size mix and offset distribution, whose
// canonical strings the pattern language (iotest/pattern) makes.

// splitName is the mix's part of a pattern name: 4k60+16k30+1m10, and
// reads_writes when the directions differ.
func splitName(canonical string) string {
	r := strings.NewReplacer("/", "", ":", "+", ",", "_")
	return r.Replace(canonical)
}

// distName is the distribution's part of a pattern name: -zipf1.2,
// -pareto0.9, -normal5, with c0.25 for a center.
func distName(canonical string) string {
	if canonical == "" {
		return ""
	}
	kind, rest, _ := strings.Cut(canonical, ":")
	param, center, hasCenter := strings.Cut(rest, ":")
	n := "-" + kind + param
	if hasCenter {
		n += "c" + center
	}
	return n
}

// SizeCount is the I/Os of one size of a block-size mix completed in the
// window (Result.SizeMix).
type SizeCount struct {
	BlockSize int64  `json:"block_size"`
	ReadIOs   uint64 `json:"read_ios"`
	WriteIOs  uint64 `json:"write_ios"`
}

// HotShare is the share of a window's I/Os that fell in the hottest
// BlocksPct percent of the target's blocks under a skewed distribution
// (Result.HotSet). The hottest blocks are the distribution's most likely
// ones: the lowest ranks of zipf and pareto, the blocks nearest the center
// of normal; the share is measured, I/O by I/O.
type HotShare struct {
	BlocksPct float64 `json:"blocks_pct"`
	IOsPct    float64 `json:"ios_pct"`
}

// HotSetPcts are the hot sets a skewed result states the share of.
var HotSetPcts = [2]float64{1, 10}

// syncName is the durable-write mode's part of a pattern name: -dsync,
// -fdatasync1, -fsync8; none without one.
func syncName(canonical string) string {
	if canonical == "" {
		return ""
	}
	return "-" + strings.ReplaceAll(canonical, ":", "")
}
