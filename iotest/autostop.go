package iotest

import (
	"math"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// Auto is a measured window whose length the cell decides: the window is
// read in rounds of one second, and the cell stops at the first whole
// round where its IOPS are both steady and precise (see judge), after
// MinRuntime and at MaxRuntime at the latest.
type Auto struct {
	MinRuntime time.Duration
	MaxRuntime time.Duration
	// Precision is the widest 95 % confidence interval of the mean IOPS
	// the cell accepts, as a half-width relative to the mean (0.02: ±2 %).
	Precision float64
	// Granule, when set, makes a converged window a whole number of these
	// long, counted from its start (a cgroup throttle's slice, so that
	// the window holds whole slices of a cap's budget).
	Granule time.Duration
	// Until, when set, replaces the stopping rule: after each whole round
	// it is handed the IOPS of every round so far, and the window ends as
	// soon as it returns true (the result's Stop is StopUntil), or at
	// MaxRuntime. No round is judged steady, none restarts the window,
	// and MinRuntime and Precision play no part. It runs on the run's own
	// goroutine, never on an I/O stream's, and must not keep rounds. It
	// stays in this process: a capped child, which the options reach as
	// JSON, runs without it (burst refuses a cap).
	Until func(rounds []float64) bool `json:"-"`
}

// The auto runtime's defaults.
const (
	DefaultMinRuntime = 3 * time.Second
	DefaultMaxRuntime = 60 * time.Second
	DefaultPrecision  = 0.02
)

// round is the unit in which an auto window is read and judged: the
// timeline's second.
const round = time.Second

// SteadyWindow is the number of last rounds steady state is judged on, as
// SNIA's Performance Test Specification judges its rounds.
const SteadyWindow = 5

const (
	steadyRange = 0.20 // largest max − min of the window, relative to its mean
	steadySlope = 0.10 // largest rise or fall of the window's fitted line, relative to its mean
)

// Validate checks the auto settings on their own.
func (a Auto) Validate() error {
	switch {
	case a.MaxRuntime < SteadyWindow*round:
		return pattern.Fieldf("max-runtime", "%s is shorter than the %d one-second rounds steady state is judged on", a.MaxRuntime, SteadyWindow)
	case a.MinRuntime < 0:
		return pattern.Fieldf("min-runtime", "%s must not be negative", a.MinRuntime)
	case a.MinRuntime > a.MaxRuntime:
		return pattern.Fieldf("min-runtime", "%s is longer than the maximum runtime %s", a.MinRuntime, a.MaxRuntime)
	case !(a.Precision > 0 && a.Precision <= 0.5):
		return pattern.Fieldf("precision", "%g %% is not between 0 and 50 %%", a.Precision*100)
	}
	return nil
}

// minRounds is the fewest rounds a window may stop after.
func (a Auto) minRounds() int {
	return max(SteadyWindow, int((a.MinRuntime+round-1)/round))
}

// maxRounds is the most rounds an auto window can hold.
func (a Auto) maxRounds() int { return int(a.MaxRuntime / round) }

// judgement is the stopping rule's reading of a window's rounds.
type judgement struct {
	steady bool
	// ci is the half-width of the 95 % confidence interval of the mean,
	// relative to the mean; +Inf when it cannot be told.
	ci float64
	// shift: the last rounds left the level of the rounds before them; the
	// window mixes two regimes and should be measured afresh.
	shift bool
}

// judge reads rounds of IOPS (oldest first).
//
// Steady state is SNIA PTS's test over the last SteadyWindow rounds: their
// range (max − min) is at most 20 % of their mean, and the excursion of
// their least-squares line across the window (slope × (window − 1)) is at
// most 10 % of their mean. A series drifting 2 % a second passes it (its
// line moves 8 % across five rounds) but is never precise: the confidence
// interval of its mean grows with the drift.
//
// Precision is the half-width of the 95 % confidence interval of the mean
// of every round. Seconds of I/O are not independent samples (a device
// that is slow for one second is often slow the next), and the textbook
// interval t·s/√n, which assumes they are, then claims a precision the
// run does not have. Two corrections are made and the wider interval kept:
//   - an AR(1) correction: the variance of the mean of n rounds with lag-1
//     autocorrelation ρ is s²/n·(1+ρ)/(1−ρ), on n(1−ρ)/(1+ρ) effective
//     rounds. The sample ρ̂ of a short series is biased low by about
//     (1+4ρ)/n (Kendall; Marriott and Pope), so ρ is taken at
//     ρ̂ + (1+4ρ̂)/n, plus a margin of 3/n (0.6 at five rounds, 0.15 at
//     twenty): a series too short to show its correlation is not taken
//     to have none, and a long one is not charged for a doubt it has
//     settled. (One standard error, 1/√n, instead of 3/n doubled the
//     interval of real 20-round series on a virtio disk and refused
//     hardly more of the synthetic traps.)
//   - overlapping batch means over batches of √n rounds (Meketon and
//     Schmeiser), with 1.5·(n/b − 1) degrees of freedom: it sees memory
//     longer than one lag once the series is long enough to hold it.
//
// On white noise this costs 20 to 100 % more rounds than the textbook
// interval (TestAutoFlatNoiseConvergesWhenPredicted); on a strongly
// autocorrelated series it refuses most of the early stops the textbook
// interval makes (TestAutoAR1NotPreciseEarly).
func judge(y []float64) judgement {
	j := judgement{ci: math.Inf(1)}
	n := len(y)
	if n < 2 {
		return j
	}
	if n >= SteadyWindow {
		j.steady = steadyWindow(y[n-SteadyWindow:])
		j.shift = !j.steady && n >= SteadyWindow+3 && shifted(y)
	}
	m, sd := meanSD(y)
	switch {
	case m <= 0:
		return j
	case sd == 0:
		// Every round the same (a cap's exact budget): the mean is known,
		// however few the rounds (and ∞·0 is no half-width).
		j.ci = 0
		return j
	}
	j.ci = max(ar1HalfWidth(y, m, sd), batchHalfWidth(y, m)) / m
	return j
}

// steadyWindow is SNIA's steady-state test on one window of rounds.
func steadyWindow(w []float64) bool {
	m, _ := meanSD(w)
	if m <= 0 {
		return false
	}
	lo, hi := w[0], w[0]
	var sxy, sxx float64
	mid := float64(len(w)-1) / 2
	for i, v := range w {
		lo, hi = min(lo, v), max(hi, v)
		sxy += (float64(i) - mid) * (v - m)
		sxx += (float64(i) - mid) * (float64(i) - mid)
	}
	excursion := math.Abs(sxy/sxx) * float64(len(w)-1)
	return hi-lo <= steadyRange*m && excursion <= steadySlope*m
}

// shifted tells whether the last three rounds left the level of the
// rounds before them (a window's worth at least) by more than the steady
// range, and by more than five standard errors of the difference given
// the noise of those rounds: a step (a cache filled, a drive's write
// cliff), not noise. (The steady range alone restarted a third of the
// cells of a sweep on a RAM-backed loop device whose rounds vary by 10 %,
// each restart throwing measured rounds away for nothing.)
func shifted(y []float64) bool {
	const last = 3
	n := len(y)
	before, sd := meanSD(y[:n-last])
	after, _ := meanSD(y[n-last:])
	step := math.Abs(after - before)
	return before > 0 && step > steadyRange*before && step > 5*sd*math.Sqrt(1.0/last+1/float64(n-last))
}

func ar1HalfWidth(y []float64, m, sd float64) float64 {
	n := float64(len(y))
	var num, den float64
	for i, v := range y {
		den += (v - m) * (v - m)
		if i > 0 {
			num += (v - m) * (y[i-1] - m)
		}
	}
	r := 0.0
	if den > 0 {
		r = num / den
	}
	rho := min(max(r+(1+4*r)/n+3/n, 0), 0.95)
	inflate := (1 + rho) / (1 - rho)
	return tQuantile975(n/inflate-1) * sd * math.Sqrt(inflate/n)
}

func batchHalfWidth(y []float64, m float64) float64 {
	n := len(y)
	b := max(2, int(math.Sqrt(float64(n))))
	if n <= b {
		return math.Inf(1)
	}
	var ss, sum float64
	for i := 0; i < b; i++ {
		sum += y[i]
	}
	for i := 0; ; i++ {
		d := sum/float64(b) - m
		ss += d * d
		if i+b >= n {
			break
		}
		sum += y[i+b] - y[i]
	}
	// The variance of the mean: n·b/((n−b)(n−b+1))·Σ(batch mean − mean)², over n.
	v := float64(b) / float64((n-b)*(n-b+1)) * ss
	df := 1.5 * (float64(n)/float64(b) - 1)
	return tQuantile975(df) * math.Sqrt(v)
}

func meanSD(y []float64) (mean, sd float64) {
	for _, v := range y {
		mean += v
	}
	mean /= float64(len(y))
	if len(y) < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range y {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(y)-1))
}

