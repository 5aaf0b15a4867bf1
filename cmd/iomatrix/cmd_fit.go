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
		Use:     "fit RESULTS.json (--need SPEC | --workload FILE)",
		Short:   "Does this volume carry this workload? A verdict from measured cells",
		Long:    longHelp("fit"),
		Example: examples("fit"),
		Args:    exactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return runFit(g, o, args[0]) },
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
		return &commandError{Code: exitFailure, Err: fmt.Errorf("does not fit: %s", v.Why)}
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
