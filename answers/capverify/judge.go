package capverify

import (
	"fmt"
	"math"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/results"
)

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
	Window results.Counts
	// Issued counts the I/Os iomatrix completed over the whole pattern
	// (ramp and drain included): the span the kernel's counts cover.
	Issued results.Counts
	// Kernel is the cgroup's count over the same span; nil when the
	// kernel's counters could not be read.
	Kernel *results.Counts
	// Failed is the I/O error that ended the pattern, if any.
	Failed string
	// Runtime is the length of the measured window; 0 when unknown (no
	// carry-over allowance is then given).
	Runtime time.Duration
	// Slice is blk-throttle's slice on the cell's disk when known; 0 is
	// cgroup.ThrottleSlice, the slice of every disk on most kernels and the
	// longer one, which allows the more carry-over. The disk's kind alone
	// does not tell: see cgroup.ShortSlice. Under a volume's provisioned
	// limits it is not used: no throttle of the kernel's holds the cell.
	Slice time.Duration
	// OtherLoad and BaselineOtherLoad: another process loaded the device
	// during the capped window, or during the uncapped one the expectation
	// rests on (results.DevStats.OtherLoad).
	OtherLoad, BaselineOtherLoad bool
	// CPUWait is how long the window's I/O may have waited for a CPU
	// (results.CPUWait.Wait): iomatrix's I/O threads and the kernel's
	// threads that serve the target; 0 when unknown.
	CPUWait time.Duration
}

// Judge decides whether the cap l holds in cell c, with the measured IOPS
// allowed tolerancePct % from the expectation. The same rules judge a
// cgroup's cap and a volume's provisioned limits, but for what only a
// cgroup has (see Provisioned, below):
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
//     neither;
//   - a cell off its expectation is inconclusive, never failed, when its
//     wait for a CPU could explain it (CPUExplains). At QD1 under
//     riops=400 the cap binds only while an I/O takes under 2.5 ms, and
//     a thread that waits for a CPU makes it take longer: the cap cannot
//     bind, whatever it is worth; and a stream that waited leaves budget
//     unused, which the throttle lets it spend at once when it runs again.
//
// Under a volume's provisioned limits (l.Provisioned) the volume's own
// limiter, not the kernel's throttle, holds the cell, and there is no
// figure without it (UncappedIOPS is 0: every limited cell binds):
//   - a cell below the model (less the tolerance) does less than the
//     volume's limits and fails, unless a deeper queue of the same
//     pattern reaches them (JudgeDepths);
//   - a cell above it (plus the tolerance) is Above: the volume is
//     bursting, or not limited there, and its limits cannot be judged;
//     neither OK nor failed;
//   - no cgroup counts the requests: the counter rule does not apply;
//   - the throttle's slices mean nothing: no carry-over is allowed
//     (CarryAllowance) and no rule of slices excuses a starved cell
//     (CPUExplains); the rules of the CPU's wait and of another
//     process's load hold as for a cgroup, since a volume's bucket, too,
//     lets a stream that waited spend what it saved, and a neighbour
//     draws on the same limits.
func Judge(l Limits, c Cell, tolerancePct float64) results.CapCheck {
	k := uint64(max(c.RequestsPerIO, 1))
	share := float64(c.ReadPct) / 100
	if n := c.Window.Reads + c.Window.Writes; n > 0 {
		share = float64(c.Window.Reads) / float64(n)
	}
	slice := c.Slice
	if l.Provisioned {
		slice = noSlice
	}
	v := results.CapCheck{ReadShare: share, CarryPct: CarryAllowance(l, share, c.Runtime, slice) * 100,
		TolerancePct: tolerancePct, UncappedIOPS: c.UncappedIOPS, RequestsPerIO: int(k)}
	b := judgeRate(&v, l, c, tolerancePct)
	if l.Provisioned {
		// Nothing to compare: what a volume's provider counts is not
		// shown to the host. The requests it was sent are recorded.
		v.CountersOK = true
		v.ExpectedRequests = results.Counts{Reads: k * c.Issued.Reads, Writes: k * c.Issued.Writes}
	} else {
		judgeCounters(&v, c, k)
	}
	if c.Failed != "" {
		v.Reasons = append(v.Reasons, "I/O error: "+c.Failed)
		v.Above = false
	}
	v.OK = v.RateOK && v.CountersOK && c.Failed == ""
	if v.CountersOK && c.Failed == "" {
		judgeInconclusive(&v, c, b, slice)
	}
	// Recorded to the precision a results file keeps.
	v.ExpectedIOPS = math.Round(v.ExpectedIOPS*100) / 100
	v.DeviationPct = math.Round(v.DeviationPct*10000) / 10000
	v.ReadShare = math.Round(v.ReadShare*1e6) / 1e6
	v.CarryPct = math.Round(v.CarryPct*100) / 100
	v.CPUWaitPct = math.Round(v.CPUWaitPct*100) / 100
	return v
}

