package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

type reportOptions struct {
	Format  string
	Metric  string
	Wide    bool
	Out     string
	Outlier string
}

func newReportCommand(g *globalOptions) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:     "report FILE.json",
		Short:   "Render a results file as text, Markdown, CSV, JSON, HTML or XLSX",
		Long:    longHelp("report"),
		Example: examples("report"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(g, o, args[0], cmd.Flags().Changed("format"))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", "text", "output format: text, markdown, csv, json, html, xlsx, openmetrics")
	f.StringVar(&o.Metric, "metric", "iops", "cell value: iops, mibps, lat-mean, lat-p50, lat-p99, lat-p99.9, or iops@p99<2ms (per row, the most IOPS whose p99 proves the bound)")
	f.BoolVar(&o.Wide, "wide", false, "csv: the matrix shape instead of one row per result")
	f.StringVarP(&o.Out, "out", "o", "", "write to this file instead of stdout (format from its extension)")
	f.StringVar(&o.Outlier, "outlier", "10%", "fleet documents (iomatrix merge): flag a member this far below the fleet median (above, for latency)")
	return cmd
}

// cellMetric parses --metric for the commands that compare cell by cell
// (compare, merge, k8s): a per-row bound metric is report's alone.
func cellMetric(s string) (report.Metric, error) {
	m, err := report.ParseMetric(s)
	if err != nil {
		return "", usagef("--metric: %w", err)
	}
	if _, bounded := m.Bounded(); bounded {
		return "", usagef("--metric: %s picks one cell per row, which only iomatrix report shows; compare cells with iops or lat-p99", s)
	}
	return m, nil
}

// loadResults reads a results file for rendering; every problem is bad
// input naming the file.
func loadResults(path string) (*results.Document, error) {
	d, err := results.ReadResultsFile(path)
	return d, fault.AsInput(err)
}

func runReport(g *globalOptions, o *reportOptions, path string, formatSet bool) error {
	metric, err := report.ParseMetric(o.Metric)
	if err != nil {
		return usagef("--metric: %w", err)
	}
	format := o.Format
	if o.Out != "" && !formatSet {
		f, ok := report.FormatForPath(o.Out)
		if !ok {
			return usagef("-o %s: cannot tell the format from the extension; give --format (%v)", o.Out, report.Formats())
		}
		format = f
	}
	write, err := report.Lookup(format)
	if err != nil {
		return usagef("--format: %w", err)
	}
	if err := report.CheckMetric(format, metric); err != nil {
		return err
	}
	if o.Out == "" && report.Binary(format) && g.stdoutTTY {
		return usagef("--format %s is binary: write it to a file with -o FILE.%s", format, format)
	}
	outlier, err := parsePercentFlag("--outlier", o.Outlier)
	if err != nil {
		return err
	}
	if err := checkOutPath("--out", o.Out); err != nil {
		return err
	}
	doc, err := loadResults(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := write(&buf, doc, report.Options{Metric: metric, Wide: o.Wide, Outlier: outlier}); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	if o.Out == "" {
		_, err := g.stdout.Write(buf.Bytes())
		return err
	}
	return results.WriteBytesAtomic(o.Out, buf.Bytes())
}

type compareOptions struct {
	Format string
	Metric string
}

func newCompareCommand(g *globalOptions) *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare BASE.json NEW.json",
		Short: "Compare two results files cell by cell",
		Long:  longHelp("compare"),
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			metric, err := cellMetric(o.Metric)
			if err != nil {
				return err
			}
			if !slices.Contains(report.ComparisonFormats, o.Format) {
				return usagef("--format: %q is not one of %v", o.Format, report.ComparisonFormats)
			}
			base, err := loadResults(args[0])
			if err != nil {
				return err
			}
			cur, err := loadResults(args[1])
			if err != nil {
				return err
			}
			c := report.Compare(base, cur, filepath.Base(args[0]), filepath.Base(args[1]), metric)
			if err := report.WriteComparison(g.stdout, c, o.Format); err != nil {
				return err
			}
			if note := c.DifferencesNote(); note != "" && o.Format == "csv" {
				// CSV has no header to name them in: a person still sees
				// them, a script reading stdout gets cells only.
				fmt.Fprintf(g.stderr, "iomatrix: note: %s\n", note)
			}
			return c.Err()
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "text", "output format: text, markdown, csv, json")
	cmd.Flags().StringVar(&o.Metric, "metric", "iops", "compared value: iops, mibps, lat-mean, lat-p50, lat-p99, lat-p99.9")
	return cmd
}
