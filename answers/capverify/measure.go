package capverify

import (
	"context"
	"fmt"
	"strings"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/session"
)

// Config is what Measure measures: patterns on an open session, under its
// cap, against their uncapped baseline; or, with Provisioned, against a
// volume's own limits.
type Config struct {
	Session  *session.Session // opened, not started: the baseline runs uncapped
	Patterns []results.Pattern
	Options  iotest.Options
	// Baseline holds the uncapped results by name; nil: they are
	// measured first, and saved to BaselineOut.
	Baseline map[string]results.Result
	// Provisioned, when set, are the limits the volume is sold with
	// (ParseProvisioned): the session has no cap, no cgroup is made or
	// joined, no baseline is measured (a volume has no figures without
	// its limits), and each cell is judged against them
	// (ProvisionedJudge).
	Provisioned  *Limits
	BaselineFile string
	// Out is the capped results' file, saved after every cell.
	Out          string
	TolerancePct float64
	// Sys is where the capped device's request limits are read.
	Sys sysfs.FS
	// NewDocument starts a results document; Display shows a loop over
	// the patterns.
	NewDocument func() *results.Document
	Display     func() session.Display
	Notice      func(string)
}

// BaselineOut is where cap verify saves the baseline it measures beside
// the results file out.
func BaselineOut(out string) string { return strings.TrimSuffix(out, ".json") + "-baseline.json" }

// Measure is cap verify: every pattern measured uncapped unless its
// baseline is given, then under the cap, each cell judged as it is
// measured (CellJudge) and saved, and the verdict of the whole (Verdict).
// Against a volume's provisioned limits, every pattern is measured once,
// on the volume as it is, and judged by ProvisionedJudge.
// It returns the capped document and the verdict, with the error that
// stopped the loop (an I/O error); an interruption returns what was
// measured, the verdict incomplete, and ctx's error.
func Measure(ctx context.Context, c Config) (*results.Document, *results.CapVerdict, error) {
	sess := c.Session
	if c.Baseline == nil && c.Provisioned == nil {
		c.Notice(fmt.Sprintf("measuring the uncapped baseline first (%s)", c.BaselineFile))
		bdoc := c.NewDocument()
		// Saved after every cell, like the capped phase: an interruption
		// keeps what was measured.
		loop := session.Loop{Runner: sess.Local(), Options: c.Options, Display: c.Display(), Doc: bdoc, Out: c.BaselineFile, Notice: c.Notice}
		if err := loop.Measure(ctx, c.Patterns); err != nil {
			return nil, nil, err
		}
		c.Baseline = bdoc.ByName()
	}
	if err := sess.Start(); err != nil {
		return nil, nil, err
	}
	doc := c.NewDocument()
	var check func(*results.Result)
	if c.Provisioned != nil {
		doc.Cap = c.Provisioned.Record(doc.Target.Device)
		c.Notice("measuring against " + report.DescribeCap(doc.Cap))
		check = ProvisionedJudge(c.Sys, doc, c.TolerancePct)
	} else {
		c.Notice("measuring under " + report.DescribeCap(doc.Cap))
		check = CellJudge(c.Sys, doc.Cap, c.TolerancePct, c.Baseline)
	}
	loop := session.Loop{Runner: sess.Runner(), Options: c.Options, Display: c.Display(), Doc: doc, Out: c.Out,
		Check: check, Notice: c.Notice}
	_, runErr := loop.Run(ctx, c.Patterns)
	complete, err := loop.Finish(ctx, runErr)
	if err != nil {
		return nil, nil, err
	}
	if runErr == nil {
		runErr = ctx.Err()
	}
	v := Verdict(doc, VerdictRun{ResultsFile: c.Out, BaselineFile: c.BaselineFile, TolerancePct: c.TolerancePct, Complete: complete})
	return doc, v, runErr
}