// judgeInconclusive makes a cell whose counters hold and whose I/O did
// not fail inconclusive where its rate may have been moved by another
// process's load on the device or by its wait for a CPU (see Judge),
// with the reasons first.
func judgeInconclusive(v *results.CapCheck, c Cell, b Bounds, slice time.Duration) {
	var why []string
	if (c.OtherLoad || c.BaselineOtherLoad) && !(v.Binding && v.RateOK) {
		where := "this cell's window"
		switch {
		case c.OtherLoad && c.BaselineOtherLoad:
			where = "this cell's window and its uncapped one"
		case c.BaselineOtherLoad:
			where = "its uncapped window"
		}
		v.OtherLoad = true
		why = append(why, "another process loaded the device during "+where+": its rate cannot be told from the cap's, not judged")
	}
	if c.Runtime > 0 {
		v.CPUWaitPct = 100 * float64(min(c.CPUWait, c.Runtime)) / float64(c.Runtime)
	}
	if !v.RateOK {
		if how, ok := CPUExplains(c.MeasuredIOPS, c.Runtime, c.CPUWait, slice, b); ok {
			v.Starved = true
			why = append(why, fmt.Sprintf("CPU wait: the run waited %.0f %% of the window for a CPU (iomatrix's I/O threads and the kernel's threads serving the target); "+
				"%s: a busy CPU, not the cap, may have set the rate, not judged", v.CPUWaitPct, how))
		}
	}
	if len(why) > 0 {
		// Above its limits on data that moved: not judged either.
		v.OK, v.Inconclusive, v.Above = false, true, false
		v.Reasons = append(why, v.Reasons...)
	}
}

// noSlice is the slice of a cell no throttle of the kernel's holds (a
// volume's provisioned limits): the rules of slices do not apply.
const noSlice time.Duration = -1

// QuietCPUWait is the share of a window that the wait must reach before
// it explains anything: the sum counts every kernel thread (an upper
// bound), so an idle machine's own wakeups read 0.7–1.6 % of the window
// (measured on this project's 2-CPU machines), and at a queue depth
// above one a thread's short wait leaves I/Os in flight for the throttle
// to release. A cap that misses its model by less than that, on a quiet
// CPU, still fails.
const QuietCPUWait = 0.05

// Bounds are what a cell's IOPS are judged against: at least Floor and
// at most Ceiling, Model being the cap model's IOPS.
type Bounds struct{ Floor, Ceiling, Model float64 }

