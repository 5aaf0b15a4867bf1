package main

import (
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
func TestHoldCollectorNests(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	holdCollector()
	holdCollector()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent %d while held", p)
	}
	if l := debug.SetMemoryLimit(-1); l >= 1<<40 || l < 64<<20 {
		t.Errorf("memory limit %d while held, want current use + 64 MiB", l)
	}
	releaseCollector()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent %d while still held once", p)
	}
	releaseCollector()
	if p := gcPercent(); p != 77 {
		t.Errorf("GC percent %d after release, want 77", p)
	}
	if l := debug.SetMemoryLimit(-1); l != 1<<40 {
		t.Errorf("memory limit %d after release, want %d", l, int64(1<<40))
	}
}
