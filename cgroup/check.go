package cgroup

import (
	"math"
	"time"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
)

// Check judges a capped result against the cap in force (Judge), with
// its uncapped baseline (its IOPS, and whether another process loaded
// the device then) and the disk's request limits, and returns the check
// a results file records.
func Check(c *results.Cap, res, base results.Result, disk sysfs.BlockDevice, tolerancePct float64) *results.CapCheck {
	p := res.Pattern
	cell := Cell{
		ReadPct: p.ReadPct, BlockSize: p.BlockSize, RequestsPerIO: disk.RequestsPerIO(p.BlockSize),
		UncappedIOPS: base.Total.IOPS, MeasuredIOPS: res.Total.IOPS,
		Window:    Requests{Reads: res.Read.IOs, Writes: res.Write.IOs},
		Issued:    Requests{Reads: res.Completed.Reads, Writes: res.Completed.Writes},
		Runtime:   time.Duration(res.DurationNS),
		OtherLoad: res.Device.OtherLoad(0, 0), BaselineOtherLoad: base.Device.OtherLoad(0, 0),
	}
	if k := res.CgroupIOs; k != nil {
		cell.Kernel = &Requests{Reads: k.Reads, Writes: k.Writes}
	}
	if res.Error != nil {
		cell.Failed = res.Error.Error()
	}
	v := Judge(LimitOf(c), cell, tolerancePct)
	counts := func(r Requests) results.Counts { return results.Counts{Reads: r.Reads, Writes: r.Writes} }
	return &results.CapCheck{
		ExpectedIOPS: math.Round(v.ExpectedIOPS*100) / 100, DeviationPct: math.Round(v.DeviationPct*10000) / 10000,
		OK: v.OK, Inconclusive: v.Inconclusive, Binding: v.Binding, UncappedIOPS: cell.UncappedIOPS, ReadShare: math.Round(v.ReadShare*1e6) / 1e6,
		TolerancePct: tolerancePct, CarryPct: math.Round(v.CarryPct*100) / 100,
		RateOK: v.RateOK, CountersOK: v.CountersOK, RequestsPerIO: max(cell.RequestsPerIO, 1),
		ExpectedRequests: counts(v.ExpectedRequests), ForeignRequests: counts(v.Foreign), MissingRequests: counts(v.Missing),
		Reasons: v.Reasons,
	}
}
