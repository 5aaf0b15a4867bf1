package iotest

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Overlapping measurements hold the collector off until the last one
// ends, then the previous settings come back exactly.
func TestHoldRuntimeNests(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	procs := runtime.GOMAXPROCS(0)
	holdRuntime(1)
	holdRuntime(procs + 3)
	if n := runtime.GOMAXPROCS(0); n != procs+3 {
		t.Errorf("GOMAXPROCS %d while held for %d", n, procs+3)
	}
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent %d while held", p)
	}
	if l := debug.SetMemoryLimit(-1); l >= 1<<40 || l < 64<<20 {
		t.Errorf("memory limit %d while held, want current use + 64 MiB", l)
	}
	releaseRuntime()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent %d while still held once", p)
	}
	releaseRuntime()
	if p := gcPercent(); p != 77 {
		t.Errorf("GC percent %d after release, want 77", p)
	}
	if l := debug.SetMemoryLimit(-1); l != 1<<40 {
		t.Errorf("memory limit %d after release, want %d", l, int64(1<<40))
	}
	if n := runtime.GOMAXPROCS(0); n != procs {
		t.Errorf("GOMAXPROCS %d after release, want %d", n, procs)
	}
}
