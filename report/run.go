package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// WriteRunText writes one result of doc as the run command shows it: the
// pattern and target, a row of IOPS, MiB/s and latency percentiles per
// direction (and the total of a mix), the window, CPU, the disk's
// counters and the cap.
func WriteRunText(w io.Writer, doc *results.Document, r *results.Result) error {
	p := r.Pattern
	t := doc.Target
	var where []string
	where = append(where, t.Kind)
	if t.Disk != "" {
		where = append(where, "on "+t.Disk+" ("+t.Device+")")
	}
	if t.Filesystem != "" {
		where = append(where, t.Filesystem)
	}
	where = append(where, units.FormatSize(t.SizeBytes))
	if t.Scheduler != "" {
		where = append(where, "scheduler "+t.Scheduler)
	}
	jobs := "1 job"
	if p.Jobs > 1 {
		jobs = fmt.Sprintf("%d jobs", p.Jobs)
	}
	if c := content(p); c != "" {
		jobs += ", data " + c // the default, random and unique, goes unsaid
	}
	fmt.Fprintf(w, "%s: %s, %s, %d%% reads, QD %d × %s, %s measured after %s ramp, engine %s, seed %d\n",
		r.Name, p.Access, units.FormatSize(p.BlockSize), p.ReadPct, p.QueueDepth, jobs,
		time.Duration(r.DurationNS).Round(time.Millisecond), time.Duration(r.RampNS), r.Engine, doc.Settings.Seed)
	if p.Sync != "" {
		fmt.Fprintf(w, "durable writes: %s\n", DescribeSync(p.Sync))
	}
	fmt.Fprintf(w, "target: %s (%s)\n\n", t.Path, strings.Join(where, ", "))
	few := false // a percentile shown rests on too few I/Os
	header := func() {
		fmt.Fprintf(w, "%-6s %12s %10s %9s %9s %9s %9s %9s %9s %9s %9s\n", "", "IOPS", "MiB/s", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max")
	}
	row := func(name string, iops, mibps float64, l *results.Latency, ios uint64) {
		if iops < 0 { // a row of latencies alone
			fmt.Fprintf(w, "%-6s %12s %10s", name, "", "")
		} else {
			fmt.Fprintf(w, "%-6s %12s %10s", name, units.Thousands(iops, 0), units.Thousands(mibps, 1))
		}
		if l != nil {
			tail := func(v uint64, q float64) string {
				if results.Confident(q, l.Samples(ios)) {
					return us(float64(v))
				}
				few = true
				return us(float64(v)) + FewIOsMark
			}
			fmt.Fprintf(w, " %9s %9s %9s %9s %9s %9s %9s %9s", us(float64(l.Min)), us(l.Mean), us(float64(l.P50)),
				us(float64(l.P90)), tail(l.P99, 99), tail(l.P999, 99.9), tail(l.P9999, 99.99), us(float64(l.Max)))
		}
		fmt.Fprintln(w)
	}
	rows := func(read, write, total *results.Latency) {
		header()
		if r.Read.IOs > 0 {
			row("read", r.Read.IOPS, r.Read.MiBPerS, read, r.Read.IOs)
		}
		if r.Write.IOs > 0 {
			row("write", r.Write.IOPS, r.Write.MiBPerS, write, r.Write.IOs)
		}
		// A single direction's row is already the total. The total's latency
		// is that of every I/O of the mix, which neither row above can give.
		if r.Read.IOs > 0 && r.Write.IOs > 0 {
			row("total", r.Total.IOPS, r.Total.MiBPerS, total, r.Total.IOs)
		}
		if r.Syncs != nil && write == &r.Write.LatNS {
			row("sync", -1, 0, &r.Syncs.LatNS, r.Syncs.LatNS.Count)
		}
		fmt.Fprintf(w, "%-6s %12s %10s %9s\n", "", "", "", "(latency in µs)")
	}
	if r.Rate != nil && r.Read.ResponseLatNS != nil {
		// An open loop's headline is its response time.
		fmt.Fprintln(w, "response time, from each I/O's intended start on the schedule:")
		rows(r.Read.ResponseLatNS, r.Write.ResponseLatNS, r.Total.ResponseLatNS)
		fmt.Fprintln(w, "\nservice time, from each I/O's submission:")
	}
	rows(&r.Read.LatNS, &r.Write.LatNS, r.Total.LatNS)
	if sy := r.Syncs; sy != nil {
		writeSyncsLine(w, sy)
	}
	if r.Rate != nil {
		writeRateText(w, r.Rate)
	}
	if few {
		fmt.Fprintf(w, "\n%s\n", FewIOsNote)
	}
	fmt.Fprintf(w, "\nwindow: %s\n", DescribeStop(*r, doc.Settings.Auto))
	fmt.Fprintf(w, "cpu: user %.1f%%, sys %.1f%% of one core\n", r.CPU.UserPct, r.CPU.SysPct)
	if c := r.CPUWait; c != nil {
		fmt.Fprintf(w, "cpu_wait: %.1f%% of the window: iomatrix's I/O threads waited %s for a CPU (%s), the kernel's threads that may serve the target %s (%s)",
			c.Pct, waitTime(c.IOThreadsNS), units.Count(c.IOThreads, "thread"), waitTime(c.TargetThreadsNS), units.Count(c.TargetThreads, "thread"))
		if c.OthersNS != nil {
			fmt.Fprintf(w, "; other work ran %s of CPU time", waitTime(*c.OthersNS))
		}
		fmt.Fprintln(w)
	}
	if st := r.SubmitThread; st != nil {
		fmt.Fprintf(w, "sqpoll: the kernel's submission threads (%s) took %.1f%% of one core more (%.2f cpu-s over %.1f s), not in the figure above\n",
			units.Count(st.Threads, "thread"), st.CorePct, st.Seconds, st.WallSecs)
	}
	if len(r.EngineOpts) > 0 {
		fmt.Fprintf(w, "ring: %s\n", strings.Join(r.EngineOpts, ", "))
	}
	if r.Buffers == "scattered" {
		fmt.Fprintln(w, "buffers: scattered small pages (psync, a ring that could not register them, or no huge page to split): large blocks on a virtio disk measure lower so (docs/engine.md, \"Buffers\")")
	}
	if t.Disk != "" {
		writeDiskLine(w, t.Disk, r.Device)
	}
	if c := doc.Cap; c != nil {
		fmt.Fprintf(w, "capped: %s, cgroup %s\n", DescribeCap(c), c.Cgroup)
		if k := r.CgroupIOs; k != nil {
			fmt.Fprintf(w, "cgroup counted %s reads, %s writes; iomatrix completed %s reads, %s writes (ramp and drain included)\n",
				units.Thousands(float64(k.Reads), 0), units.Thousands(float64(k.Writes), 0),
				units.Thousands(float64(r.Completed.Reads), 0), units.Thousands(float64(r.Completed.Writes), 0))
		}
	}
	if k := r.Reissued; k != nil {
		fmt.Fprintf(w, "reissued: %s reads, %s writes the kernel cancelled before they reached the device (io_uring could not start a worker thread for them) were issued again; their latency counts from the first submission\n",
			units.Thousands(float64(k.Reads), 0), units.Thousands(float64(k.Writes), 0))
	}
	if r.Error != nil {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
	return nil
}

// writeRateText says how an open-loop result kept to its schedule.
func writeRateText(w io.Writer, rs *results.RateStats) {
	fmt.Fprintf(w, "\nrate: target %s IOPS (%s arrivals); the window scheduled %s I/Os (%s/s) and achieved %s IOPS: ",
		units.Thousands(rs.TargetIOPS, 0), rs.Arrival, units.Thousands(float64(rs.ScheduledIOs), 0),
		units.Thousands(rs.ScheduledIOPS, 1), units.Thousands(rs.AchievedIOPS, 1))
	if rs.Sustained {
		fmt.Fprintln(w, "sustained")
	} else {
		fmt.Fprintf(w, "NOT SUSTAINED: %s I/Os due in the window were never issued (the oldest %s late at its end)\n",
			units.Thousands(float64(rs.BacklogAtEnd), 0), time.Duration(rs.BacklogAgeNS).Round(time.Microsecond))
		if rs.MaxAfterIOPS > 0 {
			fmt.Fprintf(w, "the closed-loop maximum, measured again right after: %s IOPS; the target was %.1f %% of it\n",
				units.Thousands(rs.MaxAfterIOPS, 0), 100*rs.TargetIOPS/rs.MaxAfterIOPS)
		}
	}
	l := rs.LatenessNS
	fmt.Fprintf(w, "lateness, intended start to submission: p50 %s, p99 %s, max %s µs; %s I/Os more than %s late, %s found every slot busy; backlog at most %s\n",
		us(float64(l.P50)), us(float64(l.P99)), us(float64(l.Max)), units.Thousands(float64(rs.LateIOs), 0),
		time.Duration(rs.LateThresholdNS), units.Thousands(float64(rs.SlotWaits), 0), units.Thousands(float64(rs.MaxBacklog), 0))
}

// waitTime is a wait in ns, to the microsecond.
func waitTime(ns int64) string {
	return time.Duration(ns).Round(time.Microsecond).String()
}

// us is a latency in µs, to three significant digits or whole.
func us(ns float64) string {
	v := ns / 1000
	switch {
	case v >= 1000:
		return units.Thousands(v, 0)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// WriteSweepText writes a sweep as its command shows it at the end: a
// header naming the profile, whether every pattern was measured, the
// target, window and engine and the results file, then the matrices.
func WriteSweepText(w io.Writer, doc *results.Document, out string, complete bool) error {
	state := "complete"
	if !complete {
		state = "partial"
	}
	fmt.Fprintf(w, "iomatrix sweep %s (%s, %s) on %s, %s runtime + %s ramp, engine %s\nresults: %s\n\n",
		doc.Settings.Profile, state, units.Count(len(doc.Results), "result"), doc.Target.Path, time.Duration(doc.Settings.RuntimeNS),
		time.Duration(doc.Settings.RampNS), doc.Settings.Engine, out)
	m := Build(doc.Results)
	if err := WriteText(w, m); err != nil {
		return err
	}
	if err := writeDrift(w, doc); err != nil {
		return err
	}
	return writeCurves(w, Curves(doc.Results), len(m.Tables) > 0, func(title string) string { return title + "\n" }, asciiTable)
}
