package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
)

func newCapCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cap",
		Short: "Verify, list and clean up cgroup I/O caps",
		Long: `Work with cgroup I/O caps (v1 blkio.throttle.*, v2 io.max).

  cap verify   measure every pattern of a profile under a cap and check each
               cell against the cap model
  cap show     list the I/O limits configured on this host
  cap cleanup  remove cgroups left behind by a killed iomatrix

` + exitStatusHelp,
	}
	cmd.AddCommand(newCapVerifyCommand(g), newCapShowCommand(g), newCapCleanupCommand(g))
	return cmd
}

type verifyOptions struct {
	sweepOptions
	Tolerance string
	Baseline  string
}

func newCapVerifyCommand(g *globalOptions) *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify [TARGET] --cap riops=N,... | --cgroup PATH",
		Short: "Check that a cgroup cap holds, cell by cell",
		Long: `Measure every pattern of a profile (default quick) under a cap and check
each cell against the cap model. For read share r and block size b under
caps R, W (IOPS) and Rb, Wb (bytes/s) the expected total IOPS is

    min(U, R/(r·k), W/((1-r)·k), Rb/(r·b), Wb/((1-r)·b))

where U is the pattern's uncapped IOPS and k the number of requests the
block layer splits one I/O into (the device's max_sectors_kb; the kernel
throttles requests). Where the cap binds (model < 90 % of U) the measured
IOPS must match the model within --tolerance; elsewhere it must match U.
U comes from --baseline FILE.json or, by default, is measured just before
the capped run, so a cap that throttles too hard is caught too. The
cgroup's own I/O counters are checked against iomatrix's counts: within
0.5 %, or up to 32 requests more on the kernel's side (it also counts the
worker's page faults and a filesystem's metadata reads on that device).

--cap creates a fresh cgroup with those limits; --cgroup PATH measures in an
existing cgroup under the limits configured there. The baseline is saved
beside the results file as ...-baseline.json for reuse.

Exit status 0 when every cell holds, 1 when any fails (listed).

` + exitStatusHelp,
		Example: `  iomatrix cap verify /tmp/iomatrix.dat --cap riops=3000,wiops=3000 --runtime 10s
  iomatrix cap verify /mnt/vol/x.dat --cgroup /sys/fs/cgroup/blkio/docker/ID`,
		Args: maxArgs(1),
		RunE: o.runE(func(ctx context.Context, target string) error { return runVerify(ctx, o, g, target) }),
	}
	o.sweepOptions.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("profile").DefValue = "quick"
	o.Profile = "quick"
	cmd.Flags().StringVar(&o.Tolerance, "tolerance", "5%", "allowed deviation from the expected IOPS")
	cmd.Flags().StringVar(&o.Baseline, "baseline", "", "uncapped results of the same patterns (a results file); default: measure them first")
	return cmd
}

func parseTolerance(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v <= 0 || v >= 100 {
		return 0, usagef("--tolerance: %q is not a percentage between 0 and 100 (e.g. 5%%)", s)
	}
	return v, nil
}

// splitFactor is how many requests the block layer makes of one I/O of
// bs bytes on dev: a request holds at most max_sectors_kb, and at most
// max_segments pages (the engine's buffers are 4 KiB pages, never merged
// into huge pages).
func splitFactor(dev string, bs int64) int {
	read := func(name string) int64 {
		data, err := os.ReadFile(filepath.Join("/sys/dev/block", dev, "queue", name))
		if err != nil {
			return 0
		}
		v, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		return v
	}
	k := int64(1)
	if kb := read("max_sectors_kb"); kb > 0 {
		k = max(k, (bs+kb*1024-1)/(kb*1024))
	}
	if segs := read("max_segments"); segs > 0 {
		pages := (bs + 4095) / 4096
		k = max(k, (pages+segs-1)/segs)
	}
	return int(k)
}

