package main

import (
	"path/filepath"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// resolve checks what a sweep or cap verify will do before any I/O: the
// target's plan, the cap's and the engine, which it records in setup.opts
// (with the measured window aligned to the kernel's throttle under a cap).
func (o *profileOptions) resolve(g *globalOptions, setup *sweepSetup, precondition bool) (*iotest.Plan, *session.CapPlan, error) {
	return o.measureOptions.resolve(g, setup.target, setup.size, setup.profile.Patterns, precondition, &setup.opts)
}

// newDocument starts the results of setup measured on t.
func (setup *sweepSetup) newDocument(sess *session.Session) *results.Document {
	doc := sess.NewDocument(setup.profile.Name, setup.opts)
	if setup.profile.Source != "built-in" {
		doc.Settings.ProfileFile, _ = filepath.Abs(setup.profile.Source)
	}
	return doc
}
