package cgroup

import (
	"fmt"
	"math"
	"time"
)

// Requests counts block-layer requests (or I/Os) by direction.
type Requests struct {
	Reads  uint64 `json:"reads"`
	Writes uint64 `json:"writes"`
}

// Counter agreement: the kernel's count for the cgroup and iomatrix's own
// (times RequestsPerIO) must agree within this fraction, per direction.
// There is no absolute allowance: the worker faults in its program and
// reads the target's metadata before it joins the cgroup, so nothing but
// iomatrix's I/O is charged there, and a request that is not iomatrix's is
// reported as foreign, never absorbed.
const CounterTolerance = 0.005

// Cell is what the verdict needs of one pattern measured under a cap.
type Cell struct {
	ReadPct       int
	BlockSize     int64
	RequestsPerIO int     // see sysfs.BlockDevice.RequestsPerIO; 0 counts as 1
	UncappedIOPS  float64 // the same pattern without the cap; 0 when unknown
	MeasuredIOPS  float64 // under the cap, in the measured window
	// Window counts the I/Os of the measured window by direction. Their
	// read share is what the cap divides: each I/O draws its direction at
	// random, so a window of a 50 % pattern holds 51.6 % reads now and
	// then, and a cap on reads then allows 3 % fewer I/Os in all. The
	// model is taken at that share, so that the draw is not judged.
	Window Requests
	// Issued counts the I/Os iomatrix completed over the whole pattern
	// (ramp and drain included): the span the kernel's counts cover.
	Issued Requests
	// Kernel is the cgroup's count over the same span; nil when the
	// kernel's counters could not be read.
	Kernel *Requests
	// Failed is the I/O error that ended the pattern, if any.
	Failed string
	// Runtime is the length of the measured window; 0 when unknown (no
	// carry-over allowance is then given).
	Runtime time.Duration
	// Slice is blk-throttle's slice on the cell's disk when known; 0 is
	// ThrottleSlice, the slice of every disk on most kernels and the
	// longer one, which allows the more carry-over. The disk's kind alone
	// does not tell: see ShortSlice.
	Slice time.Duration
	// OtherLoad and BaselineOtherLoad: another process loaded the device
	// during the capped window, or during the uncapped one the expectation
	// rests on (results.DevStats.OtherLoad).
	OtherLoad, BaselineOtherLoad bool
}

// Verdict is the judgement of one cell.
type Verdict struct {
	ExpectedIOPS float64 `json:"expected_iops"`
	// ReadShare is the share of reads the expectation was computed at:
	// the measured window's.
	ReadShare float64 `json:"read_share"`
	// Binding: the cap, not the device, sets the figure (its model is
	// below 90 % of the uncapped IOPS).
	Binding      bool    `json:"binding"`
	DeviationPct float64 `json:"deviation_pct"` // measured against expected
	// CarryPct is what a mixed cell may deviate beyond the tolerance:
	// the throttle's carry-over, one slice of a direction's budget over
	// the window (CarryAllowance).
	CarryPct float64 `json:"carry_pct,omitempty"`
	RateOK   bool    `json:"rate_ok"`
	// ExpectedRequests is Issued times RequestsPerIO: what the kernel
	// should have counted.
	ExpectedRequests Requests `json:"expected_requests"`
	// Foreign are requests the kernel charged beyond iomatrix's, Missing
	// those iomatrix issued that the kernel did not count.
	Foreign    Requests `json:"foreign_requests"`
	Missing    Requests `json:"missing_requests"`
	CountersOK bool     `json:"counters_ok"`
	OK         bool     `json:"ok"`
	// Inconclusive: the rate could not be judged, because another process
	// loaded the device while the cell or its baseline was measured and
	// the cell's figure is not the cap model's (see Judge). Such a cell
	// is neither OK nor failed.
	Inconclusive bool     `json:"inconclusive,omitempty"`
	Reasons      []string `json:"reasons,omitempty"`
}

