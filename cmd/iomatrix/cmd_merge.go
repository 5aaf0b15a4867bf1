package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/report"
)

func newMergeCommand(g *globalOptions) *cobra.Command {
	var m report.Merging
	cmd := command("merge", "merge A.json B.json...", "Merge the results of several machines or volumes into one fleet document",
		func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("%s needs two results files or more (got %d)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		func(cmd *cobra.Command, args []string) error {
			m.Files, m.Notice = args, g.notice
			return report.MergeFiles(g.stdout, m)
		})
	f := cmd.Flags()
	f.StringVarP(&m.Out, "out", "o", "", "write the fleet document here (a results file that report and compare read)")
	forceFlag(f, "--out file")
	f.StringArrayVar(&m.Labels, "label", nil, "label of the next member, once per file in order (default: its host, or host:target where hosts repeat)")
	fleetFlags(f, &m.Report)
	return cmd
}

// fleetFlags are the flags of the fleet report that merge and k8s print
// on stdout.
func fleetFlags(f *pflag.FlagSet, r *report.FleetReport) {
	formatVar(f, &r.Format, report.FleetFormats, "fleet report on stdout: text, markdown, csv, json, html")
	f.StringVar(&r.Metric, "metric", "iops", "cell value and deviation: iops, mibps, lat-mean, lat-p50, lat-p99, lat-p99.9")
	fractionVar(f, &r.Outlier, "outlier", "10%", "flag a member whose figures are this far below the fleet median (above, for latency)")
}
