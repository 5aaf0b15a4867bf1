package main

import (
	"path/filepath"

	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// newDocument starts the results of setup measured on t.
func (setup *sweepSetup) newDocument(sess *session.Session) *results.Document {
	doc := sess.NewDocument(setup.profile.Name, setup.opts)
	if setup.profile.Source != "built-in" {
		doc.Settings.ProfileFile, _ = filepath.Abs(setup.profile.Source)
	}
	return doc
}
