package observe

import (
	"math"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/results"
)

func TestTracker(t *testing.T) {
	var tr tracker
	if s := tr.next("a", []uint64{10, 20}, false); s.delta != nil || s.event != "" {
		t.Fatalf("first reading: %+v, want a baseline", s)
	}
	if s := tr.next("a", []uint64{15, 20}, false); s.delta[0] != 5 || s.delta[1] != 0 || s.event != "" {
		t.Fatalf("growth: %+v", s)
	}
	// A counter at the top of the 32-bit range wraps.
	tr.next("a", []uint64{math.MaxUint32 - 5, 20}, false)
	if s := tr.next("a", []uint64{4, 21}, false); s.event != results.EventWrap || s.delta[0] != 10 || s.delta[1] != 1 {
		t.Fatalf("wrap: %+v", s)
	}
	// Any other step back is a reset: the interval counts the new value.
	if s := tr.next("a", []uint64{3, 7}, false); s.event != results.EventReset || s.delta[0] != 3 || s.delta[1] != 7 {
		t.Fatalf("reset: %+v", s)
	}
	// A new identity is a reset even when every counter grew.
	if s := tr.next("b", []uint64{30, 40}, false); s.event != results.EventReset || s.delta[0] != 30 {
		t.Fatalf("new identity: %+v", s)
	}
	if s := tr.next("b", []uint64{31, 41}, true); s.event != results.EventReset || s.delta[0] != 31 {
		t.Fatalf("restarted: %+v", s)
	}
	tr.gone()
	if s := tr.next("b", []uint64{100, 100}, false); s.delta != nil {
		t.Fatalf("after gone: %+v, want a baseline", s)
	}
}

