package main

import (
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/progress"
	"github.com/iomatrix/iomatrix/results"
)

// newLiveLine is a status line on standard error, drawn on a terminal.
func newLiveLine(g *globalOptions) *progress.Line { return progress.NewLine(g.stderr, g.stderrTTY) }

// newSweepProgress shows a loop over total patterns on standard error.
func newSweepProgress(g *globalOptions, total, done int, o iotest.Options) *progress.Sweep {
	return progress.NewSweep(g.stderr, g.stderrTTY, total, done, o)
}

// checkOutPath refuses, before any I/O, an output file that could not be
// saved (results.CheckSavable); flag is the one that named it.
func checkOutPath(flag, path string) error {
	if err := results.CheckSavable(path); err != nil {
		return usagef("%s: %w", flag, err)
	}
	return nil
}
