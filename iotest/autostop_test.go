package iotest

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/iotest/pattern"
)

// The stopping rule on synthetic series: each test feeds rounds through
// the same stopper the engine uses, a restart skipping the round that was
// in progress as the engine does.

var testAuto = Auto{MinRuntime: DefaultMinRuntime, MaxRuntime: DefaultMaxRuntime, Precision: DefaultPrecision}

// stopOutcome is how a synthetic series ended under the rule.
type stopOutcome struct {
	stopped  bool
	at       int       // rounds consumed from the series, skipped ones included
	window   []float64 // the rounds of the final window
	restarts int
}

func runStopper(a Auto, y []float64) stopOutcome {
	s := stopper{auto: a}
	total := a.maxRounds()
	for i := 0; i < len(y) && i < total; i++ {
		switch s.add(y[i], total-i-1) {
		case stopNow:
			return stopOutcome{true, i + 1, slices.Clone(s.rounds), s.restarts}
		case restart:
			i++ // the round in progress belongs to no window
		}
	}
	return stopOutcome{false, min(len(y), total), slices.Clone(s.rounds), s.restarts}
}

func whiteNoise(rng *rand.Rand, n int, mean, cv float64) []float64 {
	y := make([]float64, n)
	for i := range y {
		y[i] = mean * (1 + cv*rng.NormFloat64())
	}
	return y
}

// textbookRounds is the round count at which independent rounds of a
// given coefficient of variation have a 95 % interval within the
// precision: (1.96·cv/precision)², and never fewer than SteadyWindow. The
// rule does not take rounds for independent (see judge), so it stops
// later; by how much is what the flat-noise test pins down.
func textbookRounds(cv, precision float64) int {
	return max(SteadyWindow, int(math.Ceil(math.Pow(1.96*cv/precision, 2))))
}

func TestAutoFlatNoiseConvergesWhenPredicted(t *testing.T) {
	// Which round a noisy series stops at is itself random: the test runs
	// 200 seeded series per noise level and holds the median to the
	// prediction: no earlier than independent rounds would allow, and at
	// most twice that plus four rounds, the price of the autocorrelation
	// allowance. Nearly all must converge within the 60 rounds.
	for _, cv := range []float64{0.005, 0.02, 0.04} {
		want := textbookRounds(cv, testAuto.Precision)
		rng := rand.New(rand.NewPCG(1, uint64(cv*1000)))
		var at []int
		unconverged := 0
		for range 200 {
			o := runStopper(testAuto, whiteNoise(rng, 60, 10000, cv))
			if o.restarts != 0 {
				t.Fatalf("cv %g: flat noise restarted its window: %+v", cv, o)
			}
			if !o.stopped {
				unconverged++
			}
			at = append(at, o.at)
		}
		slices.Sort(at)
		median := at[len(at)/2]
		t.Logf("cv %.1f %%: independent rounds need %d, median stop %d (10th %d, 90th %d), %d of 200 unconverged", cv*100, want, median, at[20], at[180], unconverged)
		if median < want || median > 2*want+4 {
			t.Errorf("cv %.1f %%: median stop at round %d, want %d to %d", cv*100, median, want, 2*want+4)
		}
		if unconverged > 4 {
			t.Errorf("cv %.1f %%: %d of 200 flat series never converged", cv*100, unconverged)
		}
	}
	// Quiet rounds stop as soon as the window is full.
	if o := runStopper(testAuto, whiteNoise(rand.New(rand.NewPCG(3, 3)), 60, 10000, 0.001)); o.at != SteadyWindow {
		t.Errorf("a quiet series stopped after %d rounds, want %d", o.at, SteadyWindow)
	}
	// Nor does a constant one (a cap's exact budget) wait for more.
	if o := runStopper(testAuto, slices.Repeat([]float64{2000}, 60)); o.at != SteadyWindow {
		t.Errorf("a constant series stopped after %d rounds, want %d", o.at, SteadyWindow)
	}
	// And never before the minimum runtime.
	a := testAuto
	a.MinRuntime = 9500 * time.Millisecond
	if o := runStopper(a, whiteNoise(rand.New(rand.NewPCG(3, 3)), 60, 10000, 0.001)); o.at != 10 {
		t.Errorf("min runtime 9.5s: stopped after %d rounds, want 10", o.at)
	}
}

func TestAutoDriftNeverConverges(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		y := make([]float64, 60)
		for i := range y {
			y[i] = 10000 * (1 + 0.02*float64(i)) * (1 + 0.005*rng.NormFloat64())
		}
		// Steady state alone passes it: the line moves 8 % across a window.
		if !judge(y[:10]).steady {
			t.Fatalf("seed %d: a 2 %%/s drift fails the steady-state test; this test is not testing precision", seed)
		}
		if o := runStopper(testAuto, y); o.stopped {
			t.Fatalf("seed %d: a drift of 2 %% a second converged after %d rounds (ci %.2f %%)", seed, o.at, judge(o.window).ci*100)
		}
	}
}

