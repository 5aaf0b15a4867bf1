package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/iocost"
	"github.com/iomatrix/iomatrix/results"
)

func newIOCostCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "iocost",
		Short: "The kernel's proportional I/O controller, set up from a sweep",
		Long:  longHelp("iocost"),
	}
	cmd.AddCommand(newIOCostModelCommand(g))
	return cmd
}

type iocostModelOptions struct {
	Format string
}

func newIOCostModelCommand(g *globalOptions) *cobra.Command {
	o := &iocostModelOptions{}
	cmd := &cobra.Command{
		Use:     "model RESULTS.json...",
		Short:   "Derive io.cost.model and io.cost.qos from measured cells, and check the model against every other cell",
		Long:    longHelp("iocost-model"),
		Example: examples("iocost-model"),
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIOCostModel(g, o, args)
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "text", "text or json")
	return cmd
}

func runIOCostModel(g *globalOptions, o *iocostModelOptions, paths []string) error {
	if o.Format != "text" && o.Format != "json" {
		return usagef("--format: %q is not one of text, json", o.Format)
	}
	var docs []*results.Document
	for _, p := range paths {
		d, err := loadResults(p)
		if err != nil {
			return err
		}
		if len(docs) > 0 && d.Target.Device != docs[0].Target.Device {
			return usagef("%s: measured %s, not %s as %s: one model is one device's", p, d.Target.Device, docs[0].Target.Device, paths[0])
		}
		docs = append(docs, d)
	}
	d, err := iocost.Derive(docs)
	if errors.Is(err, iocost.ErrCannotDerive) {
		return usagef("%s: %w (the iocost profile measures every cell the model needs: iomatrix sweep TARGET --profile iocost)", paths[0], err)
	}
	if err != nil {
		return err
	}
	t := docs[0].Target
	span := docs[0].Settings.SizeBytes
	if span == 0 {
		span = t.SizeBytes
	}
	ch := iocost.CheckModel(d.Model, iocost.Cells(docs), span, t.MaxSectorsKB*1024)
	r := iocost.NewReport(d, ch)
	if o.Format == "json" {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	if err := r.WriteText(g.stdout); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}
