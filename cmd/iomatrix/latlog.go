package main

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// latLogOptions are run's latency logs: the files, opened once every
// flag and the target have been checked, just before the first I/O.
type latLogOptions struct {
	LatLog, ResponseLog string
	LatLogAvg           time.Duration
}

func (o *latLogOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.LatLog, "lat-log", "", "write the completion latency of every I/O of the window to this `FILE`, as fio's latency logs do: "+
		"time (ms), latency (ns), direction (0 read, 1 write), block size, offset, priority (0); not with --cap, --cgroup or --runtime auto")
	f.StringVar(&o.ResponseLog, "response-log", "", "with --rate: the same for response times, from each I/O's scheduled start, to this `FILE`")
	durationVar(f, &o.LatLogAvg, "lat-log-avg", 0, "with --lat-log: one line per direction per period of this length (whole ms; fio's log_avg_msec), "+
		"the mean of its I/Os, block size and offset 0 (default: a line per I/O)")
}

func (o *latLogOptions) any() bool { return o.LatLog != "" || o.ResponseLog != "" }

// check holds the logs to the run: their engine options (opts, with
// stand-in writers), the pattern (an open loop's share sets the rate
// only once the maximum is measured), and no cap (the capped child could
// not write them).
func (o *latLogOptions) check(opts iotest.Options, p results.Pattern, sharePct float64, capped bool) error {
	l := o.standIn()
	l.Avg = o.LatLogAvg
	opts.LatLog = l
	if err := opts.Validate(); err != nil {
		return err
	}
	if o.any() && capped {
		flag := "--lat-log"
		if o.LatLog == "" {
			flag = "--response-log"
		}
		return usagef("%s: a latency log is written by an uncapped run: not with --cap or --cgroup", flag)
	}
	if sharePct > 0 {
		return nil
	}
	return l.CheckPattern(p)
}

// standIn is the logs with writers that stand for the files not yet
// opened.
func (o *latLogOptions) standIn() iotest.LatLog {
	var l iotest.LatLog
	if o.LatLog != "" {
		l.Completion = io.Discard
	}
	if o.ResponseLog != "" {
		l.Response = io.Discard
	}
	return l
}

// open creates the log files (the output rule was held at the start,
// --force included) and returns the logs and what closes them.
func (o *latLogOptions) open() (iotest.LatLog, func() error, error) {
	l := iotest.LatLog{Avg: o.LatLogAvg}
	var files []*os.File
	closeAll := func() error {
		var errs []error
		for _, f := range files {
			errs = append(errs, f.Close())
		}
		return errors.Join(errs...)
	}
	for _, lf := range []struct {
		path string
		w    *io.Writer
	}{{o.LatLog, &l.Completion}, {o.ResponseLog, &l.Response}} {
		if lf.path == "" {
			continue
		}
		f, err := os.OpenFile(lf.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			_ = closeAll() // the error is the open's
			return l, nil, err
		}
		files = append(files, f)
		*lf.w = f
	}
	return l, closeAll, nil
}
