package capverify

import (
	"math"

	"github.com/iomatrix/iomatrix/cgroup"
)

// Expected is the cap model: the total IOPS a pattern with read share
// readPct and block size bs can reach under l, given its uncapped IOPS
// (0 when unknown):
//
//	min(U, R/(r·k), W/((1-r)·k), Rb/(r·b), Wb/((1-r)·b))
//
// where k is the number of requests the block layer splits one I/O into
// (the device's max I/O size; the kernel throttles requests, not I/Os),
// a missing cap or a zero share drops its term. binding reports whether
// the cap, not the device, sets the figure (model below 90 % of U).
func Expected(l cgroup.Limit, readPct int, bs int64, split int, uncapped float64) (expected float64, binding bool) {
	return ExpectedShare(l, float64(readPct)/100, bs, split, uncapped)
}

// ExpectedShare is Expected for a read share r between 0 and 1: a run's
// measured share, say, which a random draw of directions puts a little off
// the pattern's read percentage.
func ExpectedShare(l cgroup.Limit, r float64, bs int64, split int, uncapped float64) (expected float64, binding bool) {
	w := 1 - r
	k := float64(max(split, 1))
	b := float64(bs)
	capped := math.Inf(1)
	term := func(limit uint64, share, per float64) {
		if limit > 0 && share > 0 {
			capped = math.Min(capped, float64(limit)/(share*per))
		}
	}
	term(l.ReadIOPS, r, k)
	term(l.WriteIOPS, w, k)
	term(l.ReadBPS, r, b)
	term(l.WriteBPS, w, b)
	if uncapped <= 0 {
		return capped, !math.IsInf(capped, 1)
	}
	if capped < 0.9*uncapped {
		return capped, true
	}
	return math.Min(capped, uncapped), false
}
