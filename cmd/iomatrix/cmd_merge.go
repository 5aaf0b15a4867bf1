package main

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

type mergeOptions struct {
	Out    string
	Labels []string
	fleetOptions
}

func newMergeCommand(g *globalOptions) *cobra.Command {
	o := &mergeOptions{}
	cmd := command("merge", "merge A.json B.json...", "Merge the results of several machines or volumes into one fleet document",
		func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("%s needs two results files or more (got %d)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		func(cmd *cobra.Command, args []string) error { return runMerge(g, o, args) })
	f := cmd.Flags()
	f.StringVarP(&o.Out, "out", "o", "", "write the fleet document here (a results file that report and compare read)")
	f.StringArrayVar(&o.Labels, "label", nil, "label of the next member, once per file in order (default: its host, or host:target where hosts repeat)")
	o.fleetOptions.AddFlags(f)
	return cmd
}

func runMerge(g *globalOptions, o *mergeOptions, files []string) error {
	fo, err := o.fleetOptions.output()
	if err != nil {
		return err
	}
	if len(o.Labels) > 0 && len(o.Labels) != len(files) {
		return usagef("--label: %d given for %d files; give one per file, in order, or none", len(o.Labels), len(files))
	}
	if err := checkOutPath("--out", o.Out); err != nil {
		return err
	}
	in := make([]report.MemberInput, len(files))
	for i, name := range files {
		d, err := loadResults(name)
		if err != nil {
			return err
		}
		in[i] = report.MemberInput{Doc: d, Source: name}
		if len(o.Labels) > 0 {
			in[i].Label = o.Labels[i]
		}
	}
	fleet, err := report.Merge(in)
	if errors.Is(err, report.ErrMerge) {
		return fault.AsInput(err)
	}
	if err != nil {
		return err
	}
	if o.Out != "" {
		if err := results.WriteFileAtomic(o.Out, fleet); err != nil {
			return err
		}
		fmt.Fprintf(g.stderr, "iomatrix: fleet of %s, %s, written to %s\n", units.Count(len(fleet.Members), "member"),
			units.Count(len(fleet.Results), "cell"), o.Out)
	}
	return fo.write(g, fleet)
}

// fleetOptions are the flags of the fleet report that merge and k8s
// print on stdout.
type fleetOptions struct {
	Format  string
	Metric  string
	Outlier float64 // a fraction
}

func (o *fleetOptions) AddFlags(f *pflag.FlagSet) {
	formatVar(f, &o.Format, []string{"text", "markdown", "csv", "json", "html"}, "fleet report on stdout: text, markdown, csv, json, html")
	f.StringVar(&o.Metric, "metric", "iops", "cell value and deviation: iops, mibps, lat-mean, lat-p50, lat-p99, lat-p99.9")
	fractionVar(f, &o.Outlier, "outlier", "10%", "flag a member whose figures are this far below the fleet median (above, for latency)")
}

// fleetOutput is the report of the fleet, as the flags ask for it.
type fleetOutput struct {
	writer report.WriteFunc
	opts   report.Options
}

// output checks --metric and makes the report's writer.
func (o *fleetOptions) output() (fleetOutput, error) {
	m, err := cellMetric(o.Metric)
	if err != nil {
		return fleetOutput{}, err
	}
	write, err := report.Lookup(o.Format)
	if err != nil {
		return fleetOutput{}, usagef("--format: %w", err)
	}
	return fleetOutput{writer: write, opts: report.Options{Metric: m, Outlier: o.Outlier}}, nil
}

// write prints the report of doc (a fleet or one results document).
func (fo fleetOutput) write(g *globalOptions, doc *results.Document) error {
	var buf bytes.Buffer
	if err := fo.writer(&buf, doc, fo.opts); err != nil {
		return err
	}
	_, err := g.stdout.Write(buf.Bytes())
	return err
}