// synthetic feeds a cgroup series three hours of one-second intervals:
// minute m reads (m%10+1)*10 times a second in 4 KiB, except minutes
// 70–129, which read 1000 times a second in 16 KiB; 10 writes a second of
// 8 KiB throughout.
func synthetic(t *testing.T, minutes int) *series {
	t.Helper()
	s := newSeries("erp", "cgroup", "", cgroupLayout, time.Hour, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for i := range minutes * 60 {
		m := i / 60
		reads, size := uint64(m%10+1)*10, uint64(4096)
		if m >= 70 && m < 130 {
			reads, size = 1000, 16384
		}
		s.add(int64(i+1)*1000, 1e6, []uint64{reads, 10, reads * size, 10 * 8192, 0, 0})
	}
	return s
}

func near(got, want, pct float64) bool {
	return math.Abs(got-want) <= math.Abs(want)*pct/100+1e-9
}

func TestSummaryKnownPercentiles(t *testing.T) {
	s := synthetic(t, 180)
	sum := s.summary()
	if sum.Intervals != 10800 || sum.Minutes != 180 || sum.ObservedNS != int64(3*time.Hour) {
		t.Fatalf("counts: %d intervals, %d minutes, %d ns", sum.Intervals, sum.Minutes, sum.ObservedNS)
	}
	// 120 quiet minutes, 12 each at 10…100 reads/s, and 60 at 1000.
	wantMean := (12*60*(10+20+30+40+50+60+70+80+90+100) + 3600*1000.0) / 10800
	if !near(sum.Mean["reads"], wantMean, 1e-9) || sum.Mean["writes"] != 10 {
		t.Errorf("mean reads %v writes %v, want %v and 10", sum.Mean["reads"], sum.Mean["writes"], wantMean)
	}
	pm := sum.PerMinute["reads"]
	if pm.P50 != 80 || pm.P95 != 1000 || pm.P99 != 1000 || pm.Max != 1000 || pm.PrecisionPct != 0 {
		t.Errorf("per-minute reads %+v, want p50 80, p95 p99 max 1000, exact", pm)
	}
	// The per-second values left the window: a histogram's, within its
	// precision.
	ps := sum.PerSecond["reads"]
	if !near(ps.P50, 80, histPrecisionPct) || !near(ps.P95, 1000, histPrecisionPct) || ps.Max != 1000 || ps.PrecisionPct != histPrecisionPct {
		t.Errorf("per-second reads %+v, want p50 80 and p95 1000 within %v %%", ps, histPrecisionPct)
	}
	if ios := sum.PerMinute["ios"]; ios.P50 != 90 {
		t.Errorf("per-minute ios p50 %v, want 90", ios.P50)
	}
	h := sum.BusiestHour
	if h == nil || h.Whole || h.StartMS != 70*60000 || h.EndMS != 130*60000 || h.Start != "2026-12-01T01:10:00Z" {
		t.Fatalf("busiest hour %+v, want minutes 70–130 from 01:10", h)
	}
	if h.Mean["reads"] != 1000 || h.Mean["writes"] != 10 || !near(h.ReadShare, 1000.0/1010, 1e-9) {
		t.Errorf("busiest hour mean %v share %v", h.Mean, h.ReadShare)
	}
	want := []results.SizeClass{{Bytes: 8192, Writes: 36000}, {Bytes: 16384, Reads: 3600000}}
	if len(h.SizeMix) != 2 || h.SizeMix[0] != want[0] || h.SizeMix[1] != want[1] {
		t.Errorf("busiest hour size mix %+v, want %+v", h.SizeMix, want)
	}
	if len(sum.SizeMix) != 3 || sum.SizeMix[0].Bytes != 4096 || sum.SizeMix[0].Reads != 12*60*550 {
		t.Errorf("size mix %+v", sum.SizeMix)
	}
}

func TestSummaryShorterThanAnHour(t *testing.T) {
	s := synthetic(t, 20)
	sum := s.summary()
	h := sum.BusiestHour
	if h == nil || !h.Whole || h.StartMS != 0 || h.EndMS != 20*60000 || !near(h.Mean["reads"], sum.Mean["reads"], 1e-9) {
		t.Fatalf("busiest hour of 20 minutes %+v, want the whole observation", h)
	}
	// Everything is still in the window: per-second percentiles are exact.
	if ps := sum.PerSecond["reads"]; ps.PrecisionPct != 0 || ps.P50 != 50 || ps.Max != 100 {
		t.Errorf("per-second %+v, want exact p50 50, max 100", ps)
	}
}

func TestTimelineWindow(t *testing.T) {
	s := synthetic(t, 180)
	r := s.result(time.Second)
	if n := r.Seconds.Len(); n != 3600 {
		t.Errorf("per-interval timeline holds %d intervals, want the window's hour", n)
	}
	if n := len(s.secs()); n != 3660 {
		t.Errorf("memory holds %d intervals, want an hour and a minute", n)
	}
	if r.Minutes.Len() != 180 || r.Minutes.Rate("rios", 75) != 1000 {
		t.Errorf("minutes %d, minute 75's rate %v", r.Minutes.Len(), r.Minutes.Rate("rios", 75))
	}
	if r.Totals["wios"] != 10*10800 {
		t.Errorf("write total %d", r.Totals["wios"])
	}
}

// A late sample lengthens its interval instead of inflating its rate:
// rates are over the monotonic time each interval took.
func TestDriftCorrected(t *testing.T) {
	s := newSeries("vda", "device", "254:0", deviceLayout, time.Hour, time.Now())
	c := make([]uint64, len(deviceLayout.counters))
	c[deviceLayout.rios] = 100
	s.add(1000, 1e6, c)
	c[deviceLayout.rios] = 160 // the next sample came 1.6 s later
	s.add(2600, 1.6e6, c)
	sum := s.summary()
	if ps := sum.PerSecond["reads"]; ps.P50 != 100 || ps.Max != 100 || sum.Mean["reads"] != 100 {
		t.Errorf("per-interval %+v, mean %v: want 100 reads/s throughout", ps, sum.Mean["reads"])
	}
}
