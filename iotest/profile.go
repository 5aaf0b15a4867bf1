package iotest

import (
	"math"
	"time"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// RateProfile shapes an open-loop pattern's schedule over time: each
// direction's rate, step by step, as a system's observed timeline gave
// it. The schedule follows it from the start of the run (the ramp's
// first moment) and starts it again from its first step when the run
// outlasts it. Arrivals keep the pattern's kind: uniform ones are evenly
// spaced within a step at its rate, poisson ones are a poisson process
// of that rate (both drawn on the profile's cumulative rate, so a step
// holds its expected count whatever its neighbours). The pattern's own
// rates are the profile's means (MeanRates), which name the result.
type RateProfile struct {
	// StepNS is each step's length.
	StepNS int64 `json:"step_ns"`
	// Reads and Writes are the rates, I/Os per second, one per step;
	// both as long.
	Reads  []float64 `json:"reads"`
	Writes []float64 `json:"writes"`
}

// The profile's bounds: steps of at least a millisecond, at most a
// million of them.
const (
	MinProfileStep  = time.Millisecond
	MaxProfileSteps = 1 << 20
)

// Check tells whether the profile can shape the pattern p: steps of
// MinProfileStep or more, as many of each direction, rates that are
// rates, and a pattern that schedules each direction the profile has
// I/O in, with the profile's means.
func (rp *RateProfile) Check(p results.Pattern) error {
	n := len(rp.Reads)
	switch {
	case rp.StepNS < int64(MinProfileStep):
		return pattern.Fieldf("profile", "a step of %s: at least %s", time.Duration(rp.StepNS), MinProfileStep)
	case n == 0 || n != len(rp.Writes) || n > MaxProfileSteps:
		return pattern.Fieldf("profile", "%d read and %d write steps: as many of each, 1 to %d", n, len(rp.Writes), MaxProfileSteps)
	case !p.Rate.PerDirection():
		return pattern.Fieldf("profile", "the pattern needs a rate per direction (read and write IOPS)")
	}
	for i := range n {
		for _, v := range [2]float64{rp.Reads[i], rp.Writes[i]} {
			if !(v >= 0) || math.IsInf(v, 0) {
				return pattern.Fieldf("profile", "step %d: %v is not a rate", i, v)
			}
		}
	}
	r, w := rp.MeanRates()
	if !closeRate(r, p.Rate.ReadIOPS) || !closeRate(w, p.Rate.WriteIOPS) {
		return pattern.Fieldf("profile", "its means %s r/s and %s w/s are not the pattern's rates %s and %s",
			results.FormatRate(r), results.FormatRate(w), results.FormatRate(p.Rate.ReadIOPS), results.FormatRate(p.Rate.WriteIOPS))
	}
	return nil
}

// closeRate: equal to a part in a million (a mean summed in another
// order).
func closeRate(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b)) }

// MeanRates are the profile's mean read and write rates over its steps.
func (rp *RateProfile) MeanRates() (reads, writes float64) {
	for i := range rp.Reads {
		reads += rp.Reads[i]
		writes += rp.Writes[i]
	}
	n := float64(max(len(rp.Reads), 1))
	return reads / n, writes / n
}

// Duration is the profile's length.
func (rp *RateProfile) Duration() time.Duration {
	return time.Duration(rp.StepNS) * time.Duration(len(rp.Reads))
}

// rateSteps is one direction's profile made ready for arrivals: the
// cumulative expected arrivals at each step's start (cum[i], with
// cum[n] the whole profile's), read-only and shared by every copy of a
// schedule.
type rateSteps struct {
	stepNS float64
	rate   []float64 // per ns
	cum    []float64
}

// newRateSteps is share of rates (per second), divided among jobs; nil
// when the direction has no I/O at all.
func newRateSteps(stepNS int64, rates []float64, share float64, jobs int) *rateSteps {
	s := &rateSteps{stepNS: float64(stepNS), rate: make([]float64, len(rates)), cum: make([]float64, len(rates)+1)}
	for i, r := range rates {
		s.rate[i] = share * r / float64(jobs) / 1e9
		s.cum[i+1] = s.cum[i] + s.rate[i]*s.stepNS
	}
	if s.cum[len(rates)] <= 0 {
		return nil
	}
	return s
}

// at is when (ns since the start) the profile's cumulative arrivals
// reach lam, from the cursor (cycle, step) forward: lam never goes back,
// so neither does the cursor, and no call searches more steps than the
// schedule has passed.
func (s *rateSteps) at(lam float64, cycle *int64, step *int) float64 {
	n := len(s.rate)
	total := s.cum[n]
	for {
		base := float64(*cycle) * total
		if lam < base+s.cum[*step+1] && s.rate[*step] > 0 {
			into := (lam - base - s.cum[*step]) / s.rate[*step]
			return (float64(*cycle)*float64(n)+float64(*step))*s.stepNS + max(into, 0)
		}
		if *step++; *step == n {
			*step = 0
			*cycle++
		}
	}
}
