package burst

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/results"
)

// bucketSeries is a credit bucket's per-second rates from a full bucket:
// the peak until k credits above the baseline are spent (k/(peak-base)
// seconds, the step inside a second), then the baseline; each second a
// Poisson count.
func bucketSeries(rng *rand.Rand, peak, base, k float64, seconds int) []float64 {
	burst := k / (peak - base)
	out := make([]float64, seconds)
	for i := range out {
		fast := math.Min(math.Max(burst-float64(i), 0), 1) // the share of second i at the peak
		r := fast*peak + (1-fast)*base
		out[i] = math.Max(0, r+rng.NormFloat64()*math.Sqrt(r))
	}
	return out
}

// The figures of a step land within 3 % of the bucket's (about three
// standard errors of a Poisson count's seconds), however the step falls
// inside its second: the second it fell in is counted
// into the duration by where its rate lies, not into either mean.
func TestFigures(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []float64{30000, 30300, 31000, 31700, 59400, 60000} {
		rates := bucketSeries(rng, 3000, 300, k, 60)
		s, ok := FindStep(rates, DefaultStepRule)
		if !ok {
			t.Fatalf("k %g: no step in %v", k, rates)
		}
		st := Figures(rates, s, 4096)
		want := k / 2700
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"burst IOPS", st.BurstIOPS, 3000}, {"baseline IOPS", st.BaselineIOPS, 300},
			{"duration s", time.Duration(st.DurationNS).Seconds(), want}, {"bucket I/Os", st.BucketIOs, k},
			{"burst I/Os", st.BurstIOs, 3000 * want}, {"bucket bytes", st.BucketBytes, k * 4096},
		} {
			if math.Abs(c.got/c.want-1) > 0.03 {
				t.Errorf("k %g: %s %.1f, want %.1f within 3 %%", k, c.name, c.got, c.want)
			}
		}
	}
}

// The refill is the second run's rate above the first run's baseline
// until it steps down again, over the idle time; a bucket earned back
// whole is a lower bound.
func TestRefill(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	first := results.BurstStep{BaselineIOPS: 300, BucketIOs: 30000}
	rule := DefaultStepRule
	rule.MinBefore = 1
	idle := 30 * time.Second
	rates := bucketSeries(rng, 3000, 300, 9000, 20) // 30 s at 300 a second earned back
	rf := Refill(rates, rule, first, idle, 4096)
	if !rf.Found || math.Abs(rf.IOPS/300-1) > 0.03 || rf.Full {
		t.Errorf("refill %+v; want found, 300 IOPS within 3 %%, not full", rf)
	}
	if math.Abs(rf.BPS/(rf.IOPS*4096)-1) > 1e-9 {
		t.Errorf("refill %g B/s for %g IOPS of 4 KiB", rf.BPS, rf.IOPS)
	}
	rf = Refill(bucketSeries(rng, 3000, 300, 30000, 30), rule, first, idle, 4096)
	if !rf.Found || !rf.Full {
		t.Errorf("a whole bucket earned back: %+v; want found and full", rf)
	}
	if rf = Refill(bucketSeries(rng, 300, 300, 0, 20), rule, first, idle, 4096); rf.Found || rf.IOPS != 0 {
		t.Errorf("nothing earned back: %+v; want not found", rf)
	}
}

// The probe tells the buckets apart by which figure the baseline kept at
// four times the block size.
func TestProbe(t *testing.T) {
	st := results.BurstStep{BaselineIOPS: 300, BaselineBPS: 300 * 4096}
	p := results.Pattern{BlockSize: 16384}
	for _, c := range []struct {
		iops float64
		want string
	}{{295, results.BucketIOPS}, {76, results.BucketBandwidth}, {150, results.BucketUndetermined}} {
		got := Probe(st, p, c.iops, c.iops*16384)
		if got.Bucket != c.want {
			t.Errorf("%g IOPS at 16 KiB after 300 at 4 KiB: %s (%s); want %s", c.iops, got.Bucket, got.Reason, c.want)
		}
	}
	if q, why := ProbePattern(results.Pattern{BlockSize: 512 << 10}); why != "" || q.BlockSize != 128<<10 {
		t.Errorf("a 512 KiB pattern probes %d (%s); want 128 KiB", q.BlockSize, why)
	}
	if _, why := ProbePattern(results.Pattern{BSSplit: "4k/50:16k/50"}); why == "" {
		t.Error("a block-size mix was probed")
	}
}
