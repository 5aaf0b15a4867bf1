package cgroup

import "time"

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