func runVerify(ctx context.Context, o *verifyOptions, g *globalOptions, target string) error {
	if err := o.capOptions.precheck(); err != nil {
		return err
	}
	tol, err := parseTolerance(o.Tolerance)
	if err != nil {
		return err
	}
	if !o.capOptions.enabled() {
		return usagef("cap verify needs --cap riops=N,... or --cgroup PATH")
	}
	if o.Resume != "" {
		return usagef("--resume: not supported by cap verify")
	}
	if o.Out == "" {
		o.Out = fmt.Sprintf("iomatrix-verify-%s.json", time.Now().Format("20060102-150405"))
	}
	sp, err := o.prepare(g, target)
	if err != nil {
		return err
	}
	var baseline map[string]float64
	if o.Baseline != "" {
		d, err := loadResults(o.Baseline)
		if err != nil {
			return err
		}
		baseline = map[string]float64{}
		for _, r := range d.Results {
			baseline[r.Name] = r.Total.IOPS
		}
		var missing []string
		for _, p := range sp.todo {
			if _, ok := baseline[p.Name()]; !ok {
				missing = append(missing, p.Name())
			}
		}
		if len(missing) > 0 {
			return usagef("--baseline %s lacks %d pattern(s) of the profile: %s", o.Baseline, len(missing), strings.Join(missing, ", "))
		}
	}
	plan, cp, err := o.resolve(g, sp, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "iomatrix: cap verify %s on %s: %d patterns, results: %s\n", sp.profile.Name, sp.target, len(sp.todo), sp.out)
	t, err := openTarget(ctx, plan, g)
	if err != nil {
		return err
	}
	defer t.Close()
	if baseline == nil {
		bout := strings.TrimSuffix(sp.out, ".json") + "-baseline.json"
		fmt.Fprintf(g.stderr, "iomatrix: measuring the uncapped baseline first (%s)\n", bout)
		bdoc := sp.newDocument(t)
		loop := cellLoop{g: g, r: localRunner{t}, opts: sp.opts, prog: newSweepProgress(g, len(sp.todo), 0, sp.opts), doc: bdoc}
		if _, err := loop.run(ctx, sp.todo); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		bdoc.FinishedAt = time.Now().UTC().Format(time.RFC3339)
		if err := iotest.WriteFileAtomic(bout, bdoc); err != nil {
			return err
		}
		baseline = map[string]float64{}
		for _, res := range bdoc.Results {
			baseline[res.Name] = res.Total.IOPS
		}
	}

	r, capInfo, err := o.runnerFor(g, cp, plan, t, anyWrites(sp.todo))
	if err != nil {
		return err
	}
	defer r.Close()
	doc := sp.newDocument(t)
	doc.Cap = capInfo
	limit := cgroup.Limit{ReadIOPS: capInfo.ReadIOPS, WriteIOPS: capInfo.WriteIOPS, ReadBPS: capInfo.ReadBPS, WriteBPS: capInfo.WriteBPS}
	fmt.Fprintf(g.stderr, "iomatrix: measuring under %s\n", report.DescribeCap(capInfo))
	check := func(res *iotest.Result) {
		p, u := res.Pattern, baseline[res.Name]
		split := splitFactor(capInfo.Device, p.BlockSize)
		exp, binding := cgroup.Expected(limit, p.ReadPct, p.BlockSize, split, u)
		chk := &iotest.CapCheck{ExpectedIOPS: math.Round(exp*100) / 100, Binding: binding, UncappedIOPS: u}
		dev := math.Inf(1)
		if exp > 0 {
			dev = (res.Total.IOPS/exp - 1) * 100
			chk.DeviationPct = math.Round(dev*10000) / 10000
		}
		chk.CountersOK = countersMatch(*res, split)
		chk.OK = math.Abs(dev) <= tol && chk.CountersOK && res.Error == nil
		res.CapCheck = chk
	}
	loop := cellLoop{g: g, r: r, opts: sp.opts, prog: newSweepProgress(g, len(sp.todo), 0, sp.opts), doc: doc, out: sp.out, check: check}
	_, runErr := loop.run(ctx, sp.todo)
	complete := runErr == nil && ctx.Err() == nil
	if complete {
		doc.FinishedAt = time.Now().UTC().Format(time.RFC3339)
		if err := iotest.WriteFileAtomic(sp.out, doc); err != nil {
			return err
		}
	}
	fmt.Fprintf(g.stdout, "iomatrix cap verify: %s, tolerance %.1f %%\nresults: %s\n\n", report.Describe(doc), tol, sp.out)
	if err := report.WriteCapCheck(g.stdout, doc); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var failed []string
	for _, res := range doc.Results {
		if chk := res.CapCheck; !chk.OK {
			why := fmt.Sprintf("%s: measured %.0f, expected %.0f (%+.1f %%)", res.Name, res.Total.IOPS, chk.ExpectedIOPS, chk.DeviationPct)
			if !chk.CountersOK {
				why += fmt.Sprintf(", kernel counted %+v, iomatrix %+v", res.CgroupIOs, res.Completed)
			}
			failed = append(failed, why)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(g.stdout, "\nFAIL: %d of %d cells do not hold:\n  %s\n", len(failed), len(doc.Results), strings.Join(failed, "\n  "))
		return errCheckFailed{fmt.Sprintf("the cap does not hold in %d of %d cells", len(failed), len(doc.Results))}
	}
	fmt.Fprintf(g.stdout, "\nOK: the cap holds in all %d cells\n", len(doc.Results))
	return nil
}

// errCheckFailed is a verification that did not hold: exit status 1.
type errCheckFailed struct{ msg string }

func (e errCheckFailed) Error() string { return e.msg }

// countersMatch compares the kernel's counts for the cgroup with
// iomatrix's own, both covering the whole pattern (ramp and drain); the
// kernel counts requests, split I/Os being several. They must agree
// within 0.5 %, except that the kernel may count up to foreignRequests
// more: it charges the cgroup for every request its tasks cause on the
// device, and besides iomatrix's I/O the worker can fault in pages of its
// own program and, for a file target, make the filesystem read metadata
// (15 extra reads were once counted in a 4,542-request cell on a file).
func countersMatch(r iotest.Result, split int) bool {
	if r.CgroupIOs == nil {
		return false
	}
	ok := func(ours, kernel uint64) bool {
		o, k := float64(ours), float64(kernel)
		slack := 0.005 * math.Max(o, k)
		return k >= o-slack && k <= o+slack+foreignRequests
	}
	k := uint64(max(split, 1))
	return ok(k*r.Completed.Reads, r.CgroupIOs.Reads) && ok(k*r.Completed.Writes, r.CgroupIOs.Writes)
}

// foreignRequests is how many requests on the device, beyond 0.5 %, the
// kernel may count for the cgroup that are not iomatrix's I/O.
const foreignRequests = 32

func newCapShowCommand(g *globalOptions) *cobra.Command {
	var device string
	cmd := &cobra.Command{
		Use:   "show [--device PATH]",
		Short: "List the I/O limits configured on this host",
		Long: `List every I/O limit configured in the cgroup tree (v1 blkio.throttle.*
files or v2 io.max), whoever set it (docker, kubernetes, systemd, an
operator): cgroup, device and limits. --device keeps those on the device
of PATH (a block device, or a file on it).

` + exitStatusHelp,
		Args: maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl, err := cgroup.Detect(cgroup.DefaultRoot)
			if err != nil {
				return err
			}
			var dev *sysfs.DevNum
			if device != "" {
				d, notice, err := cgroup.ResolveDevice(sysfs.Default(), device)
				if err != nil {
					return usagef("--device: %w", err)
				}
				if notice != "" {
					fmt.Fprintf(g.stderr, "iomatrix: %s\n", notice)
				}
				dev = &d
			}
			list, err := cgroup.Show(ctrl, dev)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "cgroup v%d I/O controller at %s (%s mode)\n", ctrl.Version, ctrl.Dir, ctrl.Mode)
			if len(list) == 0 {
				fmt.Fprintln(g.stdout, "no I/O limits configured")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CGROUP\tDEVICE\tRIOPS\tWIOPS\tRBPS\tWBPS")
			v := func(n uint64, size bool) string {
				switch {
				case n == 0:
					return "-"
				case size:
					return iotest.FormatSize(int64(n)) + "/s"
				}
				return strconv.FormatUint(n, 10)
			}
			for _, c := range list {
				name := c.Cgroup
				if name == "" {
					name = "/"
				}
				l := c.Limit
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, l.Device, v(l.ReadIOPS, false), v(l.WriteIOPS, false), v(l.ReadBPS, true), v(l.WriteBPS, true))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&device, "device", "", "only limits on the device of this path")
	return cmd
}

func newCapCleanupCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "cleanup",
		Short: "Remove cgroups left by an iomatrix that was killed",
		Long: `Remove the cgroups under iomatrix/ whose owning process is gone (an
iomatrix killed with SIGKILL cannot remove its own). Groups of running
iomatrix processes are left alone.

` + exitStatusHelp,
		Args: maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return privilegeError{"cap cleanup needs root or CAP_SYS_ADMIN"}
			}
			ctrl, err := cgroup.Detect(cgroup.DefaultRoot)
			if err != nil {
				return err
			}
			removed, err := cgroup.Cleanup(ctrl)
			for _, p := range removed {
				fmt.Fprintf(g.stdout, "removed %s\n", p)
			}
			if err != nil {
				return err
			}
			if len(removed) == 0 {
				fmt.Fprintln(g.stdout, "no leftover iomatrix cgroups")
			}
			return nil
		},
	}
}