// Judge decides whether the cap l holds in cell c, with the measured IOPS
// allowed tolerancePct % from the expectation:
//
//   - where the cap binds, the measured IOPS must match the cap model
//     (Expected) within the tolerance, plus the throttle's carry-over for a
//     pattern that both reads and writes (CarryAllowance);
//   - where it does not, the cap must neither throttle the pattern below
//     the expectation, min(uncapped, model), less the tolerance nor be
//     exceeded (at most the cap model plus the tolerance). A cell faster
//     than its uncapped measurement is the device's noise, not a failure
//     of the cap;
//   - the kernel's counts for the cgroup must equal iomatrix's requests
//     within CounterTolerance, direction by direction;
//   - a cell whose I/O failed does not hold;
//   - a cell whose rate another process may have moved (it loaded the
//     device during the capped window or the uncapped one) is
//     inconclusive unless the cap binds and the rate matches its model: a
//     neighbour can slow a cell, or stall it so that the throttle's saved
//     budget bursts past the cap, but it cannot make the throttle hand out
//     exactly its budget. Failing such a cell would report a cap that
//     holds as failing; passing it would pass on data that moved. The
//     counters and I/O errors are judged all the same: a neighbour changes
//     neither.
func Judge(l Limit, c Cell, tolerancePct float64) Verdict {
	k := uint64(max(c.RequestsPerIO, 1))
	share := float64(c.ReadPct) / 100
	if n := c.Window.Reads + c.Window.Writes; n > 0 {
		share = float64(c.Window.Reads) / float64(n)
	}
	v := Verdict{ReadShare: share, CarryPct: CarryAllowance(l, share, c.Runtime, c.Slice) * 100}
	v.judgeRate(l, c, k, tolerancePct)
	v.judgeCounters(c, k)
	if c.Failed != "" {
		v.Reasons = append(v.Reasons, "I/O error: "+c.Failed)
	}
	v.OK = v.RateOK && v.CountersOK && c.Failed == ""
	if (c.OtherLoad || c.BaselineOtherLoad) && v.CountersOK && c.Failed == "" && !(v.Binding && v.RateOK) {
		where := "this cell's window"
		switch {
		case c.OtherLoad && c.BaselineOtherLoad:
			where = "this cell's window and its uncapped one"
		case c.BaselineOtherLoad:
			where = "its uncapped window"
		}
		v.OK, v.Inconclusive = false, true
		v.Reasons = append([]string{"another process loaded the device during " + where + ": its rate cannot be told from the cap's, not judged"}, v.Reasons...)
	}
	return v
}

