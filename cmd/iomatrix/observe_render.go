package main

import (
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// renderObservation prints the observation's report on stdout: what
// `iomatrix report` prints of the saved file.
func renderObservation(g *globalOptions, doc *results.Observation) error {
	return report.WriteObservation(g.stdout, doc, "text")
}
