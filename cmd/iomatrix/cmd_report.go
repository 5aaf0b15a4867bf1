package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/report"
)

func newReportCommand(g *globalOptions) *cobra.Command {
	var r report.Request
	cmd := command("report", "report FILE.json", "Render a results file or an observation as text, Markdown, CSV, JSON, HTML or XLSX", exactArgs(1), func(cmd *cobra.Command, args []string) error {
		r.Path, r.Terminal, r.Given = args[0], g.stdoutTTY, cmd.Flags().Changed
		return formatError(report.Render(g.stdout, r))
	})
	f := cmd.Flags()
	f.StringVar(&r.Format, "format", "text", "output format: text, markdown, csv, json, html, xlsx, openmetrics (an observation: text, markdown, csv, html, json)")
	f.StringVar(&r.Metric, "metric", "iops", "cell value: iops, mibps, lat-mean, lat-p50, lat-p99, lat-p99.9, or iops@p99<2ms (per row, the most IOPS whose p99 proves the bound)")
	f.BoolVar(&r.Wide, "wide", false, "csv: the matrix shape instead of one row per result")
	f.StringVarP(&r.Out, "out", "o", "", "write to this file instead of stdout (format from its extension)")
	forceFlag(f, "--out file")
	fractionVar(f, &r.Outlier, "outlier", "10%", "fleet documents (iomatrix merge): flag a member this far below the fleet median (above, for latency)")
	return cmd
}

// formatError words report's refusal of a format, which names -o.
func formatError(err error) error {
	var fe *report.FormatError
	switch {
	case !errors.As(err, &fe):
		return err
	case fe.Binary != "":
		return usagef("--format %s is binary: write it to a file with -o FILE.%s", fe.Binary, fe.Binary)
	case fe.Observation:
		return usagef("-o %s: an observation renders as %s; give -o a file ending .txt, .md, .csv, .html or .json, or --format",
			fe.Out, strings.Join(fe.Formats, ", "))
	}
	return usagef("-o %s: cannot tell the format from the extension; give --format (%v)", fe.Out, fe.Formats)
}

func newCompareCommand(g *globalOptions) *cobra.Command {
	var format, metric string
	cmd := command("compare", "compare BASE.json NEW.json", "Compare two results files cell by cell", exactArgs(2), func(cmd *cobra.Command, args []string) error {
		return report.CompareFiles(g.stdout, args[0], args[1], metric, format, g.notice)
	})
	formatVar(cmd.Flags(), &format, report.ComparisonFormats, "output format: text, markdown, csv, json")
	cmd.Flags().StringVar(&metric, "metric", "iops", "compared value: iops, mibps, lat-mean, lat-p50, lat-p99, lat-p99.9")
	return cmd
}
