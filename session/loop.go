package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// Display shows a loop's progress: a pattern starting, its live figures,
// its result, and the end of the loop.
type Display interface {
	Start(p results.Pattern)
	Live(p iotest.Progress)
	Finished(r results.Result)
	Close()
}

// Loop measures patterns one after another: the driver that sweep and
// cap verify share. Every finished cell is appended to Doc and, when Out
// is set, saved at once (atomically), so an interruption loses at most
// the pattern that was running, never a finished one.
type Loop struct {
	Runner  Runner
	Options iotest.Options
	Display Display
	Doc     *results.Document
	Out     string // "" saves nothing per cell
	// KeepGoing records a cell that failed with an I/O error and goes on;
	// otherwise such a cell, saved with its error, ends the loop.
	KeepGoing bool
	// Check, when set, annotates a result before it is saved.
	Check func(res *results.Result)
	// Notice receives the warnings of the loop (a cell measured on a
	// loaded disk, a failed cell passed over, a device changed).
	Notice func(string)
	// Watch, when set with the document's Sentinels, runs the sentinels
	// between cells (see Watch).
	Watch *Watch
}

// Run measures todo and closes the display. It returns the number of
// cells that failed and were passed over, and the error that stopped the
// loop (an I/O error, a failed save, a lost child, a device changed under
// a watch that stops: DriftStopped); an interruption stops it with nil:
// the caller looks at ctx, and the pattern that was running is
// discarded, never half-counted.
func (c *Loop) Run(ctx context.Context, todo []results.Pattern) (failed int, err error) {
	defer c.Display.Close()
	return c.measure(ctx, todo)
}

// measure is Run without closing the display: with a Watch, the sentinel
// runs before a cell when it is due, and the cells it makes due again
// (rerun) are measured first.
func (c *Loop) measure(ctx context.Context, todo []results.Pattern) (failed int, err error) {
	queue := slices.Clone(todo)
	for len(queue) > 0 {
		again, err := c.watch(ctx, false)
		if ctx.Err() != nil {
			return failed, nil
		}
		if err != nil {
			return failed, err
		}
		queue = append(again, queue...)
		p := queue[0]
		queue = queue[1:]
		c.Display.Start(p)
		o := c.Options
		o.Progress = c.Display.Live
		res, err := c.Runner.Run(ctx, p, o)
		if ctx.Err() != nil {
			return failed, nil
		}
		if err != nil && res.Name == "" {
			return failed, err // nothing was measured
		}
		if msg := OtherLoadNotice(res, c.Doc.Target.Disk); msg != "" {
			c.notice(msg)
		}
		if c.Check != nil {
			c.Check(&res)
		}
		c.record(res)
		if c.Out != "" {
			if werr := results.WriteFileAtomic(c.Out, c.Doc); werr != nil {
				return failed, fmt.Errorf("save results (the previous version of %s is intact): %w", c.Out, werr)
			}
		}
		c.Display.Finished(res)
		if err != nil {
			if !c.KeepGoing {
				return failed, err // an I/O error: stop with what is saved
			}
			// The cell is saved with its error; the loop goes on.
			c.notice(fmt.Sprintf("%v (continuing)", err))
			failed++
		}
	}
	return failed, nil
}

// notice passes a warning of the loop on, if anyone listens.
func (c *Loop) notice(msg string) {
	if c.Notice != nil {
		c.Notice(msg)
	}
}

// Finish tells whether every pattern was measured (the loop ended
// without error or interruption) and, if so, marks the document finished
// and saves it.
func (c *Loop) Finish(ctx context.Context, runErr error) (complete bool, err error) {
	if runErr != nil || ctx.Err() != nil {
		return false, nil
	}
	c.Doc.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	if c.Out == "" {
		return true, nil
	}
	return true, results.WriteFileAtomic(c.Out, c.Doc)
}

// Measure runs todo and finishes the document: the error of the loop, of
// the last save, or of ctx when it was interrupted.
func (c *Loop) Measure(ctx context.Context, todo []results.Pattern) error {
	_, runErr := c.Run(ctx, todo)
	if _, err := c.Finish(ctx, runErr); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	return ctx.Err()
}
