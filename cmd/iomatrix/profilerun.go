package main

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// profileOptions are the flags of the commands that measure every pattern
// of a profile on one target: sweep and cap verify.
type profileOptions struct {
	measureOptions
	Profile string
	Out     string
	Format  string
}

func (o *profileOptions) AddFlags(f *pflag.FlagSet, defaultProfile, outDefault string) {
	o.measureOptions.AddFlags(f)
	o.Profile = defaultProfile
	f.StringVarP(&o.Profile, "profile", "p", defaultProfile, "built-in profile name or YAML file (list them with: iomatrix profiles)")
	f.StringVarP(&o.Out, "out", "o", "", "results file, rewritten atomically after every pattern (default: "+outDefault+" in the current directory)")
}

// runE records which flags were given and calls run with the optional
// TARGET argument: the start of sweep and cap verify.
func (o *profileOptions) runE(run func(ctx context.Context, target string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		o.changed(cmd.Flags())
		target := ""
		if len(args) == 1 {
			target = args[0]
		}
		return run(cmd.Context(), target)
	}
}

// sweepSetup is everything decided before the first I/O.
type sweepSetup struct {
	profile *profiles.Profile
	opts    iotest.Options
	size    int64
	target  string
	out     string
	doc     *results.Document // the resumed document, or nil
	todo    []results.Pattern
	// rates is set on a load–latency sweep (sweep --rates); sweep is
	// what sweep measures.
	rates *results.RateSweepSettings
	sweep session.Sweep
	// compress and dedupe are sweep's --compress and --dedupe, given to
	// every writing pattern of the profile.
	compress, dedupe int
}

// prepare completes setup with everything decided before the first I/O:
// profile, settings, results file and the patterns still to run. setup.doc
// is the document being resumed, if any; outPattern names a new results
// file from the profile's name and a timestamp; resumable says whether the
// command can continue an existing one.
func (o *profileOptions) prepare(g *globalOptions, setup *sweepSetup, outPattern string, resumable bool) error {
	prev := setup.doc
	if setup.profile == nil {
		p, err := profiles.Load(o.Profile)
		if err != nil {
			return usagef("--profile: %w", err)
		}
		setup.profile = p
	}
	d := setup.profile.Defaults
	if prev == nil && !o.given("runtime") && d.Runtime > 0 {
		o.Runtime = d.Runtime
	}
	if prev == nil && !o.given("ramp") && d.RampSet {
		o.Ramp = d.Ramp
	}
	var err error
	if setup.opts, err = o.options(g); err != nil {
		return err
	}
	if setup.size, err = o.size(); err != nil {
		return err
	}
	if !o.given("size") && d.Size > 0 {
		setup.size = d.Size
	}
	setup.target = cmp.Or(setup.target, defaultTarget)
	setup.out = cmp.Or(setup.out, o.Out, fmt.Sprintf(outPattern, setup.profile.Name, time.Now().Format("20060102-150405")))
	setup.todo = prev.Remaining(setup.profile.Patterns)
	if prev != nil { // the file's seed and size; saved to the file it resumes
		setup.opts.Seed = prev.Settings.Seed
		if prev.Target.Kind == "file" {
			setup.size = prev.Settings.SizeBytes
		}
		return nil // the file of --resume, held to the output rule as such (checkFiles)
	}
	if o.Out != "" {
		return nil // held to the output rule with the flags (checkFiles)
	}
	hint := ""
	if resumable {
		hint = fmt.Sprintf("continue it with --resume %s, ", setup.out)
	}
	return g.files.withOutput("--out", setup.out, hint).check()
}

// newDocument starts the results of setup measured on t.
func (setup *sweepSetup) newDocument(sess *session.Session) *results.Document {
	doc := sess.NewDocument(setup.profile.Name, setup.opts)
	doc.Settings.ProfileFile = setup.profile.File()
	doc.Settings.RateSweep = setup.rates
	doc.Settings.Compress, doc.Settings.Dedupe = setup.compress, setup.dedupe
	return doc
}