func TestAutoStepRestartsTheWindow(t *testing.T) {
	// Rounds alternating ±8 % before the step cannot be precise within
	// its 8 rounds; 2 % noise after it converges within the 60.
	const step = 8
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 11))
		y := append(whiteNoise(rng, step, 10000, 0.01), whiteNoise(rng, 60-step, 16000, 0.02)...)
		for i := 0; i < step; i += 2 {
			y[i] *= 1.08
			y[i+1] *= 0.92
		}
		o := runStopper(testAuto, y)
		if !o.stopped || o.restarts != 1 {
			t.Fatalf("seed %d: %+v, want one restart, then convergence", seed, o)
		}
		if o.at < step+SteadyWindow+1 {
			t.Fatalf("seed %d: stopped after %d rounds, before a window after the step at %d could fill", seed, o.at, step)
		}
		if m, _ := meanSD(o.window); math.Abs(m/16000-1) > 0.03 {
			t.Errorf("seed %d: the final window's mean %.0f is not the level after the step (16000): it holds rounds from before it", seed, m)
		}
	}
	// Noise is not a step: rounds varying by 10 % a second, whose
	// windows often fail the steady range, are never restarted.
	for seed := range uint64(100) {
		if o := runStopper(testAuto, whiteNoise(rand.New(rand.NewPCG(seed, 17)), 60, 10000, 0.10)); o.restarts != 0 {
			t.Fatalf("seed %d: 10 %% noise restarted the window %d times", seed, o.restarts)
		}
	}
	// A shift that leaves too few rounds for a fresh window does not
	// restart it: the window ends unconverged at the maximum instead.
	y := whiteNoise(rand.New(rand.NewPCG(5, 5)), 60, 10000, 0.03)
	for i := 56; i < 60; i++ {
		y[i] *= 1.6
	}
	if o := runStopper(Auto{MaxRuntime: 60 * time.Second, Precision: 0.001}, y); o.restarts != 0 || o.stopped {
		t.Errorf("a step 4 rounds before the end: %d restarts, stopped %v", o.restarts, o.stopped)
	}
}

// naiveHalfWidth is the textbook interval t·s/√n, which takes rounds for
// independent samples.
func naiveHalfWidth(y []float64) float64 {
	m, sd := meanSD(y)
	return tQuantile975(float64(len(y)-1)) * sd / math.Sqrt(float64(len(y))) / m
}

func TestAutoAR1NotPreciseEarly(t *testing.T) {
	// ρ = 0.8, 3 % a second: the true 95 % half-width of the mean of n
	// rounds is 1.96·3 %·√(9/n), still twice the 2 % target below 20
	// rounds (and the target itself is reached at 78). The textbook
	// interval declares it precise within a few rounds.
	const rho, cv = 0.8, 0.03
	early := 20
	var naiveEarly, ruleEarly, ruleNever int
	const series = 200
	for seed := range uint64(series) {
		rng := rand.New(rand.NewPCG(seed, 13))
		x := rng.NormFloat64()
		y := make([]float64, 60)
		for i := range y {
			x = rho*x + math.Sqrt(1-rho*rho)*rng.NormFloat64()
			y[i] = 10000 * (1 + cv*x)
		}
		for n := SteadyWindow; n <= 60; n++ {
			if steadyWindow(y[n-SteadyWindow:n]) && naiveHalfWidth(y[:n]) <= testAuto.Precision {
				if n < early {
					naiveEarly++
				}
				break
			}
		}
		o := runStopper(testAuto, y)
		switch {
		case !o.stopped:
			ruleNever++
		case o.at < early:
			ruleEarly++
		}
	}
	t.Logf("AR(1) ρ=%.1f, %.0f %%: declared precise before round %d: textbook %d of %d, rule %d (never within 60 rounds: %d)",
		rho, cv*100, early, naiveEarly, series, ruleEarly, ruleNever)
	if naiveEarly < series*95/100 {
		t.Fatalf("the textbook interval was fooled in only %d of %d series: the series are not what this test needs", naiveEarly, series)
	}
	// A short stretch of a slow wander cannot show it: some series look
	// quiet for their first rounds, and no rule can tell them from quiet
	// ones (what --min-runtime is for). The rule must refuse most of them.
	if ruleEarly > series*35/100 {
		t.Errorf("rule: %d of %d series declared precise early; want at most 35 %%", ruleEarly, series)
	}
}

func TestTQuantile(t *testing.T) {
	for _, c := range []struct{ df, want float64 }{
		{1, 12.706}, {4, 2.776}, {30, 2.042}, {40, 2.021}, {60, 2.000}, {120, 1.980}, {1e9, 1.960},
		{4.5, 2.665}, // between 2.776 and 2.571, interpolated in 1/df (exact: 2.6512)
	} {
		if got := tQuantile975(c.df); math.Abs(got-c.want) > 0.015 {
			t.Errorf("t(%g) = %.4f, want %.3f", c.df, got, c.want)
		}
	}
	if !math.IsInf(tQuantile975(0.5), 1) {
		t.Errorf("t(0.5) should be unknowable")
	}
}

func TestAutoValidate(t *testing.T) {
	for _, c := range []struct {
		a     Auto
		field string
	}{
		{Auto{MinRuntime: 3 * time.Second, MaxRuntime: 4 * time.Second, Precision: 0.02}, "max-runtime"},
		{Auto{MinRuntime: 30 * time.Second, MaxRuntime: 20 * time.Second, Precision: 0.02}, "min-runtime"},
		{Auto{MinRuntime: -time.Second, MaxRuntime: 20 * time.Second, Precision: 0.02}, "min-runtime"},
		{Auto{MaxRuntime: 20 * time.Second, Precision: 0}, "precision"},
		{Auto{MaxRuntime: 20 * time.Second, Precision: math.NaN()}, "precision"},
		{Auto{MaxRuntime: 20 * time.Second, Precision: 0.6}, "precision"},
	} {
		err := c.a.Validate()
		var fe *pattern.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want an error on %s", c.a, err, c.field)
		}
	}
	if err := testAuto.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
