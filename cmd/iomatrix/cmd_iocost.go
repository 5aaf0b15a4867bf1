package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/answers/iocost"
	"github.com/iomatrix/iomatrix/cgroup"
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
	f.StringVar(&o.SysFS, "sysfs", "/sys", "where sysfs is mounted")
	f.StringVar(&o.State, "state", "", "the file that keeps the lines from before the first apply (default: /var/lib/iomatrix/iocost-MAJ_MIN.json)")
}

// host resolves DEVICE (a block device, or a path on its filesystem) to
// its whole disk, and finds the controller's files.
func (o *iocostHostOptions) host(arg string) (iocost.Host, string, string, error) {
	fs := sysfs.NewFS(o.SysFS, "/proc")
	dev, _, err := cgroup.ResolveDevice(fs, arg)
	if err != nil {
		return iocost.Host{}, "", "", usagef("DEVICE %s: %w", arg, err)
	}
	if bd, err := fs.BlockDevice(dev); err == nil {
		dev = bd.Disk // iocost is set per disk, not per partition
	}
	h := iocost.Host{CgroupRoot: o.CgroupFS, Sys: fs}
	ctrl, cerr := cgroup.Detect(fs, o.CgroupFS)
	h.Mode = ctrl.Mode.String()
	if cerr != nil && ctrl.Mode == cgroup.Unavailable {
		h.Mode = "without cgroups"
	}
	state := o.State
	if state == "" {
		state = filepath.Join("/var/lib/iomatrix", "iocost-"+strings.ReplaceAll(dev.String(), ":", "_")+".json")
	}
	return h, dev.String(), state, nil
}

// iocostError maps a refusal to its exit status: bad input for a host or
// device that cannot take iocost, lack of privilege as such.
func iocostError(err error) error {
	if errors.Is(err, iocost.ErrUnusable) {
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
	vmin, vmax, err := parseVrate(o.Vrate)
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
	r, err := iocostReport(o.From)
	if err != nil {
		return err
	}
	d := r.Derived
	if d.Device != dev {
		return usagef("--from %s: measured device %s, not %s (%s)", o.From[0], d.Device, dev, arg)
	}
	if err := d.Model.Check(); err != nil {
		return usagef("io.cost.model: %w", err)
	}
	if d.QoS != nil {
		if err := d.QoS.Check(); err != nil {
			return usagef("io.cost.qos: %w", err)
		}
	}
	switch {
	case o.Vrate == "honest":
		q, how, err := iocost.Honest(d, r.Check)
		if err != nil {
			return usagef("--vrate honest: %w", err)
		}
		d.QoS, r.QoSLine = &q, q.Line(dev)
		fmt.Fprintf(g.stderr, "iomatrix: io.cost.qos %s\n", how)
	case vmax > 0 && d.QoS == nil:
		return usagef("--vrate %s: no QoS was derived to set it in (the QoS rate runs are missing)", o.Vrate)
	case vmax > 0:
		q := *d.QoS
		q.Min, q.Max = vmin, vmax
		d.QoS, r.QoSLine = &q, q.Line(dev)
	case r.Check.HonestVratePct < 100 && d.QoS != nil:
		fmt.Fprintf(g.stderr, "iomatrix: note: the model promises more than was measured (honest vrate %.2f %%), so its vrate floor min=%.0f is %.0f %% of what the device was measured to do, below which iocost cannot slow it: --vrate honest scales min and max by the honest vrate, --vrate 1-100 lets the QoS slow it as far as its latency targets ask\n",
			r.Check.HonestVratePct, d.QoS.Min, d.QoS.Min*100/r.Check.HonestVratePct)
	}
	qosLine := r.QoSLine
	if qosLine == "" {
		qosLine = iocost.AutoQoSLine(dev) + " (no QoS derived: the kernel's own)"
	}
	fmt.Fprintf(g.stdout, "io.cost.model: %s\nio.cost.qos:   %s\n", r.ModelLine, qosLine)
	if o.DryRun {
		if err := h.Check(dev); err != nil {
			fmt.Fprintf(g.stderr, "iomatrix: note: applying would be refused: %v\n", err)
		}
		return nil
	}
	a, err := h.Apply(dev, d.Model, d.QoS, state)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "read back:\n  %s\n  %s\n", a.Model, a.QoS)
	if a.Kept {
		fmt.Fprintf(g.stderr, "iomatrix: keeping the state saved at %s in %s (iocost reset restores it)\n", a.Before.SavedAt, state)
	} else {
		fmt.Fprintf(g.stderr, "iomatrix: the lines before are saved in %s; iocost reset %s restores them\n", state, arg)
	}
	return nil
}

type iocostShowOptions struct{ iocostHostOptions }

