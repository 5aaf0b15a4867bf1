package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// measure runs one pattern with the garbage collector held off. The
// engine allocates nothing per I/O, so during a measurement the collector
// would run only on the runtime's two-minute timer: a pause inside the
// measured window each time, and memory touched anew by each cycle (RSS
// steps of tens to hundreds of KiB in a long run). A memory limit 64 MiB
// above the current use stays as a safety net: should anything allocate
// heavily, the collector runs anyway.
func measure(ctx context.Context, t *iotest.Target, p results.Pattern, o iotest.Options) (results.Result, error) {
	holdCollector()
	defer releaseCollector()
	return iotest.Run(ctx, t, p, o)
}

// The collector's settings are process-wide: the first of overlapping
// measurements holds it off, the last one restores it.
var collector struct {
	sync.Mutex
	holders          int
	percent, limitAt int64
}

func holdCollector() {
	collector.Lock()
	defer collector.Unlock()
	if collector.holders++; collector.holders > 1 {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	collector.limitAt = debug.SetMemoryLimit(int64(ms.Sys-ms.HeapReleased) + 64<<20)
	collector.percent = int64(debug.SetGCPercent(-1))
}

func releaseCollector() {
	collector.Lock()
	defer collector.Unlock()
	if collector.holders--; collector.holders > 0 {
		return
	}
	debug.SetGCPercent(int(collector.percent))
	debug.SetMemoryLimit(collector.limitAt)
}
