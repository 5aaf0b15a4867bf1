package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{2, 2, 9, -1}, 2},
	} {
		in := slices.Clone(c.v)
		if got := Median(c.v); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.v, got, c.want)
		}
		if !slices.Equal(in, c.v) {
			t.Errorf("Median reordered its input: %v, was %v", c.v, in)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}

func TestInterval(t *testing.T) {
	seq := func(n int) []float64 { // n..1, out of order on purpose
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(n - i)
		}
		return v
	}
	for _, c := range []struct {
		n            int
		lo, hi, conf float64
	}{
		{2, 1, 2, 0.5},
		{3, 1, 3, 0.75},
		{5, 1, 5, 0.9375},              // too few for 95 %: the range
		{6, 1, 6, 0.96875},             // x(2), x(5) would be 78 %
		{9, 2, 8, 1 - 2*10.0/512},      // P(X <= 1) = 10/512
		{15, 4, 12, 1 - 2*576/32768.0}, // P(X <= 3) = 576/32768
	} {
		v := seq(c.n)
		lo, hi, conf, ok := Interval(v, 0.95)
		if !ok || lo != c.lo || hi != c.hi || math.Abs(conf-c.conf) > 1e-12 {
			t.Errorf("Interval(1..%d) = %v, %v, %v, %v; want %v, %v, %v", c.n, lo, hi, conf, ok, c.lo, c.hi, c.conf)
		}
		if v[0] != float64(c.n) {
			t.Errorf("Interval reordered its input")
		}
	}
	if _, _, _, ok := Interval([]float64{1}, 0.95); ok {
		t.Error("Interval of one figure: ok")
	}
}

// TestIntervalCovers draws samples from a skewed distribution with a known
// median and counts how often the interval holds it: the stated
// confidence, within what 20,000 draws can tell.
func TestIntervalCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{5, 9, 15} {
		const trials = 20000
		held, stated := 0, 0.0
		v := make([]float64, n)
		for range trials {
			for i := range v {
				v[i] = math.Exp(rng.NormFloat64()) // lognormal, median 1
			}
			lo, hi, conf, _ := Interval(v, 0.95)
			stated = conf
			if lo <= 1 && 1 <= hi {
				held++
			}
		}
		got := float64(held) / trials
		if se := math.Sqrt(stated * (1 - stated) / trials); math.Abs(got-stated) > 4*se {
			t.Errorf("n=%d: the interval held the median in %.4f of draws, stated %.4f", n, got, stated)
		}
	}
}