// judgeRate sets the expectation at v.ReadShare and whether the measured
// IOPS meet it, within the tolerance plus v.CarryPct.
func (v *Verdict) judgeRate(l Limit, c Cell, k uint64, tolerancePct float64) {
	capped, binding := ExpectedShare(l, v.ReadShare, c.BlockSize, int(k), c.UncappedIOPS)
	model, _ := ExpectedShare(l, v.ReadShare, c.BlockSize, int(k), 0)
	v.Binding, v.ExpectedIOPS = binding, capped
	tol := (tolerancePct + v.CarryPct) / 100
	allowed := fmt.Sprintf("tolerance %g %%", tolerancePct)
	if v.CarryPct > 0 {
		allowed += fmt.Sprintf(" + %.1f %% throttle carry-over", v.CarryPct)
	}
	switch {
	case math.IsInf(capped, 1):
		// Nothing limits this pattern and its uncapped figure is unknown.
		v.RateOK = true
		v.ExpectedIOPS = 0
	case binding:
		v.DeviationPct = deviation(c.MeasuredIOPS, capped)
		v.RateOK = math.Abs(v.DeviationPct) <= tol*100
		if !v.RateOK {
			reason := fmt.Sprintf("measured %.0f IOPS, the cap model expects %.0f (%+.1f %%, %s)",
				c.MeasuredIOPS, capped, v.DeviationPct, allowed)
			if v.DeviationPct < 0 && c.UncappedIOPS > 0 {
				// Below the model: the cap, or a device slower now than
				// when its uncapped figure was measured.
				reason += fmt.Sprintf("; the uncapped run measured %.0f", c.UncappedIOPS)
			}
			v.Reasons = append(v.Reasons, reason)
		}
	default:
		// capped is min(model, uncapped): between 90 % and 100 % of the
		// uncapped figure the model still sets the expectation.
		v.DeviationPct = deviation(c.MeasuredIOPS, capped)
		low := capped * (1 - tol)
		v.RateOK = c.MeasuredIOPS >= low && c.MeasuredIOPS <= model*(1+tol)
		switch {
		case c.MeasuredIOPS < low:
			v.Reasons = append(v.Reasons, fmt.Sprintf("measured %.0f IOPS where the cap should not bind: %.1f %% below the expected %.0f (uncapped %.0f, cap model %.0f; %s)",
				c.MeasuredIOPS, -v.DeviationPct, capped, c.UncappedIOPS, model, allowed))
		case c.MeasuredIOPS > model*(1+tol):
			v.Reasons = append(v.Reasons, fmt.Sprintf("measured %.0f IOPS, above the cap model's %.0f (%+.1f %%, %s)",
				c.MeasuredIOPS, model, deviation(c.MeasuredIOPS, model), allowed))
		}
	}
}

// judgeCounters compares the kernel's counts for the cgroup with the
// requests iomatrix issued (k per I/O), direction by direction.
func (v *Verdict) judgeCounters(c Cell, k uint64) {
	v.ExpectedRequests = Requests{Reads: k * c.Issued.Reads, Writes: k * c.Issued.Writes}
	if c.Kernel == nil {
		v.Reasons = append(v.Reasons, "the cgroup's I/O counters could not be read")
		return
	}
	v.CountersOK = true
	for _, d := range []struct {
		name             string
		want, got        uint64
		foreign, missing *uint64
	}{
		{"reads", v.ExpectedRequests.Reads, c.Kernel.Reads, &v.Foreign.Reads, &v.Missing.Reads},
		{"writes", v.ExpectedRequests.Writes, c.Kernel.Writes, &v.Foreign.Writes, &v.Missing.Writes},
	} {
		if d.got > d.want {
			*d.foreign = d.got - d.want
		} else {
			*d.missing = d.want - d.got
		}
		if diff := *d.foreign + *d.missing; float64(diff) > CounterTolerance*float64(d.want) {
			v.CountersOK = false
			v.Reasons = append(v.Reasons, counterReason(d.name, d.want, d.got, k))
		}
	}
}

func counterReason(dir string, want, got, k uint64) string {
	per := ""
	if k > 1 {
		per = fmt.Sprintf(" (%d requests per I/O)", k)
	}
	if got > want {
		return fmt.Sprintf("the kernel charged the cgroup %d %s, iomatrix issued %d%s: %d foreign", got, dir, want, per, got-want)
	}
	return fmt.Sprintf("the kernel counted %d %s, iomatrix issued %d%s: %d escaped the cgroup's count", got, dir, want, per, want-got)
}

// CarryAllowance is the fraction of the cap model by which a window of
// length runtime may deviate beyond the tolerance, for read share r under
// l on a disk whose throttle slice is slice (0: ThrottleSlice):
// slice/runtime when the pattern both reads and writes and a direction it
// uses is capped, else 0.
//
// blk-throttle keeps what a direction did not use of its budget for a
// slice after the one it belongs to. In a pattern that mixes directions, a
// direction waits whenever the stream waits on the other one's cap, saves
// budget, and spends it later: over a window, a direction moves up to one
// slice of its budget more (or, saving at the end, less) than its cap
// times the window, and the cell's IOPS follow (measured: 423 reads in a
// 1 s window under riops=400, at 50 % reads and QD1). A pattern in one
// direction never waits on the other and gets no allowance; the carry-over
// is bounded, so a longer window shrinks it (1 % at 10 s; 0.2 % there
// with ShortSlice).
func CarryAllowance(l Limit, r float64, runtime, slice time.Duration) float64 {
	if runtime <= 0 || r <= 0 || r >= 1 {
		return 0
	}
	if l.ReadIOPS == 0 && l.ReadBPS == 0 && l.WriteIOPS == 0 && l.WriteBPS == 0 {
		return 0
	}
	if slice <= 0 {
		slice = ThrottleSlice
	}
	return float64(slice) / float64(runtime)
}

