package main

import (
	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/iotest/fio"
)

func newImportCommand(g *globalOptions) *cobra.Command {
	var out string
	cmd := command("import", "import FIO.json...", "Convert fio's JSON output into an iomatrix results file",
		func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s needs at least one fio JSON file", cmd.CommandPath())
			}
			return nil
		},
		func(cmd *cobra.Command, args []string) error { return fio.Convert(g.stdout, args, out, g.notice) })
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the results document here instead of stdout")
	forceFlag(cmd.Flags(), "--out file")
	return cmd
}
