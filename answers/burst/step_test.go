package burst

import (
	"math"
	"math/rand/v2"
	"testing"
)

// series is a run's per-second rates: each second's count of a Poisson
// process (normal approximation) at the rate of the phase it falls in.
func series(rng *rand.Rand, phases ...[2]float64) []float64 {
	var out []float64
	for _, p := range phases {
		for range int(p[0]) {
			out = append(out, math.Max(0, p[1]+rng.NormFloat64()*math.Sqrt(p[1])))
		}
	}
	return out
}

// The step of a token bucket (3,000 IOPS for 22 s, then 300) is found at
// its second, with its rates and its bucket (22 × 2,700 = 59,400 I/Os
// above the baseline) within a percent; as it is found second by second
// while the run goes on, it is not before the rule's 10 seconds after
// the step. A steady device, one whose rate dips and comes back, one
// that speeds up, and one that slows by less than a fifth have none.
func TestFindStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rates := series(rng, [2]float64{22, 3000}, [2]float64{30, 300})
	s, ok := FindStep(rates, DefaultStepRule)
	if !ok || s.At != 22 || math.Abs(s.Before/3000-1) > 0.01 || math.Abs(s.After/300-1) > 0.02 {
		t.Fatalf("token bucket: %+v, %v", s, ok)
	}
	if b := s.Excess(rates, 1); math.Abs(b/59400-1) > 0.01 {
		t.Errorf("token bucket: excess %.0f I/Os, want 59,400", b)
	}
	for n := 1; n <= len(rates); n++ {
		s, ok := FindStep(rates[:n], DefaultStepRule)
		if ok != (n >= 22+DefaultStepRule.MinAfter) || ok && s.At != 22 {
			t.Errorf("the first %d seconds: %+v, %v", n, s, ok)
		}
	}
	for name, r := range map[string][]float64{
		"steady":         series(rng, [2]float64{120, 3000}),
		"a dip":          series(rng, [2]float64{20, 3000}, [2]float64{10, 1000}, [2]float64{20, 3000}),
		"faster":         series(rng, [2]float64{20, 300}, [2]float64{20, 3000}),
		"slower by 10 %": series(rng, [2]float64{20, 3000}, [2]float64{20, 2700}),
		"too short":      series(rng, [2]float64{5, 3000}, [2]float64{5, 300}),
	} {
		if s, ok := FindStep(r, DefaultStepRule); ok {
			t.Errorf("%s: a step %+v", name, s)
		}
	}
	// Noiseless: the step is beyond any error.
	if s, ok := FindStep([]float64{10, 10, 10, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, DefaultStepRule); !ok || s.At != 3 || !math.IsInf(s.Sigmas, 1) {
		t.Errorf("noiseless: %+v, %v", s, ok)
	}
	for _, bad := range []StepRule{{}, {MinDrop: 1, Sigmas: 1, MinBefore: 1, MinAfter: 2}, {MinDrop: 0.2, Sigmas: 1, MinBefore: 0, MinAfter: 2}} {
		if bad.Check() == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
