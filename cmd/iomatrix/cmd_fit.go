package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/sizing"
)

type fitOptions struct {
	Need     string
	Workload string
	Format   string
}

func newFitCommand(g *globalOptions) *cobra.Command {
	o := &fitOptions{}
	cmd := &cobra.Command{
		Use:   "fit RESULTS.json (--need SPEC | --workload FILE)",
		Short: "Does this volume carry this workload? A verdict from measured cells",
		Long: `Answer "does this volume carry this workload?" from a results file (or a
fleet document, judged on its worst member, named).

--need 'read=8000,write=2000,bs=16k,qd=32,p99<2ms' is one workload: read
and write IOPS (either may be left out), its block size, and optionally
its concurrency (qd: I/Os in flight, queue depth × jobs) and latency
bounds (p50, p99, p99.9 or mean below a duration).

--workload FILE lists several systems to consolidate on the volume, as
their busiest-hour reads/s and writes/s (Statspack/AWR "Physical
reads/writes", InnoDB's FILE I/O reads/s and writes/s):

  systems:
    - {name: erp, reads: 4000, writes: 1000, block_size: 8k, concurrency: 16, latency: "p99<2ms"}
    - {name: web, reads: 1500, writes: 500, block_size: 16k, concurrency: 8}

Their sum is judged (IOPS added, the largest block size, concurrencies
added, each bound's tightest limit), and when it fits, each system gets a
cap that gives it its share of the measured IOPS: --cap strings, io.max
lines (cgroup v2) and blkio.throttle lines (v1), adding up to no more
than the cell measured.

The lookup is conservative and never interpolates upward: the need's
block size or the next larger one measured; the nearest measured read
share at or below the need's (writes cost more); the highest measured
concurrency at or below the need's, or without qd, the measured one with
the most IOPS that meets the bounds. A latency resting on too few I/Os,
or approximate, cannot prove a bound. The verdict names the cell it
rests on and the headroom (measured IOPS over needed, − 1).

Exit status: 0 fits, 1 does not fit, 2 bad input (a malformed need,
naming the field, or results without a cell that can answer it).`,
		Example: `  iomatrix fit results.json --need 'read=8000,write=2000,bs=16k,qd=32,p99<2ms'
  iomatrix fit results.json --need read=20000,bs=4k
  iomatrix fit fleet.json --workload systems.yaml --format json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runFit(g, o, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Need, "need", "", "one workload: read=N,write=N,bs=SIZE[,qd=N][,p99<DURATION]")
	f.StringVar(&o.Workload, "workload", "", "a YAML file of systems to consolidate (see above)")
	f.StringVar(&o.Format, "format", "text", "text or json")
	return cmd
}

func runFit(g *globalOptions, o *fitOptions, path string) error {
	if (o.Need == "") == (o.Workload == "") {
		return usagef("--need or --workload: give one of them")
	}
	if o.Format != "text" && o.Format != "json" {
		return usagef("--format: %q is not one of text, json", o.Format)
	}
	need, work, err := o.need()
	if err != nil {
		return err
	}
	doc, err := loadResults(path)
	if err != nil {
		return err
	}
	v, err := sizing.Judge(doc, need)
	if errors.Is(err, sizing.ErrCannotJudge) {
		return usagef("%s: %w", path, err)
	}
	if err != nil {
		return err
	}
	answer := sizing.NewAnswer(doc, v, work)
	if o.Format == "json" {
		err = answer.WriteJSON(g.stdout)
	} else {
		err = sizing.WriteText(g.stdout, v, answer)
	}
	if err != nil {
		return err
	}
	if !v.Fits {
		return commandError{code: exitFailure, err: fmt.Errorf("does not fit: %s", v.Why)}
	}
	return nil
}

// need is what --need or --workload asks for; work is nil for --need.
func (o *fitOptions) need() (sizing.Need, *sizing.Workload, error) {
	if o.Need != "" {
		need, err := sizing.ParseNeed(o.Need)
		if err != nil {
			return sizing.Need{}, nil, usagef("--need: %w", err)
		}
		return need, nil, nil
	}
	data, err := os.ReadFile(o.Workload)
	if err != nil {
		return sizing.Need{}, nil, usagef("--workload: %w", err)
	}
	w, err := sizing.ParseWorkload(o.Workload, data)
	if err != nil {
		return sizing.Need{}, nil, usagef("--workload %w", err)
	}
	return w.Sum(), &w, nil
}
