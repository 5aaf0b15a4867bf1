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

	ratesSet, arrivalSet, patternSet bool
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
	f.StringVar(&o.Arrival, "arrival", results.ArrivalPoisson, "with --rates: how the I/Os of an open-loop load arrive: poisson (independent, as from many clients) or uniform (evenly spaced)")
	f.StringVar(&o.Pattern, "pattern", "", "with --rates: the shape to measure, `SPEC` = RW:BS:QD[:RWMIX[:JOBS]] (QD: the most I/Os in flight of the open-loop loads), instead of the profile's")
}

func (o *rateOptions) changed(f *pflag.FlagSet) {
	o.ratesSet, o.arrivalSet, o.patternSet = f.Changed("rates"), f.Changed("arrival"), f.Changed("pattern")
}

// check reads the flags before anything else: --arrival and --pattern
// mean nothing without --rates, but on resuming, where they may repeat
// the file's.
func (o *rateOptions) check(resume bool) error {
	if !o.ratesSet && !resume {
		for _, f := range []struct {
			set  bool
			name string
		}{{o.arrivalSet, "--arrival"}, {o.patternSet, "--pattern"}} {
			if f.set {
				return usagef("%s: only applies with --rates", f.name)
			}
		}
		return nil
	}
	if o.Arrival != results.ArrivalPoisson && o.Arrival != results.ArrivalUniform {
		return usagef("--arrival: %q is not one of poisson, uniform", o.Arrival)
	}
	if o.ratesSet {
		steps, err := pattern.ParseRateSteps(o.Rates)
		if err != nil {
			return optionError(err)
		}
		o.steps = steps
	}
	if o.patternSet {
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
func (o *rateOptions) asked() *results.RateSweepSettings {
	if !o.ratesSet && !o.patternSet && !o.arrivalSet {
		return nil
	}
	a := &results.RateSweepSettings{Shape: o.shape}
	if o.ratesSet {
		a.Rates = pattern.FormatRateSteps(o.steps)
	}
	if o.arrivalSet {
		a.Arrival = o.Arrival
	}
	return a
}

// plan is a new load–latency sweep's settings and profile: the shape of
// --pattern, or the one shape of the profile asked (more than one is
// refused, naming --rates).
func (o *rateOptions) plan(profile string) (*results.RateSweepSettings, *profiles.Profile, error) {
	var p *profiles.Profile
	if o.patternSet {
		p = &profiles.Profile{Name: rateProfileName, Source: "built-in", Patterns: []results.Pattern{o.shape}}
	} else {
		var err error
		if p, err = profiles.Load(profile); err != nil {
			return nil, nil, usagef("--profile: %w", err)
		}
		shape, err := pattern.RateShape(p.Patterns)
		if err != nil {
			return nil, nil, usagef("%w (profile %s): give the shape with --pattern RW:BS:QD, or a profile of one pattern", optionError(err), p.Name)
		}
		o.shape = shape
	}
	return &results.RateSweepSettings{Shape: o.shape, Rates: pattern.FormatRateSteps(o.steps), Arrival: o.Arrival}, p, nil
}
