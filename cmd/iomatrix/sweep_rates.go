package main

import (
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// rateOptions are sweep's flags of a load–latency sweep.
type rateOptions struct {
	Rates   string
	Arrival string
	Pattern string
	// Parsed by check.
	steps []pattern.RateStep
	shape results.Pattern
}

// rateProfileName names the profile of a load–latency sweep of --pattern:
// the results file's and the default output file's.
const rateProfileName = "rates"

func (o *rateOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Rates, "rates", "", "a load–latency sweep of one shape: closed-loop at its queue depth first, for its maximum, then open-loop at each of these loads, "+
		"shares of that maximum or IOPS (e.g. 10%,20%,50%,80%,100% or 1000,5000); the shape is --pattern's or the profile's only one")
	choiceVar(f, &o.Arrival, "arrival", results.ArrivalPoisson, []string{results.ArrivalPoisson, results.ArrivalUniform},
		"with --rates: how the I/Os of an open-loop load arrive: poisson (independent, as from many clients) or uniform (evenly spaced)")
	f.StringVar(&o.Pattern, "pattern", "", "with --rates: the shape to measure, `SPEC` = RW:BS:QD[:RWMIX[:JOBS]] (QD: the most I/Os in flight of the open-loop loads), instead of the profile's")
}

// check reads the flags (given tells which were given) before anything
// else: --arrival and --pattern mean nothing without --rates, but on
// resuming, where they may repeat the file's.
func (o *rateOptions) check(given func(string) bool, resume bool) error {
	if !given("rates") && !resume {
		for _, name := range []string{"arrival", "pattern"} {
			if given(name) {
				return usagef("--%s: only applies with --rates", name)
			}
		}
		return nil
	}
	var err error
	if given("rates") {
		if o.steps, err = pattern.ParseRateSteps(o.Rates); err != nil {
			return err
		}
	}
	if given("pattern") {
		spec, err := pattern.ParseSpec(o.Pattern)
		if err != nil {
			return usagef("--pattern: %w", err)
		}
		o.shape = spec.Pattern
	}
	return nil
}

// asked is the load–latency sweep asked, as a resumed file is compared
// with it (nil: none asked).
func (o *rateOptions) asked(given func(string) bool) *results.RateSweepSettings {
	if !given("rates") && !given("pattern") && !given("arrival") {
		return nil
	}
	a := &results.RateSweepSettings{Shape: o.shape}
	if given("rates") {
		a.Rates = pattern.FormatRateSteps(o.steps)
	}
	if given("arrival") {
		a.Arrival = o.Arrival
	}
	return a
}

// plan is a new load–latency sweep's settings and profile: the shape of
// --pattern (shape), or the one shape of the profile asked (more than one
// is refused, naming --rates).
func (o *rateOptions) plan(profile string, shape bool) (*results.RateSweepSettings, *profiles.Profile, error) {
	p := &profiles.Profile{Name: rateProfileName, Source: "built-in", Patterns: []results.Pattern{o.shape}}
	if !shape {
		var err error
		if p, err = profiles.Load(profile); err != nil {
			return nil, nil, usagef("--profile: %w", err)
		}
		if o.shape, err = pattern.RateShape(p.Patterns); err != nil {
			return nil, nil, usagef("%w (profile %s): give the shape with --pattern RW:BS:QD, or a profile of one pattern", optionError(err), p.Name)
		}
	}
	return &results.RateSweepSettings{Shape: o.shape, Rates: pattern.FormatRateSteps(o.steps), Arrival: o.Arrival}, p, nil
}
