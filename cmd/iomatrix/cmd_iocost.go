package main

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/answers/iocost"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

func newIOCostCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "iocost",
		Short: "The kernel's proportional I/O controller, set up from a sweep",
		Long:  longHelp("iocost"),
	}
	cmd.AddCommand(newIOCostModelCommand(g), newIOCostApplyCommand(g), newIOCostShowCommand(g), newIOCostResetCommand(g))
	return cmd
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

// host resolves DEVICE to its whole disk, and finds the controller's
// files (iocost.Resolve).
func (o *iocostHostOptions) host(arg string) (iocost.Host, string, string, error) {
	h, dev, state, err := iocost.Resolve(o.sys(), o.CgroupFS, arg, o.State)
	return h, dev, state, iocostError(err)
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

type iocostApplyOptions struct {
	iocostHostOptions
	From   []string
	DryRun bool
	Vrate  string
}

func newIOCostApplyCommand(g *globalOptions) *cobra.Command {
	o := &iocostApplyOptions{}
	cmd := &cobra.Command{
		Use:     "apply DEVICE --from RESULTS.json [--dry-run]",
		Short:   "Write the model and QoS derived from a sweep to the root's io.cost.model and io.cost.qos, keeping what was there",
		Long:    longHelp("iocost-apply"),
		Example: examples("iocost-apply"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIOCostApply(g, o, args[0])
		},
	}
	cmd.Flags().StringArrayVar(&o.From, "from", nil, "results files of the device (the iocost profile's, and the QoS rate runs'); repeatable")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print the lines and check them, write nothing")
	cmd.Flags().StringVar(&o.Vrate, "vrate", "face", "the QoS's vrate bounds: face (rd-agent's min=60 max=100, the model at face value), honest (both scaled by the honest vrate of the model's check), or MIN-MAX in percent (e.g. 1-100)")
	o.addFlags(cmd)
	return cmd
}

func runIOCostApply(g *globalOptions, o *iocostApplyOptions, arg string) error {
	if len(o.From) == 0 {
		return usagef("--from: give the results files to derive the model from")
	}
	vrate, err := iocost.ParseVrate(o.Vrate)
	if err != nil {
		return err
	}
	h, dev, state, err := o.host(arg)
	if err != nil {
		return err
	}
	if !o.DryRun {
		if err := h.Check(dev); err != nil {
			return iocostError(err)
		}
	}
	r, err := iocost.FromFiles(o.From)
	if err != nil {
		return err
	}
	if r.Derived.Device != dev {
		return usagef("--from %s: measured device %s, not %s (%s)", o.From[0], r.Derived.Device, dev, arg)
	}
	if err := iocost.CheckLines(r.Derived.Model, r.Derived.QoS); err != nil {
		return err
	}
	note, err := r.SetVrate(vrate)
	if err != nil {
		return err
	}
	if note != nil {
		g.notice(note.Text(flagName))
	}
	qosLine := r.QoSLine
	if qosLine == "" {
		qosLine = iocost.AutoQoSLine(dev) + " (no QoS derived: the kernel's own)"
	}
	fmt.Fprintf(g.stdout, "io.cost.model: %s\nio.cost.qos:   %s\n", r.ModelLine, qosLine)
	if o.DryRun {
		if err := h.Check(dev); err != nil {
			g.notice(fmt.Sprintf("note: applying would be refused: %v", err))
		}
		return nil
	}
	a, err := h.Apply(dev, r.Derived.Model, r.Derived.QoS, state)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "read back:\n  %s\n  %s\n", a.Model, a.QoS)
	if a.Kept {
		g.notice(fmt.Sprintf("keeping the state saved at %s in %s (iocost reset restores it)", a.Before.SavedAt, state))
	} else {
		g.notice(fmt.Sprintf("the lines before are saved in %s; iocost reset %s restores them", state, arg))
	}
	return nil
}

func newIOCostShowCommand(g *globalOptions) *cobra.Command {
	o := &iocostHostOptions{}
	cmd := &cobra.Command{
		Use:   "show DEVICE",
		Short: "Print the device's io.cost.model and io.cost.qos lines, and the state iocost apply saved",
		Long:  longHelp("iocost-show"),
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, dev, state, err := o.host(args[0])
			if err != nil {
				return err
			}
			if h.Mode != "unified" {
				return iocostError(h.Check(dev))
			}
			model, qos, err := h.Lines(dev)
			if err != nil {
				return iocostError(fmt.Errorf("%w: %w", iocost.ErrUnusable, err))
			}
			fmt.Fprintf(g.stdout, "io.cost.model: %s\nio.cost.qos:   %s\n", iocost.Shown(model), iocost.Shown(qos))
			if s, err := iocost.ReadState(state); err == nil {
				fmt.Fprintf(g.stdout, "saved by iocost apply at %s (%s), restored by iocost reset:\n  %s\n  %s\n", s.SavedAt, state, iocost.Shown(s.Model), iocost.Shown(s.QoS))
			}
			return nil
		},
	}
	o.addFlags(cmd)
	return cmd
}

func newIOCostResetCommand(g *globalOptions) *cobra.Command {
	o := &iocostHostOptions{}
	cmd := &cobra.Command{
		Use:   "reset DEVICE",
		Short: "Restore the io.cost.model and io.cost.qos lines from before the first iocost apply",
		Long:  longHelp("iocost-reset"),
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, dev, state, err := o.host(args[0])
			if err != nil {
				return err
			}
			if err := h.Check(dev); err != nil {
				return iocostError(err)
			}
			s, model, qos, err := h.Reset(dev, state)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "restored:\n  %s\n  %s\n", model, qos)
			if s.Model == "" {
				g.notice(fmt.Sprintf("note: the kernel listed no line for %s before; it keeps one now, set to its defaults (ctrl=auto, iocost disabled)", dev))
			}
			return nil
		},
	}
	o.addFlags(cmd)
	return cmd
}

type iocostModelOptions struct {
	Format, Out string
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
	formatVar(cmd.Flags(), &o.Format, []string{"text", "json", "html"}, "text, json, or html (one chart: predicted against measured)")
	cmd.Flags().StringVarP(&o.Out, "out", "o", "", "write to this file instead of stdout")
	return cmd
}

func runIOCostModel(g *globalOptions, o *iocostModelOptions, paths []string) error {
	if o.Format == "html" && o.Out == "" && g.stdoutTTY {
		return usagef("--format html: write it to a file with -o FILE.html")
	}
	if err := checkOutPath("--out", o.Out); err != nil {
		return err
	}
	r, err := iocost.FromFiles(paths)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch o.Format {
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
	if o.Out != "" {
		return results.WriteBytesAtomic(o.Out, buf.Bytes())
	}
	_, err = g.stdout.Write(buf.Bytes())
	return err
}
