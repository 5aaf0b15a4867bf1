package iotest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/results"
)

func TestHistogramIndexRoundTrip(t *testing.T) {
	// Every value maps to a bucket whose bounds contain it, and buckets are
	// narrow enough for < 1 % error from 1 µs to 10 s.
	for _, v := range []uint64{0, 1, 127, 128, 129, 1000, 4095, 4096, 1e6, 123456789, 1e10, histMaxValue} {
		i := histIndex(v)
		lo, hi := histBounds(i)
		if v < lo || v > hi {
			t.Errorf("value %d in bucket %d [%d, %d]", v, i, lo, hi)
		}
		if v >= 1000 && float64(hi-lo)/2 > 0.01*float64(v) {
			t.Errorf("bucket of %d is [%d, %d]: error above 1%%", v, lo, hi)
		}
	}
	if histIndex(histMaxValue) >= histBuckets {
		t.Fatal("largest value overflows the buckets")
	}
}

func TestHistogramPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	vals := make([]float64, 0, 200_000)
	// Log-uniform latencies from 1 µs to 10 s: every octave of the range.
	for range 200_000 {
		v := math.Exp(math.Log(1e3) + r.Float64()*(math.Log(1e10)-math.Log(1e3)))
		h.Record(int64(v))
		vals = append(vals, math.Trunc(v))
	}
	slices.Sort(vals)
	for _, q := range []float64{1, 10, 50, 90, 99, 99.9, 99.99} {
		exact := vals[int(math.Ceil(q/100*float64(len(vals))))-1]
		got := float64(h.Percentile(q))
		if math.Abs(got-exact)/exact > 0.01 {
			t.Errorf("p%v = %.0f, exact %.0f: error above 1%%", q, got, exact)
		}
	}
	if h.Count() != 200_000 || float64(h.Min()) != vals[0] || float64(h.Max()) != vals[len(vals)-1] {
		t.Errorf("count %d min %d max %d", h.Count(), h.Min(), h.Max())
	}
}

func TestHistogramKnownDistribution(t *testing.T) {
	// 1..1000 µs, each once: pN is N% of the way up.
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(int64(i) * 1000)
	}
	for q, want := range map[float64]float64{50: 500e3, 90: 900e3, 99: 990e3, 100: 1000e3} {
		if got := float64(h.Percentile(q)); math.Abs(got-want)/want > 0.01 {
			t.Errorf("p%v = %.0f, want %.0f ± 1%%", q, got, want)
		}
	}
	if m := h.Mean(); m != 500500 {
		t.Errorf("mean %v, want 500500", m)
	}
	var a, b Histogram
	for i := 1; i <= 1000; i++ {
		if i%2 == 0 {
			a.Record(int64(i) * 1000)
		} else {
			b.Record(int64(i) * 1000)
		}
	}
	a.Merge(&b)
	if a.Summary() != h.Summary() {
		t.Errorf("merged %+v, want %+v", a.Summary(), h.Summary())
	}
	var empty Histogram
	if s := empty.Summary(); s != (results.Latency{}) {
		t.Errorf("empty summary %+v", s)
	}
}

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
func mixedSamples() (reads, writes, union *Histogram) {
	r := rand.New(rand.NewPCG(7, 8))
	reads, writes, union = new(Histogram), new(Histogram), new(Histogram)
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

func TestHistogramMergeIsTheUnion(t *testing.T) {
	reads, writes, union := mixedSamples()
	merged := *reads
	merged.Merge(writes)
	got, want := merged.Summary(), union.Summary()
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"min", float64(got.Min), float64(want.Min)}, {"mean", got.Mean, want.Mean},
		{"p50", float64(got.P50), float64(want.P50)}, {"p90", float64(got.P90), float64(want.P90)},
		{"p99", float64(got.P99), float64(want.P99)}, {"p99.9", float64(got.P999), float64(want.P999)},
		{"p99.99", float64(got.P9999), float64(want.P9999)}, {"max", float64(got.Max), float64(want.Max)},
		{"count", float64(got.Count), float64(want.Count)},
	} {
		if f.got != f.want {
			t.Errorf("merged %s = %v, the union's is %v", f.name, f.got, f.want)
		}
	}
	// 1 % of all I/Os is 3.3 % of the writes: the total p99 sits inside the
	// write distribution, above every read and below the write p99.
	rp, wp := reads.Summary().P99, writes.Summary().P99
	if got.P99 <= rp || got.P99 >= wp {
		t.Errorf("total p99 %d µs is not between the read p99 %d µs and the write p99 %d µs", got.P99/1000, rp/1000, wp/1000)
	}
	if reads.Count() != 70_000 {
		t.Errorf("merging into a copy changed the read histogram: %d values", reads.Count())
	}
}

func TestBuildResultTotalLatency(t *testing.T) {
	reads, writes, union := mixedSamples()
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 4, Jobs: 1}
	s := newStats(1)
	s.readHist, s.writeHist = *reads, *writes
	s.readIOs, s.writeIOs = reads.Count(), writes.Count()
	r := buildResult(p, EnginePsync, time.Now(), time.Second, Options{Runtime: time.Second}, s)
	if r.Total.LatNS == nil || *r.Total.LatNS != union.Summary() {
		t.Fatalf("mixed: total lat_ns %+v, want the union's %+v", r.Total.LatNS, union.Summary())
	}
	if r.Read.LatNS != reads.Summary() || r.Write.LatNS != writes.Summary() {
		t.Error("the total's merge changed a direction's summary")
	}

	// One direction: the total is that direction's summary.
	s = newStats(1)
	s.readHist, s.readIOs = *reads, reads.Count()
	p.ReadPct = 100
	r = buildResult(p, EnginePsync, time.Now(), time.Second, Options{Runtime: time.Second}, s)
	if r.Total.LatNS == nil || *r.Total.LatNS != r.Read.LatNS {
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
