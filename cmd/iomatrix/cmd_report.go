package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

type reportOptions struct {
	Format  string
	Metric  string
	Wide    bool
	Out     string
	Outlier float64 // a fraction
}

func newReportCommand(g *globalOptions) *cobra.Command {
	o := &reportOptions{}
	cmd := command("report", "report FILE.json", "Render a results file or an observation as text, Markdown, CSV, JSON, HTML or XLSX", exactArgs(1), func(cmd *cobra.Command, args []string) error {
		if data := observationBytes(args[0]); data != nil {
			return runObservationReport(g, o, args[0], data, cmd.Flags())
		}
		return runReport(g, o, args[0], cmd.Flags().Changed("format"))
	})
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", "text", "output format: text, markdown, csv, json, html, xlsx, openmetrics (an observation: text, markdown, csv, html, json)")
	f.StringVar(&o.Metric, "metric", "iops", "cell value: iops, mibps, lat-mean, lat-p50, lat-p99, lat-p99.9, or iops@p99<2ms (per row, the most IOPS whose p99 proves the bound)")
	f.BoolVar(&o.Wide, "wide", false, "csv: the matrix shape instead of one row per result")
	f.StringVarP(&o.Out, "out", "o", "", "write to this file instead of stdout (format from its extension)")
	fractionVar(f, &o.Outlier, "outlier", "10%", "fleet documents (iomatrix merge): flag a member this far below the fleet median (above, for latency)")
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
	format, err := outFormat(o.Format, formatSet, o.Out, report.Formats())
	if err != nil {
		return err
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
	if err := checkOutPath("--out", o.Out); err != nil {
		return err
	}
	doc, err := loadResults(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := write(&buf, doc, report.Options{Metric: metric, Wide: o.Wide, Outlier: o.Outlier}); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	return emitReport(g, o.Out, buf.Bytes())
}

// outFormat is the format asked, or, for -o FILE without --format, the
// one of the file's extension among those a document renders in.
func outFormat(format string, given bool, out string, formats []string) (string, error) {
	if out == "" || given {
		return format, nil
	}
	f, ok := report.FormatForPath(out)
	if !ok || !slices.Contains(formats, f) {
		return "", usagef("-o %s: cannot tell the format from the extension; give --format (%v)", out, formats)
	}
	return f, nil
}

// emitReport writes a rendering whole, to stdout or atomically to out:
// a failed rendering leaves neither half a page nor a broken file.
func emitReport(g *globalOptions, out string, rendered []byte) error {
	if out == "" {
		_, err := g.stdout.Write(rendered)
		return err
	}
	return results.WriteBytesAtomic(out, rendered)
}

// observationBytes is the content of path when it is an observation,
// nil otherwise: a file that cannot be read or is no iomatrix document is
// left to the results reader, which says what is wrong with it.
func observationBytes(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if kind, err := results.DocumentKind(data); err != nil || kind != results.KindObservation {
		return nil
	}
	return data
}

// runObservationReport renders an observation (iomatrix observe's
// document) in one of report.ObservationFormats. The flags that shape a
// results file's matrix have nothing to act on here: given explicitly,
// they are refused rather than ignored.
func runObservationReport(g *globalOptions, o *reportOptions, path string, data []byte, flags *pflag.FlagSet) error {
	for _, name := range []string{"metric", "wide", "outlier"} {
		if flags.Changed(name) {
			return usagef("--%s: %s is an observation, which has no matrix to pick cells or members from", name, path)
		}
	}
	format, err := outFormat(o.Format, flags.Changed("format"), o.Out, report.ObservationFormats)
	if err != nil {
		return usagef("-o %s: an observation renders as %s; give -o a file ending .txt, .md, .csv, .html or .json, or --format",
			o.Out, strings.Join(report.ObservationFormats, ", "))
	}
	write, err := report.LookupObservation(format)
	if err != nil {
		return usagef("--format %s: an observation renders as %s", format, strings.Join(report.ObservationFormats, ", "))
	}
	if err := checkOutPath("--out", o.Out); err != nil {
		return err
	}
	obs, err := results.ReadObservation(bytes.NewReader(data))
	if err != nil {
		return fault.AsInput(fmt.Errorf("%s: %w", path, err))
	}
	var buf bytes.Buffer
	if err := write(&buf, obs); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	return emitReport(g, o.Out, buf.Bytes())
}

type compareOptions struct {
	Format string
	Metric string
}

func newCompareCommand(g *globalOptions) *cobra.Command {
	o := &compareOptions{}
	cmd := command("compare", "compare BASE.json NEW.json", "Compare two results files cell by cell", exactArgs(2), func(cmd *cobra.Command, args []string) error {
		metric, err := cellMetric(o.Metric)
		if err != nil {
			return err
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
	})
	formatVar(cmd.Flags(), &o.Format, report.ComparisonFormats, "output format: text, markdown, csv, json")
	cmd.Flags().StringVar(&o.Metric, "metric", "iops", "compared value: iops, mibps, lat-mean, lat-p50, lat-p99, lat-p99.9")
	return cmd
}
