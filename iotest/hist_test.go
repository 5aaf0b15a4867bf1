package iotest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/results"
)

func TestStatsAccountWindow(t *testing.T) {
	c := newTestClock(1e9, 3e9)
	s := newStats(2)
	s.window = 1e9
	s.account(c, false, 4096, 0, 5e8)     // ramp: counted only as completed
	s.account(c, true, 4096, 1e9, 1.2e9)  // window, second 0
	s.account(c, false, 4096, 2e9, 2.5e9) // window, second 1
	s.account(c, false, 4096, 2e9, 3e9)   // drain after the end
	if s.readIOs != 1 || s.writeIOs != 1 || s.allReads != 3 || s.allWrites != 1 {
		t.Fatalf("window ios r%d w%d, all r%d w%d", s.readIOs, s.writeIOs, s.allReads, s.allWrites)
	}
	if s.timeline[0] != 1 || s.timeline[1] != 1 {
		t.Fatalf("timeline %v", s.timeline)
	}
	if s.writeHist.Max() != 2e8 || s.readHist.Count() != 1 {
		t.Fatalf("latency not recorded from submit to completion")
	}
}

// mixedSamples records reads and writes from distributions an order of
// magnitude apart, each into its own histogram and all into a third.
func mixedSamples() (reads, writes, union *hist.Histogram) {
	r := rand.New(rand.NewPCG(7, 8))
	reads, writes, union = new(hist.Histogram), new(hist.Histogram), new(hist.Histogram)
	for range 70_000 { // reads: uniform over 50..150 µs
		v := int64(50_000 + r.Float64()*100_000)
		reads.Record(v)
		union.Record(v)
	}
	for range 30_000 { // writes: uniform over 0.5..2 ms
		v := int64(500_000 + r.Float64()*1_500_000)
		writes.Record(v)
		union.Record(v)
	}
	return reads, writes, union
}

func TestBuildResultTotalLatency(t *testing.T) {
	reads, writes, union := mixedSamples()
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 4, Jobs: 1}
	s := newStats(1)
	s.readHist, s.writeHist = *reads, *writes
	s.readIOs, s.writeIOs = reads.Count(), writes.Count()
	r := buildResult(p, EnginePsync, time.Now(), time.Second, Options{Runtime: time.Second}, s)
	if want := results.Summarize(union).Figures(); r.Total.LatNS == nil || *r.Total.LatNS != want {
		t.Fatalf("mixed: total lat_ns %+v, want the union's %+v", r.Total.LatNS, want)
	}
	for _, d := range []struct {
		got  results.Latency
		want *hist.Histogram
	}{{r.Read.LatNS, reads}, {r.Write.LatNS, writes}} {
		h, err := d.got.Histogram()
		if err != nil || h == nil || !h.Equal(d.want) || d.got.Figures() != results.Summarize(d.want).Figures() {
			t.Errorf("a direction's summary or histogram is not its own (%v)", err)
		}
	}

	// One direction: the total is that direction's summary.
	s = newStats(1)
	s.readHist, s.readIOs = *reads, reads.Count()
	p.ReadPct = 100
	r = buildResult(p, EnginePsync, time.Now(), time.Second, Options{Runtime: time.Second}, s)
	if r.Total.LatNS == nil || *r.Total.LatNS != r.Read.LatNS.Figures() {
		t.Errorf("reads only: total lat_ns %+v, read %+v", r.Total.LatNS, r.Read.LatNS)
	}

	// No I/O: nothing to summarize.
	r = buildResult(p, EnginePsync, time.Now(), time.Second, Options{Runtime: time.Second}, newStats(1))
	if r.Total.LatNS != nil {
		t.Errorf("no I/O: total lat_ns %+v", r.Total.LatNS)
	}
}

func newTestClock(rampEnd, end int64) *clock {
	c := &clock{}
	c.rampEnd.Store(rampEnd)
	c.end.Store(end)
	return c
}

// A window moved forward drops what the stream had counted in it, and
// the seconds sealed count from the new start.
func TestStatsRestartWindow(t *testing.T) {
	c := newTestClock(1e9, 10e9)
	s := newStats(9)
	s.window = 1e9
	s.account(c, false, 4096, 1e9, 1.5e9) // second 0
	s.account(c, false, 4096, 2e9, 2.5e9) // second 1: second 0 sealed
	if s.sealed.Load() != 1 || s.readIOs != 2 {
		t.Fatalf("sealed %d, ios %d", s.sealed.Load(), s.readIOs)
	}
	c.rampEnd.Store(4e9)
	s.account(c, false, 4096, 3e9, 3.5e9) // now ramp
	s.account(c, true, 4096, 4e9, 4.2e9)  // the new window's second 0
	if s.readIOs != 0 || s.writeIOs != 1 || s.allReads != 3 || s.timeline[0] != 1 || s.timeline[1] != 0 {
		t.Errorf("after the restart: r%d w%d all r%d, timeline %v", s.readIOs, s.writeIOs, s.allReads, s.timeline)
	}
	if s.sealed.Load() != 0 || s.sealedIn.Load() != 4e9 || s.readHist.Count() != 0 {
		t.Errorf("sealed %d in %d, read histogram %d", s.sealed.Load(), s.sealedIn.Load(), s.readHist.Count())
	}
}
