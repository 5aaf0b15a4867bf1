package capverify

import (
	"time"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/results"
)

// Check judges a capped result against the cap in force (Judge), with
// its uncapped baseline (its IOPS, and whether another process loaded
// the device then) and the disk's request limits, and returns the
// judgement a results file records.
func Check(c *results.Cap, res, base results.Result, disk sysfs.BlockDevice, tolerancePct float64) *results.CapCheck {
	p := res.Pattern
	cell := Cell{
		ReadPct: p.ReadPct, BlockSize: p.BlockSize, RequestsPerIO: disk.RequestsPerIO(p.BlockSize),
		UncappedIOPS: base.Total.IOPS, MeasuredIOPS: res.Total.IOPS,
		Window:    results.Counts{Reads: res.Read.IOs, Writes: res.Write.IOs},
		Issued:    res.Completed,
		Kernel:    res.CgroupIOs,
		Runtime:   time.Duration(res.DurationNS),
		OtherLoad: res.Device.OtherLoad(0, 0), BaselineOtherLoad: base.Device.OtherLoad(0, 0),
		CPUWait: res.CPUWait.Wait(time.Duration(res.DurationNS)),
	}
	if res.Error != nil {
		cell.Failed = res.Error.Error()
	}
	v := Judge(LimitsOf(c), cell, tolerancePct)
	return &v
}

// CellJudge is the check cap verify applies to each capped result of a
// cap on the device of capInfo, which sys describes (its request limits:
// one request per I/O when they cannot be read), against baseline, the
// uncapped results by name: it records its judgement in the result.
func CellJudge(sys sysfs.FS, capInfo *results.Cap, tolerancePct float64, baseline map[string]results.Result) func(*results.Result) {
	var disk sysfs.BlockDevice // no limits known: one request per I/O
	if dev, err := sysfs.ParseDevNum(capInfo.Device); err == nil {
		if bd, err := sys.BlockDevice(dev); err == nil {
			disk = bd
		}
	}
	return func(res *results.Result) {
		res.CapCheck = Check(capInfo, *res, baseline[res.Name], disk, tolerancePct)
	}
}