func newIOCostShowCommand(g *globalOptions) *cobra.Command {
	o := &iocostShowOptions{}
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
			fmt.Fprintf(g.stdout, "io.cost.model: %s\nio.cost.qos:   %s\n", orNone(model), orNone(qos))
			if s, err := iocost.ReadState(state); err == nil {
				fmt.Fprintf(g.stdout, "saved by iocost apply at %s (%s), restored by iocost reset:\n  %s\n  %s\n", s.SavedAt, state, orNone(s.Model), orNone(s.QoS))
			}
			return nil
		},
	}
	o.addFlags(cmd)
	return cmd
}

func orNone(line string) string {
	if line == "" {
		return "(none: iocost was never set up on the device)"
	}
	return line
}

type iocostResetOptions struct{ iocostHostOptions }

func newIOCostResetCommand(g *globalOptions) *cobra.Command {
	o := &iocostResetOptions{}
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
				fmt.Fprintf(g.stderr, "iomatrix: note: the kernel listed no line for %s before; it keeps one now, set to its defaults (ctrl=auto, iocost disabled)\n", dev)
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
	cmd.Flags().StringVar(&o.Format, "format", "text", "text, json, or html (one chart: predicted against measured)")
	cmd.Flags().StringVarP(&o.Out, "out", "o", "", "write to this file instead of stdout")
	return cmd
}

func runIOCostModel(g *globalOptions, o *iocostModelOptions, paths []string) error {
	if o.Format != "text" && o.Format != "json" && o.Format != "html" {
		return usagef("--format: %q is not one of text, json, html", o.Format)
	}
	if o.Format == "html" && o.Out == "" && g.stdoutTTY {
		return usagef("--format html: write it to a file with -o FILE.html")
	}
	if err := checkOutPath("--out", o.Out); err != nil {
		return err
	}
	r, err := iocostReport(paths)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch o.Format {
	case "json":
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	case "html":
		err = report.WritePredictedHTML(&buf, predictedPage(r))
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

// predictedPage is the check as the HTML chart shows it.
func predictedPage(r iocost.Report) report.PredictedPage {
	pg := report.PredictedPage{Title: "iocost model of " + r.Derived.Device, Lines: []string{r.ModelLine}}
	if r.QoSLine != "" {
		pg.Lines = append(pg.Lines, r.QoSLine)
	}
	for _, c := range r.Check.Cells {
		pg.Points = append(pg.Points, report.Predicted{Cell: c.Name, Predicted: c.Predicted, Measured: c.Measured, Judged: c.Judged})
	}
	pg.Notes = append(pg.Notes, fmt.Sprintf("honest vrate: %.2f %%", r.Check.HonestVratePct))
	pg.Notes = append(append(pg.Notes, r.Derived.Notes...), r.Check.Notes...)
	return pg
}

// iocostReport derives the model from results files of one device and
// checks it against their cells.
func iocostReport(paths []string) (iocost.Report, error) {
	var docs []*results.Document
	for _, p := range paths {
		d, err := loadResults(p)
		if err != nil {
			return iocost.Report{}, err
		}
		if len(docs) > 0 && d.Target.Device != docs[0].Target.Device {
			return iocost.Report{}, usagef("%s: measured %s, not %s as %s: one model is one device's", p, d.Target.Device, docs[0].Target.Device, paths[0])
		}
		docs = append(docs, d)
	}
	d, err := iocost.Derive(docs)
	if errors.Is(err, iocost.ErrCannotDerive) {
		return iocost.Report{}, usagef("%s: %w (the iocost profile measures every cell the model needs: iomatrix sweep TARGET --profile iocost)", paths[0], err)
	}
	if err != nil {
		return iocost.Report{}, err
	}
	t := docs[0].Target
	span := docs[0].Settings.SizeBytes
	if span == 0 {
		span = t.SizeBytes
	}
	ch := iocost.CheckModel(d.Model, iocost.Cells(docs), span, t.MaxSectorsKB*1024)
	return iocost.NewReport(d, ch), nil
}

// parseVrate reads --vrate: face or honest (0, 0), or MIN-MAX in percent,
// 1–10000 with MIN ≤ MAX, as io.cost.qos takes them.
func parseVrate(s string) (lo, hi float64, err error) {
	if s == "face" || s == "honest" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if ok {
		lo, err = strconv.ParseFloat(a, 64)
		if err == nil {
			hi, err = strconv.ParseFloat(b, 64)
		}
	}
	if !ok || err != nil {
		return 0, 0, usagef("--vrate: %q is not face, honest or MIN-MAX (percent, e.g. 1-100)", s)
	}
	if lo < 1 || hi > 10000 || lo > hi {
		return 0, 0, usagef("--vrate %s: the kernel takes 1 ≤ MIN ≤ MAX ≤ 10000 (percent)", s)
	}
	return lo, hi, nil
}