// CPUExplains tells whether the wait for a CPU of a window of length
// window that did iops, under a throttle whose slice is slice (0:
// cgroup.ThrottleSlice; negative: no throttle of the kernel's, a
// volume's provisioned limits, where the first rule does not apply),
// could explain its rate being out of b, and says how:
//   - the wait left less than two slices of the window: the throttle
//     hands out its budget slice by slice, and a stream that ran for
//     less than two of them, in pieces spread over the window's slices,
//     did not run long enough for its rate to be the cap's: a QD1 cell
//     under riops=400 that waited 88.6 % of its 1 s window, beside busy
//     loops at nice -20 and a loaded test suite, did 36 I/Os, 316 IOPS
//     over the 114 ms it ran;
//   - below the floor, the wait left less than half the window: a stream
//     that ran for so little, in pieces, fell short of its cap's rate
//     even over the time it ran. With busy loops on both CPUs, a QD1
//     cell under riops=400 on a RAM-backed loop device ran 207 ms of its
//     1 s window and did 66 I/Os, 319 IOPS over that time, and the
//     one above 316: the throttle's budget runs on the clock, slice by
//     slice, whether the stream can spend it or not, and each piece
//     pays the wake-ups of the I/O's whole path, which the waits summed
//     do not hold (the loop device's worker and the throttle's
//     dispatch wait for one another);
//   - below the floor otherwise: the I/Os it did, over the window less
//     the wait, reach the floor (the wait filled the window: any rate);
//   - above the ceiling: the I/Os beyond it are no more than the cap
//     model grants over the wait. A stream that waits for a CPU leaves
//     the throttle's budget unused, and the throttle lets it spend what it
//     saved, or starts a fresh slice with a slice's budget at once, when
//     it runs again: measured on a RAM-backed loop device with busy loops
//     on both CPUs, 432 IOPS in a 1 s window under riops=400, the child
//     having waited 78 % of it.
//
// The wait is an upper bound of the time the I/O's path spent waiting
// (results.CPUWait), so the rule never fails a cell the CPU may have
// moved; a cell whose I/O did not wait, or waited less than
// QuietCPUWait of its window, is never explained.
func CPUExplains(iops float64, window, wait, slice time.Duration, b Bounds) (how string, ok bool) {
	if window <= 0 || wait <= 0 || float64(wait) < QuietCPUWait*float64(window) || iops >= b.Floor && iops <= b.Ceiling {
		return "", false
	}
	if slice == 0 {
		slice = cgroup.ThrottleSlice
	}
	if left := window - wait; slice > 0 && left < 2*slice && wait < window {
		return fmt.Sprintf("it ran %v of the window, less than two of the throttle's %v slices: too little to judge its rate by", left.Round(time.Millisecond), slice), true
	} else if iops < b.Floor && left < window/2 && wait < window {
		return fmt.Sprintf("it ran %v of the window, less than half of it, in pieces spread over the window: too little to judge a shortfall by", left.Round(time.Millisecond)), true
	}
	switch {
	case iops < b.Floor:
		rate := UnstarvedIOPS(iops, window, wait)
		if math.IsInf(rate, 1) {
			return "the wait filled the window", true
		}
		return fmt.Sprintf("its I/Os over the rest of the window make %.0f IOPS, at least the %.0f it had to reach", rate, b.Floor), rate >= b.Floor
	case iops > b.Ceiling:
		saved := b.Model * float64(min(wait, window)) / float64(window)
		return fmt.Sprintf("the %.0f IOPS beyond the %.0f allowed are no more than the cap's budget over the time it waited, %.0f IOPS of the window, "+
			"which the limiter lets a stream spend once it runs again", iops-b.Ceiling, b.Ceiling, saved), iops-b.Ceiling <= saved
	}
	return "", false
}

// UnstarvedIOPS is the rate of the I/Os a window of length window did at
// iops over the window less wait, the time they may have waited for a
// CPU: +Inf when the wait filled the window, iops when there was none.
func UnstarvedIOPS(iops float64, window, wait time.Duration) float64 {
	switch {
	case window <= 0 || wait <= 0:
		return iops
	case wait >= window:
		return math.Inf(1)
	}
	return iops * float64(window) / float64(window-wait)
}

