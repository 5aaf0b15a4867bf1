package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
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

// fitOutput is the JSON form of a verdict.
type fitOutput struct {
	Fits        bool            `json:"fits"`
	Need        fitNeed         `json:"need"`
	Member      string          `json:"member,omitempty"`
	Cell        string          `json:"cell"`
	Pattern     results.Pattern `json:"pattern"`
	IOPS        float64         `json:"iops"`
	HeadroomPct float64         `json:"headroom_pct"`
	Latency     []fitLatency    `json:"latency,omitempty"`
	Why         string          `json:"why,omitempty"`
	Notes       []string        `json:"notes,omitempty"`
	Systems     []fitSystem     `json:"systems,omitempty"`
}

type fitNeed struct {
	ReadIOPS    float64  `json:"read_iops"`
	WriteIOPS   float64  `json:"write_iops"`
	BlockSize   int64    `json:"block_size"`
	Concurrency int      `json:"concurrency,omitempty"`
	Bounds      []string `json:"bounds,omitempty"`
}

type fitLatency struct {
	Bound string  `json:"bound"`
	US    float64 `json:"us"`
	Holds bool    `json:"holds"`
}

type fitSystem struct {
	Name      string   `json:"name"`
	ReadIOPS  float64  `json:"read_iops"`
	WriteIOPS float64  `json:"write_iops"`
	Cap       string   `json:"cap,omitempty"`
	IOMax     string   `json:"io_max,omitempty"`
	Blkio     []string `json:"blkio_throttle,omitempty"`
}

func runFit(g *globalOptions, o *fitOptions, path string) error {
	if (o.Need == "") == (o.Workload == "") {
		return usagef("--need or --workload: give one of them")
	}
	if o.Format != "text" && o.Format != "json" {
		return usagef("--format: %q is not one of text, json", o.Format)
	}
	var (
		need sizing.Need
		work *sizing.Workload
		err  error
	)
	if o.Need != "" {
		if need, err = sizing.ParseNeed(o.Need); err != nil {
			return usagef("--need: %w", err)
		}
	} else {
		data, err := os.ReadFile(o.Workload)
		if err != nil {
			return usagef("--workload: %w", err)
		}
		w, err := sizing.ParseWorkload(o.Workload, data)
		if err != nil {
			return usagef("--workload %w", err)
		}
		work, need = &w, w.Sum()
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
	out := fitResult(v, work, deviceOf(doc))
	if o.Format == "json" {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		writeFitText(g.stdout, v, out)
	}
	if !v.Fits {
		return commandError{code: exitFailure, err: fmt.Errorf("does not fit: %s", v.Why)}
	}
	return nil
}

// deviceOf is the measured device, for the cap lines.
func deviceOf(doc *results.Document) sysfs.DevNum {
	dev, _ := sysfs.ParseDevNum(doc.Target.Device)
	if len(doc.Members) > 0 {
		dev, _ = sysfs.ParseDevNum(doc.Members[0].Target.Device)
	}
	return dev
}

func fitResult(v sizing.Verdict, work *sizing.Workload, dev sysfs.DevNum) fitOutput {
	out := fitOutput{Fits: v.Fits, Member: v.Member, Cell: v.Cell.Name, Pattern: v.Cell.Pattern, IOPS: v.IOPS,
		HeadroomPct: 100 * v.Headroom, Why: v.Why, Notes: v.Notes,
		Need: fitNeed{ReadIOPS: v.Need.ReadIOPS, WriteIOPS: v.Need.WriteIOPS, BlockSize: v.Need.BlockSize, Concurrency: v.Need.Concurrency}}
	for _, b := range v.Need.Bounds {
		out.Need.Bounds = append(out.Need.Bounds, b.String())
	}
	for _, c := range v.Latency {
		out.Latency = append(out.Latency, fitLatency{Bound: c.Bound.String(), US: c.Value, Holds: c.Holds})
	}
	if work == nil {
		return out
	}
	shares := work.Shares(v)
	for i, s := range work.Systems {
		sys := fitSystem{Name: s.Name, ReadIOPS: s.ReadIOPS, WriteIOPS: s.WriteIOPS}
		if v.Fits {
			l := cgroup.Limit{Device: dev, ReadIOPS: shares[i].ReadIOPS, WriteIOPS: shares[i].WriteIOPS}
			sys.Cap = fmt.Sprintf("riops=%d,wiops=%d", l.ReadIOPS, l.WriteIOPS)
			sys.IOMax = l.String()
			sys.Blkio = l.V1Lines()
		}
		out.Systems = append(out.Systems, sys)
	}
	return out
}

func writeFitText(w io.Writer, v sizing.Verdict, out fitOutput) {
	need := v.Need
	verdict := "FITS"
	if !v.Fits {
		verdict = "DOES NOT FIT"
	}
	var at []string
	at = append(at, results.ShortSize(need.BlockSize))
	if need.Concurrency > 0 {
		at = append(at, fmt.Sprintf("%d in flight", need.Concurrency))
	}
	for _, b := range need.Bounds {
		at = append(at, b.String())
	}
	fmt.Fprintf(w, "%s: %s reads + %s writes = %s IOPS (%.0f %% reads) at %s\n", verdict, units.Thousands(need.ReadIOPS, 0),
		units.Thousands(need.WriteIOPS, 0), units.Thousands(need.Total(), 0), need.ReadPct(), strings.Join(at, ", "))
	p := v.Cell.Pattern
	member := ""
	if v.Member != "" {
		member = " of member " + v.Member + " (the fleet's worst)"
	}
	fmt.Fprintf(w, "cell: %s%s (%s, %d %% reads, QD%d×%d): %s IOPS", v.Cell.Name, member, results.ShortSize(p.BlockSize), p.ReadPct,
		p.QueueDepth, max(p.Jobs, 1), units.Thousands(v.IOPS, 0))
	for _, c := range v.Latency {
		fmt.Fprintf(w, ", %s %s µs", strings.TrimPrefix(string(c.Bound.Metric), "lat-"), units.Thousands(c.Value, 0))
	}
	fmt.Fprintf(w, "\nheadroom: %+.1f %%\n", 100*v.Headroom)
	if !v.Fits {
		fmt.Fprintf(w, "why: %s\n", v.Why)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(out.Systems) == 0 {
		return
	}
	fmt.Fprintf(w, "\nsystems:\n")
	for _, s := range out.Systems {
		fmt.Fprintf(w, "  %s: %s reads/s, %s writes/s", s.Name, units.Thousands(s.ReadIOPS, 0), units.Thousands(s.WriteIOPS, 0))
		if s.Cap == "" {
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintf(w, "\n    --cap %s\n    io.max: %s\n", s.Cap, s.IOMax)
		for _, l := range s.Blkio {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}