func deviation(measured, expected float64) float64 {
	if expected <= 0 {
		return 0
	}
	return (measured/expected - 1) * 100
}

// Throttle timing. blk-throttle (behind v1 blkio.throttle.* and v2 io.max)
// hands out a cap's budget a slice at a time: 100 ms (HZ/10 jiffies), or
// ShortSlice on some kernels' non-rotational disks. The whole budget of a
// slice is available at its start, so a capped workload completes its I/O
// in bursts at slice boundaries. Two consequences for a measurement:
//
//   - a window whose edges sit at slice boundaries counts one burst more or
//     less depending on a few milliseconds of timer jitter (±5 % of a 2 s
//     window); a window that starts half a slice after one and lasts whole
//     slices counts exactly its share;
//   - a slice starts when the group has been idle for more than a slice and
//     I/O arrives, or when its limits are written; a workload that starts
//     in the middle of a running slice gets that slice's remaining budget
//     at once: the start-up burst (+10 % over a 1 s window at 1000 IOPS).
//
// So a capped pattern starts only after the group has been quiet for
// ThrottleQuiet (a fresh slice begins with its first I/O), and its ramp is
// at least MinCappedRamp and ends half a slice into one (AlignWindow).
const (
	// ThrottleSlice is the slice of every disk on most kernels, and the
	// grid windows are aligned to: a multiple of ShortSlice too, so a
	// window aligned to it is aligned whichever slice the disk has.
	ThrottleSlice = 100 * time.Millisecond
	// ShortSlice (HZ/50) is the slice of non-rotational disks on kernels
	// built with CONFIG_BLK_DEV_THROTTLING_LOW, and on those from its
	// removal (6.9) until a fix of late 2025 restored 100 ms for every
	// disk. A 6.18 kernel slices a non-rotational loop device by 100 ms
	// (measured: under riops=500, 50 reads complete every 100 ms), so a
	// cell's slice is the kernel's, not the disk kind's.
	ShortSlice    = 20 * time.Millisecond
	ThrottleQuiet = 300 * time.Millisecond // more than two slices: the last one has expired
	MinCappedRamp = 250 * time.Millisecond
)

// WindowRule says in a sentence how a capped cell is measured.
var WindowRule = fmt.Sprintf("each cell starts after the cgroup was quiet for %s (a fresh throttle slice); "+
	"its ramp, at least %s, ends mid-slice and its runtime is whole %s slices: the throttle's start-up burst is not judged",
	ThrottleQuiet, MinCappedRamp, ThrottleSlice)

// AlignWindow returns the ramp and runtime a capped measurement uses: the
// ramp at least MinCappedRamp and ending half a ThrottleSlice after a slice
// boundary (counted from the first I/O), the runtime a whole number of
// slices. The slice boundaries of a 20 ms slice fall on those of a 100 ms
// one, so half of 100 ms is also mid-slice there.
func AlignWindow(ramp, runtime time.Duration) (time.Duration, time.Duration) {
	half := ThrottleSlice / 2
	ramp = max(ramp, MinCappedRamp)
	if r := (ramp - half) % ThrottleSlice; r != 0 {
		ramp += ThrottleSlice - r
	}
	if r := runtime % ThrottleSlice; r != 0 {
		runtime += ThrottleSlice - r
	}
	return ramp, max(runtime, ThrottleSlice)
}
