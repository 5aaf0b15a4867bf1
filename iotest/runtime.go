package iotest

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// The process-wide runtime settings of a measurement, held by Run: so
// every caller of the engine (the CLI, its capped child, the soak script)
// measures under the same ones.
//
// Enough Ps: blocked syscalls keep their P until sysmon notices; with a P
// per I/O stream nobody waits for that hand-off.
//
// The garbage collector held off. The
// engine allocates nothing per I/O, so during a measurement the collector
// would run only on the runtime's two-minute timer: a pause inside the
// measured window each time, and memory touched anew by each cycle (RSS
// steps of tens to hundreds of KiB in a long run). A memory limit 64 MiB
// above the current use stays as a safety net: should anything allocate
// heavily, the collector runs anyway.
//
// Overlapping measurements share the settings: the first holds them, each
// raises the Ps to what it needs, the last one restores what was there.
var measuring struct {
	sync.Mutex
	holders          int
	percent, limitAt int64
	procs            int // GOMAXPROCS before the first hold
}

// holdRuntime applies the settings of a measurement that needs procs Ps.
func holdRuntime(procs int) {
	measuring.Lock()
	defer measuring.Unlock()
	if measuring.holders++; measuring.holders == 1 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		measuring.limitAt = debug.SetMemoryLimit(int64(ms.Sys-ms.HeapReleased) + 64<<20)
		measuring.percent = int64(debug.SetGCPercent(-1))
		measuring.procs = runtime.GOMAXPROCS(0)
	}
	if procs > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(procs)
	}
}

// releaseRuntime ends a hold; the last one restores the settings.
func releaseRuntime() {
	measuring.Lock()
	defer measuring.Unlock()
	if measuring.holders--; measuring.holders > 0 {
		return
	}
	debug.SetGCPercent(int(measuring.percent))
	debug.SetMemoryLimit(measuring.limitAt)
	runtime.GOMAXPROCS(measuring.procs)
}
