package session

import (
	"context"
	"fmt"
	"math"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// One is a single pattern to measure, as run measures it: closed-loop, at
// its rate, or open-loop at SharePct of its closed-loop maximum.
type One struct {
	Pattern results.Pattern
	// SharePct, when above 0, is the share (in percent) of the pattern's
	// closed-loop maximum its open-loop run takes: the maximum is
	// measured first and kept beside the run, and measured again after
	// it when the rate was not sustained (the device, or the stream?).
	SharePct float64
	// Arrival is how the open-loop run of a share's I/Os arrive.
	Arrival string
	Options iotest.Options
	// Done is called after each measurement (the display's end of it).
	Done   func()
	Notice func(string)
}

// MeasureOne measures o with runner into doc: the maximum first when o
// is a share of it, then the pattern. It returns the pattern's result
// with the run's error: an I/O error comes with the result measured so
// far, which is recorded; res is nil when there is nothing to record
// (an interruption, or the maximum failed).
func MeasureOne(ctx context.Context, runner Runner, doc *results.Document, o One) (res *results.Result, err error) {
	p := o.Pattern
	closed := func() (results.Result, error) {
		q := p
		q.Rate = results.Rate{}
		// The log is the open loop's: the maximum's I/Os are not in it.
		co := o.Options
		co.LatLog = iotest.LatLog{}
		r, err := runner.Run(ctx, q, co)
		o.Done()
		return r, err
	}
	if o.SharePct > 0 {
		top, err := closed()
		if err != nil {
			return nil, err
		}
		doc.Results = append(doc.Results, top)
		if top.Total.IOPS < 1 {
			return nil, fmt.Errorf("%s: no I/O completed in the closed loop: no rate to take a share of", top.Name)
		}
		p.Rate = results.Rate{IOPS: math.Max(1, math.Round(o.SharePct/100*top.Total.IOPS)), Arrival: o.Arrival}
		o.Notice(fmt.Sprintf("closed-loop maximum %s IOPS; open loop at %s of it: %s IOPS",
			units.Thousands(top.Total.IOPS, 0), units.FormatPercent(o.SharePct), units.Thousands(p.Rate.IOPS, 0)))
	}
	r, runErr := runner.Run(ctx, p, o.Options)
	o.Done()
	if runErr != nil && r.Name == "" {
		return nil, runErr
	}
	if o.SharePct > 0 && runErr == nil && r.Rate != nil && !r.Rate.Sustained {
		again, err := closed()
		if err != nil {
			return nil, err
		}
		r.Rate.MaxAfterIOPS = again.Total.IOPS
		o.Notice(fmt.Sprintf("the rate was not sustained; the closed-loop maximum measured again after it: %s IOPS (was %s): the target of %s IOPS is %.1f %% of it",
			units.Thousands(again.Total.IOPS, 0), units.Thousands(doc.Results[0].Total.IOPS, 0), units.Thousands(p.Rate.IOPS, 0),
			100*p.Rate.IOPS/max(again.Total.IOPS, 1)))
	}
	if msg := OtherLoadNotice(r, doc.Target.Disk); msg != "" {
		o.Notice(msg)
	}
	doc.Results = append(doc.Results, r)
	return &doc.Results[len(doc.Results)-1], runErr
}
