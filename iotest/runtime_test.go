package iotest

import (
	"runtime"
	"runtime/debug"
	"slices"
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

// Polling pays only where it buys more I/Os at no more than their price
// in the ring's CPU time per I/O: the measured cases of a buffered loop
// device (polling: 14 % more I/Os, 44 % more CPU per I/O) and of zram.
func TestSpinPays(t *testing.T) {
	for _, c := range []struct {
		name       string
		done       [2]uint64
		cpuPerIONs [2]float64
		want       bool
	}{
		{"buffered loop: dearer than it buys", [2]uint64{343000, 447000}, [2]float64{1325, 1908}, false},
		{"cheap and faster", [2]uint64{300000, 400000}, [2]float64{2000, 2200}, true},
		{"no faster", [2]uint64{300000, 303000}, [2]float64{2000, 2000}, false},
		{"polling did nothing", [2]uint64{300000, 0}, [2]float64{2000, 0}, false},
		{"sleeping did nothing", [2]uint64{0, 1000}, [2]float64{0, 2000}, true},
	} {
		span := [2]int64{1e9, 1e9}
		cpu := [2]int64{int64(c.cpuPerIONs[0] * float64(c.done[0])), int64(c.cpuPerIONs[1] * float64(c.done[1]))}
		if got := spinPays(c.done, span, cpu); got != c.want {
			t.Errorf("%s: pays %v, want %v", c.name, got, c.want)
		}
	}
}

// The judge alternates epochs with polling and without, in an order that
// flips each measurement, decides, then holds its choice.
func TestSpinJudgeEpochs(t *testing.T) {
	var cpu int64
	j := &spinJudge{on: true, flip: true, cpuNow: func() int64 { return cpu }}
	j.begin(0)
	now := int64(0)
	var modes []bool
	// Polling epochs complete twice as many I/Os at the same CPU: it pays.
	for range spinEpochs {
		modes = append(modes, j.on)
		n := uint32(100)
		if j.on {
			n = 200
		}
		now += int64(spinEpoch)
		cpu += int64(spinEpoch) / 2
		j.pays(now-1, n)
		j.pays(now, 0)
	}
	if !slices.Equal(modes, []bool{true, false, true, false}) || !j.on || j.probing != spinEpochs {
		t.Fatalf("epochs %v, then on %v (probing %d): want alternation from on, then polling held", modes, j.on, j.probing)
	}
	if j.pays(now+int64(spinHold)/2, 10) != true {
		t.Error("the choice was not held")
	}
	j.pays(now+int64(spinHold)+1, 10)
	if j.on || j.probing != 0 {
		t.Errorf("after the hold: on %v, probing %d; want a new measurement starting without polling", j.on, j.probing)
	}
}
