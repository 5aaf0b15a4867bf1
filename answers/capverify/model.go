package capverify

import (
	"errors"
	"math"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/results"
)

// Limits are what the cap model holds a pattern to: limits per direction
// (a cgroup's, or a volume's), and limits on reads and writes together,
// which a cloud volume's provider sells (its IOPS and its throughput
// count both directions) and no cgroup has.
type Limits struct {
	cgroup.Limit
	// IOPS and BPS count reads and writes together (0: no limit).
	IOPS, BPS uint64
	// Provisioned: the limits are a volume's own, as its provider
	// advertises them (cap verify --provisioned), not a cgroup's. No
	// cgroup counts the volume's requests, and no throttle hands its
	// budget out in slices: see Judge.
	Provisioned bool
}

// ErrBadLimits marks a --provisioned string that cannot be a volume's
// limits.
var ErrBadLimits = errors.New("invalid limits")

// ParseProvisioned reads the limits a volume is sold with:
// "riops=N,wiops=N,rbps=SIZE,wbps=SIZE,iops=N,bps=SIZE", any subset, with
// iops and bps counting reads and writes together (a cloud volume's IOPS
// and throughput limits). The grammar is --cap's (cgroup.ParseLimitKeys);
// the device is the target's, filled in when the limits are recorded.
func ParseProvisioned(s string) (Limits, error) {
	l := Limits{Provisioned: true}
	err := cgroup.ParseLimitKeys(s, []cgroup.LimitKey{{Name: "riops", Dst: &l.ReadIOPS}, {Name: "wiops", Dst: &l.WriteIOPS},
		{Name: "rbps", Dst: &l.ReadBPS}, {Name: "wbps", Dst: &l.WriteBPS}, {Name: "iops", Dst: &l.IOPS}, {Name: "bps", Dst: &l.BPS}}, ErrBadLimits)
	return l, err
}

// Record is the limits as a results document records them, on the
// device dev (MAJ:MIN, "" when the target has none). A cgroup's limits
// are recorded by cgroup.Limit.Record, with their cgroup.
func (l Limits) Record(dev string) *results.Cap {
	c := l.Limit.Record(0, "")
	c.Device, c.IOPS, c.BPS, c.Provisioned = dev, l.IOPS, l.BPS, l.Provisioned
	return c
}

// LimitsOf is the limits a recorded cap describes (nil: none).
func LimitsOf(c *results.Cap) Limits {
	if c == nil {
		return Limits{}
	}
	return Limits{Limit: cgroup.LimitOf(c), IOPS: c.IOPS, BPS: c.BPS, Provisioned: c.Provisioned}
}

// Expected is the cap model for a cgroup's limit l: the total IOPS a
// pattern with read share readPct and block size bs can reach under it,
// given its uncapped IOPS (0 when unknown). See ExpectedShare.
func Expected(l cgroup.Limit, readPct int, bs int64, split int, uncapped float64) (expected float64, binding bool) {
	return ExpectedShare(Limits{Limit: l}, float64(readPct)/100, bs, split, uncapped)
}

// ExpectedShare is the cap model, the one place it lives: the total IOPS
// a pattern with read share r (between 0 and 1: a run's measured share,
// say, which a random draw of directions puts a little off the pattern's
// read percentage) and block size bs can reach under l, given its
// uncapped IOPS U (0 when unknown):
//
//	min(U, R/(r·k), W/((1-r)·k), Rb/(r·b), Wb/((1-r)·b), T/k, Tb/b)
//
// where k is the number of requests the block layer splits one I/O into
// (the device's max I/O size; the kernel throttles requests, not I/Os,
// and a volume counts the requests it is sent), T and Tb are the limits
// on reads and writes together (every I/O counts against them, whatever
// its direction), and a missing limit or a zero share drops its term.
// binding reports whether the limits, not the device, set the figure
// (model below 90 % of U; with U unknown, whenever a term is left).
func ExpectedShare(l Limits, r float64, bs int64, split int, uncapped float64) (expected float64, binding bool) {
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
	term(l.IOPS, 1, k)
	term(l.BPS, 1, b)
	if uncapped <= 0 {
		return capped, !math.IsInf(capped, 1)
	}
	if capped < 0.9*uncapped {
		return capped, true
	}
	return math.Min(capped, uncapped), false
}