// judgeRate sets the expectation at v.ReadShare and whether the measured
// IOPS meet it, within the tolerance plus v.CarryPct, and returns the
// bounds they were held to (all +Inf when nothing limits the pattern and
// its uncapped figure is unknown).
func judgeRate(v *results.CapCheck, l Limits, c Cell, tolerancePct float64) Bounds {
	k := v.RequestsPerIO
	capped, binding := ExpectedShare(l, v.ReadShare, c.BlockSize, k, c.UncappedIOPS)
	model, _ := ExpectedShare(l, v.ReadShare, c.BlockSize, k, 0)
	v.Binding, v.ExpectedIOPS = binding, capped
	tol := (tolerancePct + v.CarryPct) / 100
	allowed := fmt.Sprintf("tolerance %g %%", tolerancePct)
	if v.CarryPct > 0 {
		allowed += fmt.Sprintf(" + %.1f %% throttle carry-over", v.CarryPct)
	}
	b := Bounds{Floor: capped * (1 - tol), Ceiling: model * (1 + tol), Model: model}
	switch {
	case math.IsInf(capped, 1):
		// Nothing limits this pattern and its uncapped figure is unknown.
		v.RateOK = true
		v.ExpectedIOPS = 0
	case binding && l.Provisioned:
		v.DeviationPct = deviation(c.MeasuredIOPS, capped)
		v.RateOK = math.Abs(v.DeviationPct) <= tol*100
		switch {
		case v.DeviationPct > tol*100:
			v.Above = true
			v.Reasons = append(v.Reasons, fmt.Sprintf("measured %.0f IOPS, above the %.0f the provisioned limits allow (%+.1f %%, %s): bursting or uncapped, "+
				"the limits cannot be judged while the volume does more", c.MeasuredIOPS, capped, v.DeviationPct, allowed))
		case !v.RateOK:
			v.Reasons = append(v.Reasons, fmt.Sprintf("measured %.0f IOPS, the provisioned limits allow %.0f (%+.1f %%, %s): the volume does less than its limits",
				c.MeasuredIOPS, capped, v.DeviationPct, allowed))
		}
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
		v.RateOK = c.MeasuredIOPS >= b.Floor && c.MeasuredIOPS <= b.Ceiling
		switch {
		case c.MeasuredIOPS < b.Floor:
			v.Reasons = append(v.Reasons, fmt.Sprintf("measured %.0f IOPS where the cap should not bind: %.1f %% below the expected %.0f (uncapped %.0f, cap model %.0f; %s)",
				c.MeasuredIOPS, -v.DeviationPct, capped, c.UncappedIOPS, model, allowed))
		case c.MeasuredIOPS > b.Ceiling:
			v.Reasons = append(v.Reasons, fmt.Sprintf("measured %.0f IOPS, above the cap model's %.0f (%+.1f %%, %s)",
				c.MeasuredIOPS, model, deviation(c.MeasuredIOPS, model), allowed))
		}
	}
	return b
}

// judgeCounters compares the kernel's counts for the cgroup with the
// requests iomatrix issued (k per I/O), direction by direction.
func judgeCounters(v *results.CapCheck, c Cell, k uint64) {
	v.ExpectedRequests = results.Counts{Reads: k * c.Issued.Reads, Writes: k * c.Issued.Writes}
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
		{"reads", v.ExpectedRequests.Reads, c.Kernel.Reads, &v.ForeignRequests.Reads, &v.MissingRequests.Reads},
		{"writes", v.ExpectedRequests.Writes, c.Kernel.Writes, &v.ForeignRequests.Writes, &v.MissingRequests.Writes},
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
// l on a disk whose throttle slice is slice (0: cgroup.ThrottleSlice):
// slice/runtime when the pattern both reads and writes and a direction it
// uses is capped, else 0. A volume's provisioned limits have none: the
// carry-over is blk-throttle's, a provider's limiter has no slices.
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
// with cgroup.ShortSlice).
func CarryAllowance(l Limits, r float64, runtime, slice time.Duration) float64 {
	if runtime <= 0 || r <= 0 || r >= 1 || l.Provisioned || slice < 0 {
		return 0
	}
	if l.ReadIOPS == 0 && l.ReadBPS == 0 && l.WriteIOPS == 0 && l.WriteBPS == 0 {
		return 0
	}
	if slice == 0 {
		slice = cgroup.ThrottleSlice
	}
	return float64(slice) / float64(runtime)
}

func deviation(measured, expected float64) float64 {
	if expected <= 0 {
		return 0
	}
	return (measured/expected - 1) * 100
}