// t975 holds Student's t 97.5 % quantiles for 1 to 30 degrees of freedom.
var t975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// tQuantile975 is Student's t 97.5 % quantile for df degrees of freedom:
// the table, interpolated in 1/df between whole degrees (the quantile is
// nearly linear in 1/df), and the Cornish–Fisher expansion past 30, where
// it is exact to the table's three decimals. Below one degree of freedom
// nothing can be said.
func tQuantile975(df float64) float64 {
	switch {
	case !(df >= 1):
		return math.Inf(1)
	case df <= float64(len(t975)):
		lo := math.Floor(df)
		if lo == df {
			return t975[int(lo)-1]
		}
		hi := lo + 1
		f := (1/lo - 1/df) / (1/lo - 1/hi)
		return t975[int(lo)-1] + f*(t975[int(hi)-1]-t975[int(lo)-1])
	}
	const z = 1.959964
	z3, z5, z7 := z*z*z, math.Pow(z, 5), math.Pow(z, 7)
	return z + (z3+z)/(4*df) + (5*z5+16*z3+3*z)/(96*df*df) + (3*z7+19*z5+17*z3-15*z)/(384*df*df*df)
}

// roundRule is the rule a stopper applies: judge, but for tests of the
// engine's side of an auto window.
var roundRule = func(s *stopper) judgement { return judge(s.rounds) }

