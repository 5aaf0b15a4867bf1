package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/answers/iocost"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

func newIOCostCommand(g *globalOptions) *cobra.Command {
	return group("iocost", "The kernel's proportional I/O controller, set up from a sweep",
		newIOCostModelCommand(g), newIOCostApplyCommand(g), newIOCostShowCommand(g), newIOCostResetCommand(g))
}

// iocostHostOptions say where the controller's files and the state are.
type iocostHostOptions struct {
	CgroupFS, SysFS, State string
}

func (o *iocostHostOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.CgroupFS, "cgroupfs", cgroup.DefaultRoot, "where the cgroup2 root is mounted")
	f.StringVar(&o.SysFS, "sysfs", sysfs.SysRoot, "where sysfs is mounted")
	f.StringVar(&o.State, "state", "", "the file that keeps the lines from before the first apply (default: /var/lib/iomatrix/iocost-MAJ_MIN.json)")
}

func (o *iocostHostOptions) sys() sysfs.FS { return sysfs.NewFS(o.SysFS, sysfs.ProcRoot) }

// request is the device DEVICE's iocost, where the flags say.
func (o *iocostHostOptions) request(device string) iocost.Request {
	return iocost.Request{Sys: o.sys(), CgroupRoot: o.CgroupFS, Device: device, State: o.State}
}

// iocostError words a device that resolves to no disk as the argument
// it is, and maps a host or device that cannot take iocost to bad input.
func iocostError(err error) error {
	var ie *fault.InputError
	switch {
	case errors.As(err, &ie) && ie.Option == "device":
		return usagef("DEVICE %w", ie.Err)
	case errors.Is(err, iocost.ErrUnusable):
		return usagef("%w", err)
	}
	return err
}

// printIOCost prints what an iocost command did (text), then its notes,
// and returns the command's error err, worded.
func printIOCost(g *globalOptions, text func(io.Writer) error, notes []string, err error) error {
	if werr := text(g.stdout); werr != nil {
		return werr
	}
	for _, n := range notes {
		g.notice(n)
	}
	return iocostError(err)
}

func newIOCostApplyCommand(g *globalOptions) *cobra.Command {
	var r iocost.ApplyRequest
	o := &iocostHostOptions{}
	cmd := command("iocost-apply", "apply DEVICE --from RESULTS.json [--dry-run]",
		"Write the model and QoS derived from a sweep to the root's io.cost.model and io.cost.qos, keeping what was there", exactArgs(1),
		func(cmd *cobra.Command, args []string) error {
			r.Request = o.request(args[0])
			a, err := r.Apply()
			if a.VrateNote != nil {
				g.notice(a.VrateNote.Text(flagName)) // before the lines
			}
			return printIOCost(g, a.WriteText, a.Notes, err)
		})
	cmd.Flags().StringArrayVar(&r.From, "from", nil, "results files of the device (the iocost profile's, and the QoS rate runs'); repeatable")
	cmd.Flags().BoolVar(&r.DryRun, "dry-run", false, "print the lines and check them, write nothing")
	cmd.Flags().StringVar(&r.Vrate, "vrate", "face", "the QoS's vrate bounds: face (rd-agent's min=60 max=100, the model at face value), honest (both scaled by the honest vrate of the model's check), or MIN-MAX in percent (e.g. 1-100)")
	o.addFlags(cmd)
	return cmd
}

func newIOCostShowCommand(g *globalOptions) *cobra.Command {
	o := &iocostHostOptions{}
	cmd := command("iocost-show", "show DEVICE", "Print the device's io.cost.model and io.cost.qos lines, and the state iocost apply saved", exactArgs(1),
		func(cmd *cobra.Command, args []string) error {
			s, err := o.request(args[0]).Show()
			return printIOCost(g, s.WriteText, nil, err)
		})
	o.addFlags(cmd)
	return cmd
}

func newIOCostResetCommand(g *globalOptions) *cobra.Command {
	o := &iocostHostOptions{}
	cmd := command("iocost-reset", "reset DEVICE", "Restore the io.cost.model and io.cost.qos lines from before the first iocost apply", exactArgs(1),
		func(cmd *cobra.Command, args []string) error {
			r, err := o.request(args[0]).Reset()
			return printIOCost(g, r.WriteText, r.Notes, err)
		})
	o.addFlags(cmd)
	return cmd
}

func newIOCostModelCommand(g *globalOptions) *cobra.Command {
	var format, out string
	cmd := command("iocost-model", "model RESULTS.json...", "Derive io.cost.model and io.cost.qos from measured cells, and check the model against every other cell",
		minArgs(1, "at least one results file"), func(cmd *cobra.Command, args []string) error { return runIOCostModel(g, format, out, args) })
	formatVar(cmd.Flags(), &format, []string{"text", "json", "html"}, "text, json, or html (one chart: predicted against measured)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	forceFlag(cmd.Flags(), "--out file")
	return cmd
}

// runIOCostModel renders the model of the results files paths in format,
// to out or stdout.
func runIOCostModel(g *globalOptions, format, out string, paths []string) error {
	if format == "html" && out == "" && g.stdoutTTY {
		return usagef("--format html: write it to a file with -o FILE.html")
	}
	r, err := iocost.FromFiles(paths)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch format {
	case "json":
		err = report.WriteJSON(&buf, r)
	case "html":
		err = report.WritePredictedHTML(&buf, r.PredictedPage())
	default:
		err = r.WriteText(&buf)
	}
	if err != nil {
		return fmt.Errorf("render the report: %w", err)
	}
	return results.WriteOut(g.stdout, out, buf.Bytes())
}
