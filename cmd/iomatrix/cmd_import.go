package main

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
	"github.com/iomatrix/iomatrix/results/fio"
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
		func(cmd *cobra.Command, args []string) error { return runImport(g, args, out) })
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the results document here instead of stdout")
	return cmd
}

func runImport(g *globalOptions, files []string, out string) error {
	if err := checkOutPath("--out", out); err != nil {
		return err
	}
	doc, err := fio.ImportFiles(files, func(name string, p fio.Problem) {
		fmt.Fprintf(g.stderr, "iomatrix: %s: not imported: %s\n", name, p)
	})
	if err != nil {
		return err
	}
	if len(doc.Results) == 0 {
		return fmt.Errorf("nothing imported from %v: no fio job could be mapped to a pattern", files)
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, doc); err != nil {
		return err
	}
	if out == "" {
		_, err := g.stdout.Write(buf.Bytes())
		return err
	}
	if err := results.WriteBytesAtomic(out, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "iomatrix: %s from %s written to %s\n", units.Count(len(doc.Results), "result"), units.Count(len(files), "file"), out)
	return nil
}