// stopper applies the stopping rule round by round to one auto window.
type stopper struct {
	auto     Auto
	rounds   []float64 // IOPS of each whole round since the window (re)started
	last     judgement // of rounds
	restarts int
}

// stopAction is what the window does after a round.
type stopAction int

const (
	keepGoing stopAction = iota
	stopNow              // converged
	restart              // a step: measure afresh from the next round on
)

// add takes the next whole round; left is the number of rounds the
// window can still hold after it before the maximum runtime.
func (s *stopper) add(iops float64, left int) stopAction {
	s.rounds = append(s.rounds, iops)
	if s.auto.Until != nil {
		if s.auto.Until(s.rounds) {
			s.last = judgement{ci: math.NaN()}
			return stopNow
		}
		return keepGoing
	}
	s.last = roundRule(s)
	switch {
	case s.converged():
		return stopNow
	case s.last.shift && left > SteadyWindow:
		// The round in progress is already partly measured: the fresh
		// window starts after it, and SteadyWindow rounds must fit.
		s.rounds, s.restarts = s.rounds[:0], s.restarts+1
		return restart
	}
	return keepGoing
}

func (s *stopper) converged() bool {
	return len(s.rounds) >= s.auto.minRounds() && s.last.steady && s.last.ci <= s.auto.Precision
}

// Settings is the part of a results file's settings that o decides: the
// runtime and ramp, the engine and seed, and an auto window's bounds.
func (o Options) Settings() results.Settings {
	s := results.Settings{Engine: o.Engine, EngineOptions: strings.Join(o.Ring.Words(), ","), RuntimeNS: int64(o.Runtime), RampNS: int64(o.Ramp), Seed: o.Seed}
	if a := o.Auto; a != nil {
		s.Auto = &results.AutoSettings{MinRuntimeNS: int64(a.MinRuntime), MaxRuntimeNS: int64(a.MaxRuntime), PrecisionPct: a.Precision * 100}
	}
	return s
}
