package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

type isolateOptions struct {
	measureOptions
	Victim       string
	Aggressor    string
	MinIsolation string
	Format       string
}

func newIsolateCommand(g *globalOptions) *cobra.Command {
	o := &isolateOptions{}
	cmd := &cobra.Command{
		Use:   "isolate TARGET --cap LIMITS",
		Short: "Does a cap shield the neighbours? A victim alone, beside an aggressor, beside the capped aggressor",
		Long: `Test what a per-system cap is for: that one system cannot take the I/O
the others need. Phases of --runtime each (after --ramp), on TARGET:

  1. alone      the victim pattern alone
  2. uncapped   the victim beside the aggressor, nothing capped
  3. capped     the victim beside the aggressor, the aggressor alone in a
                fresh cgroup under --cap (the victim runs outside it)
  4. alone      the victim alone again: the baseline is the mean of both
     again      alone phases, so that a device whose rate drifts during the
                test does not decide the verdict; a drift larger than the
                verdict's margin is reported

The victim defaults to 4K random reads at QD1 (a database's latency-bound
reads), the aggressor to 16K random writes at QD32; --victim and
--aggressor take RW:BS:QD[:RWMIX[:JOBS]] as crosscheck's --pattern does.
Each phase reports the victim's IOPS and p50/p99/p99.9 latency and the
aggressor's IOPS. The isolation is the victim's IOPS beside the capped
aggressor over its IOPS alone (the mean of both alone phases), the p99
inflation its p99 there over alone. When the uncapped aggressor did not slow the victim either, the
test cannot show what the cap does, and says so.

--format text (default), json, or html (one offline page, the phases side
by side).

The disk's own counters show load that is neither the victim's nor the
aggressor's: when another process loaded the device during a phase the
verdict rests on (alone, capped, alone again; a fifth of the disk's
requests or bytes, at least 500 requests or 16 MiB), the verdict is not
given, INCONCLUSIVE: a neighbour slows the victim beside the capped
aggressor into NOT PROTECTED, or the victim alone into PROTECTED.

Exit status: 0 when the isolation is at least --min-isolation (default
90 %), 1 when it is not, 2 bad input, 3 inconclusive (another process
loaded the device), 4 without root (cgroups).`,
		Example: `  iomatrix isolate /mnt/vol/iomatrix.dat --cap wiops=500
  iomatrix isolate /mnt/vol/iomatrix.dat --cap wiops=2000,wbps=100MiB --aggressor randwrite:64k:16 --runtime 60s
  iomatrix isolate /dev/vdb --allow-destructive --cap riops=1000 --aggressor randread:4k:64 --format html > isolate.html`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.changed(cmd.Flags())
			return runIsolate(cmd.Context(), g, o, args[0])
		},
	}
	f := cmd.Flags()
	o.measureOptions.AddFlags(f)
	o.Runtime = 30 * time.Second
	f.Lookup("runtime").DefValue = "30s"
	f.StringVar(&o.Victim, "victim", "randread:4k:1", "the victim pattern, RW:BS:QD[:RWMIX[:JOBS]]")
	f.StringVar(&o.Aggressor, "aggressor", "randwrite:16k:32", "the aggressor pattern, capped in phase 3")
	f.StringVar(&o.MinIsolation, "min-isolation", "90%", "the isolation (victim IOPS beside the capped aggressor ÷ alone) that passes")
	f.StringVar(&o.Format, "format", "text", "text, json or html")
	return cmd
}

// isolatePhase is one phase: the victim's result and the aggressor's.
type isolatePhase struct {
	Name      string          `json:"name"`
	Victim    results.Result  `json:"victim"`
	Aggressor *results.Result `json:"aggressor,omitempty"`
}

// isolateReport is the verdict document (--format json).
type isolateReport struct {
	Tool         results.Tool       `json:"tool"`
	Host         results.Host       `json:"host"`
	Target       results.TargetInfo `json:"target"`
	Cap          *results.Cap       `json:"cap"`
	RuntimeNS    int64              `json:"runtime_ns"`
	RampNS       int64              `json:"ramp_ns"`
	Engine       string             `json:"engine"`
	Seed         uint64             `json:"seed"`
	Phases       []isolatePhase     `json:"phases"`
	Drift        float64            `json:"alone_drift"`   // alone again ÷ alone − 1
	Isolation    float64            `json:"isolation"`     // capped ÷ alone, victim IOPS
	Unprotected  float64            `json:"unprotected"`   // uncapped ÷ alone
	P99Inflation float64            `json:"p99_inflation"` // capped ÷ alone, victim p99
	MinIsolation float64            `json:"min_isolation"` // the pass mark
	Protected    bool               `json:"protected"`     // Isolation ≥ MinIsolation
	// Inconclusive: another process loaded the device during a phase the
	// verdict rests on (alone, capped, alone again), so that the verdict
	// is not given: exit status 3. OtherLoad names those phases.
	Inconclusive bool     `json:"inconclusive"`
	OtherLoad    []string `json:"other_load,omitempty"`
	NoContention bool     `json:"no_contention"`        // the uncapped aggressor did not hurt either
	Notes        []string `json:"notes,omitempty"`      // what to make of it
	Verdict      string   `json:"verdict"`              // one line
	FinishedAt   string   `json:"finished_at"`          // RFC 3339
	StartedAt    string   `json:"started_at"`           // RFC 3339
	CapIOPS      float64  `json:"cap_model_iops"`       // what the cap allows the aggressor
	AggCappedPct float64  `json:"aggressor_vs_cap_pct"` // capped aggressor IOPS ÷ model − 1, in %
}

func (o *isolateOptions) patterns() (victim, aggressor results.Pattern, err error) {
	for _, x := range []struct {
		flag, spec string
		into       *results.Pattern
	}{{"--victim", o.Victim, &victim}, {"--aggressor", o.Aggressor, &aggressor}} {
		cp, err := parseCrossPattern(x.spec)
		if err != nil {
			return victim, aggressor, usagef("%s %s", x.flag, strings.TrimPrefix(err.Error(), "--pattern "))
		}
		*x.into = cp.Pattern
	}
	return victim, aggressor, nil
}

func runIsolate(ctx context.Context, g *globalOptions, o *isolateOptions, target string) error {
	switch {
	case o.Cap == "" && o.Cgroup == "":
		return usagef("--cap: required: the limits to put on the aggressor (e.g. --cap wiops=500)")
	case o.Cgroup != "":
		return usagef("--cgroup: isolate caps the aggressor in a fresh cgroup of its own: give --cap")
	case o.Auto:
		return usagef("--runtime: auto is not for isolate: the victim and the aggressor must share one fixed window")
	}
	if o.Format != "text" && o.Format != "json" && o.Format != "html" {
		return usagef("--format: %q is not one of text, json, html", o.Format)
	}
	minIso, err := parsePercentFlag("--min-isolation", o.MinIsolation)
	if err != nil {
		return err
	}
	victim, aggressor, err := o.patterns()
	if err != nil {
		return err
	}
	if err := o.capOptions.precheck(); err != nil {
		return err
	}
	opts, err := o.options(g)
	if err != nil {
		return err
	}
	size, err := o.size()
	if err != nil {
		return err
	}
	plan, err := o.plan(target, size, []results.Pattern{victim, aggressor}, false)
	if err != nil {
		return err
	}
	cp, err := o.capOptions.plan(g, target)
	if err != nil {
		return err
	}
	alignToThrottle(g, &opts) // the capped phase's window, the same for all three
	if opts.Engine, err = resolveEngine(opts); err != nil {
		return err
	}

	sess, err := startSession(ctx, g, &o.measureOptions, cp, plan, true)
	if err != nil {
		return err
	}
	defer sess.close(g)
	rep := &isolateReport{Tool: results.Tool{Name: "iomatrix", Version: results.Version}, Host: results.HostInfo(),
		Target: sess.t.Info, Cap: sess.capInfo, RuntimeNS: int64(opts.Runtime), RampNS: int64(opts.Ramp), Engine: opts.Engine,
		Seed: opts.Seed, MinIsolation: minIso, StartedAt: time.Now().UTC().Format(time.RFC3339)}
	local := localRunner{sess.t}
	aggOpts := opts
	aggOpts.Seed = opts.Seed + 1 // its own offsets
	phases := []struct {
		name string
		agg  runner // nil: the victim alone
	}{{"alone", nil}, {"uncapped", local}, {"capped", sess.r}, {"alone again", nil}}
	for i, ph := range phases {
		fmt.Fprintf(g.stderr, "iomatrix: phase %d of %d, %s: %s%s for %s + %s ramp\n", i+1, len(phases), ph.name, victim.Name(),
			map[bool]string{true: " beside " + aggressor.Name(), false: " alone"}[ph.agg != nil], opts.Runtime, opts.Ramp)
		p, err := runPhase(ctx, local, victim, opts, ph.agg, aggressor, aggOpts)
		if err != nil {
			return fmt.Errorf("phase %s: %w", ph.name, err)
		}
		p.Name = ph.name
		rep.Phases = append(rep.Phases, p)
	}
	rep.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	rep.judge(aggressor)
	if err := rep.write(g.stdout, o.Format); err != nil {
		return err
	}
	switch {
	case rep.Inconclusive:
		return commandError{code: exitInconclusive, err: fmt.Errorf("%s", rep.Verdict)}
	case !rep.Protected:
		return commandError{code: exitFailure, err: fmt.Errorf("%s", rep.Verdict)}
	}
	return nil
}

// runPhase runs the victim, and beside it the aggressor when there is
// one, both started together over windows of the same length.
func runPhase(ctx context.Context, vr runner, victim results.Pattern, vo iotest.Options,
	ar runner, aggressor results.Pattern, ao iotest.Options) (isolatePhase, error) {
	var (
		wg        sync.WaitGroup
		agg       results.Result
		aggErr    error
		phase     isolatePhase
		victimErr error
	)
	if ar != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agg, aggErr = ar.Run(ctx, aggressor, ao)
		}()
	}
	phase.Victim, victimErr = vr.Run(ctx, victim, vo)
	wg.Wait()
	if victimErr != nil {
		return phase, fmt.Errorf("victim %s: %w", victim.Name(), victimErr)
	}
	if ar != nil {
		if aggErr != nil {
			return phase, fmt.Errorf("aggressor %s: %w", aggressor.Name(), aggErr)
		}
		phase.Aggressor = &agg
	}
	return phase, nil
}

// judge computes the ratios and the verdict.
func (rep *isolateReport) judge(aggressor results.Pattern) {
	before, uncapped, capped, after := rep.Phases[0].Victim, rep.Phases[1].Victim, rep.Phases[2].Victim, rep.Phases[3].Victim
	alone := (before.Total.IOPS + after.Total.IOPS) / 2
	rep.Drift = after.Total.IOPS/before.Total.IOPS - 1
	rep.Isolation = capped.Total.IOPS / alone
	rep.Unprotected = uncapped.Total.IOPS / alone
	p99 := func(r results.Result) float64 { v, _ := report.LatP99.Measure(r); return v }
	if a := (p99(before) + p99(after)) / 2; a > 0 {
		rep.P99Inflation = p99(capped) / a
	}
	rep.Protected = rep.Isolation >= rep.MinIsolation
	rep.NoContention = rep.Unprotected >= rep.MinIsolation
	if c := rep.Cap; c != nil {
		r := float64(aggressor.ReadPct) / 100
		model := -1.0
		for _, term := range []struct{ limit, share float64 }{
			{float64(c.ReadIOPS), r}, {float64(c.WriteIOPS), 1 - r},
			{float64(c.ReadBPS) / float64(aggressor.BlockSize), r}, {float64(c.WriteBPS) / float64(aggressor.BlockSize), 1 - r},
		} {
			if term.limit > 0 && term.share > 0 {
				if m := term.limit / term.share; model < 0 || m < model {
					model = m
				}
			}
		}
		if model > 0 {
			rep.CapIOPS = model
			rep.AggCappedPct = 100 * (rep.Phases[2].Aggressor.Total.IOPS/model - 1)
			if agg := rep.Phases[2].Aggressor.Total.IOPS; agg < 0.9*model {
				rep.Notes = append(rep.Notes, fmt.Sprintf("the capped aggressor did %s IOPS, %.0f %% under the cap's %s: the device or the CPU held it back, "+
					"not the cap, so the capped phase was lighter than the cap allows", units.Thousands(agg, 0), -rep.AggCappedPct, units.Thousands(model, 0)))
			}
			if rep.Phases[1].Aggressor.Total.IOPS < model {
				rep.Notes = append(rep.Notes, fmt.Sprintf("the uncapped aggressor did %s IOPS, under the cap's %s: the cap never bound it",
					units.Thousands(rep.Phases[1].Aggressor.Total.IOPS, 0), units.Thousands(model, 0)))
			}
		} else {
			rep.Notes = append(rep.Notes, "the cap limits nothing the aggressor does (e.g. a read cap on a write aggressor)")
		}
	}
	if margin := math.Abs(rep.Isolation - rep.MinIsolation); math.Abs(rep.Drift)/2 > margin {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the victim alone moved %+.1f %% from the first phase to the last: "+
			"the device's own drift is larger than the verdict's margin (%.1f points); run again, or longer", 100*rep.Drift, 100*margin))
	}
	rep.judgeOtherLoad()
	if rep.NoContention {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the uncapped aggressor left the victim %.0f %% of its IOPS alone: "+
			"this target has room for both, so this test cannot show what the cap does; try a heavier --aggressor", 100*rep.Unprotected))
	}
	word := "PROTECTED"
	switch {
	case rep.Inconclusive:
		word = "INCONCLUSIVE (another process loaded the device during " + strings.Join(rep.OtherLoad, ", ") + ")"
	case !rep.Protected:
		word = "NOT PROTECTED"
	}
	rep.Verdict = fmt.Sprintf("%s: beside the capped aggressor the victim kept %.1f %% of its IOPS alone (%.1f %% uncapped), "+
		"p99 ×%.2f; %.0f %% needed", word, 100*rep.Isolation, 100*rep.Unprotected, rep.P99Inflation, 100*rep.MinIsolation)
}

// judgeOtherLoad finds the phases in which the disk carried load that was
// neither the victim's nor the aggressor's (results.DevStats.OtherLoad,
// the aggressor's requests and bytes scaled to the victim's window): the
// victim's figures there are the device shared with somebody else. In a
// phase the verdict rests on, that makes it inconclusive: a neighbour
// slows the victim beside the capped aggressor into NOT PROTECTED, or the
// victim alone into PROTECTED. In the uncapped phase it only makes the
// unprotected figure suspect.
func (rep *isolateReport) judgeOtherLoad() {
	disk := sysfs.BlockDevice{MaxSectorsKB: rep.Target.MaxSectorsKB, MaxSegments: rep.Target.MaxSegments}
	for i, p := range rep.Phases {
		var knownIOs, knownBytes uint64
		if a := p.Aggressor; a != nil && a.DurationNS > 0 {
			scale := float64(p.Victim.DurationNS) / float64(a.DurationNS)
			knownIOs = uint64(scale * float64(uint64(disk.RequestsPerIO(a.Pattern.BlockSize))*a.Total.IOs))
			knownBytes = uint64(scale * float64(a.Total.Bytes))
		}
		if !p.Victim.Device.OtherLoad(knownIOs, knownBytes) {
			continue
		}
		if i == 1 {
			rep.Notes = append(rep.Notes, "another process loaded the device during the uncapped phase: its figures are suspect")
			continue
		}
		rep.Inconclusive = true
		rep.OtherLoad = append(rep.OtherLoad, p.Name)
	}
	if rep.Inconclusive {
		rep.Notes = append(rep.Notes, "the disk completed requests that were neither the victim's nor the aggressor's during "+
			strings.Join(rep.OtherLoad, ", ")+": the verdict would rest on a device shared with somebody else; run again on a quiet device")
	}
}

// isolateRow is one phase as the text and HTML show it.
type isolateRow struct {
	Phase, VictimIOPS, P50, P99, P999, AggressorIOPS string
}

func (rep *isolateReport) rows() []isolateRow {
	var rows []isolateRow
	for _, p := range rep.Phases {
		lat := func(m report.Metric) string { v, f := m.Measure(p.Victim); return report.FormatMeasure(m, v, f) }
		agg := "—"
		if p.Aggressor != nil {
			agg = units.Thousands(p.Aggressor.Total.IOPS, 0)
		}
		rows = append(rows, isolateRow{Phase: p.Name, VictimIOPS: units.Thousands(p.Victim.Total.IOPS, 0),
			P50: lat(report.LatP50), P99: lat(report.LatP99), P999: lat(report.LatP999), AggressorIOPS: agg})
	}
	return rows
}

func (rep *isolateReport) write(w io.Writer, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "html":
		return isolatePage.Execute(w, map[string]any{"R": rep, "Rows": rep.rows(), "Cap": report.DescribeCap(rep.Cap),
			"Victim": rep.Phases[0].Victim.Name, "Aggressor": rep.Phases[1].Aggressor.Name,
			"Window": fmt.Sprintf("%s + %s ramp", time.Duration(rep.RuntimeNS), time.Duration(rep.RampNS))})
	}
	fmt.Fprintf(w, "isolate %s: victim %s, aggressor %s, cap %s, %s + %s ramp per phase, engine %s\n\n",
		rep.Target.Path, rep.Phases[0].Victim.Name, rep.Phases[1].Aggressor.Name, report.DescribeCap(rep.Cap),
		time.Duration(rep.RuntimeNS), time.Duration(rep.RampNS), rep.Engine)
	fmt.Fprintf(w, "%-12s %12s %10s %10s %10s %15s\n", "phase", "victim IOPS", "p50 µs", "p99 µs", "p99.9 µs", "aggressor IOPS")
	for _, r := range rep.rows() {
		fmt.Fprintf(w, "%-12s %12s %10s %10s %10s %15s\n", r.Phase, r.VictimIOPS, r.P50, r.P99, r.P999, r.AggressorIOPS)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "victim alone: %s IOPS before, %s after (%+.1f %%); the baseline is their mean\n",
		units.Thousands(rep.Phases[0].Victim.Total.IOPS, 0), units.Thousands(rep.Phases[3].Victim.Total.IOPS, 0), 100*rep.Drift)
	if rep.CapIOPS > 0 {
		fmt.Fprintf(w, "capped aggressor: %s IOPS against the cap's %s (%+.1f %%)\n",
			units.Thousands(rep.Phases[2].Aggressor.Total.IOPS, 0), units.Thousands(rep.CapIOPS, 0), rep.AggCappedPct)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w, rep.Verdict)
	return nil
}

var isolatePage = template.Must(template.New("isolate").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>iomatrix isolate — {{.R.Target.Path}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.8em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.pass { color: #060; font-weight: 700; } .fail { color: #b00; font-weight: 700; }
.meta { color: #555; font-size: 0.9em; }
</style>
</head>
<body>
<h1>Does the cap shield the neighbours?</h1>
<p class="meta">{{.R.Target.Path}} ({{.R.Target.Kind}} on {{.R.Target.Disk}}); victim {{.Victim}}, aggressor {{.Aggressor}}; cap {{.Cap}}; {{.Window}} per phase; engine {{.R.Engine}}; {{.R.Host.Hostname}}, {{.R.StartedAt}}</p>
<table>
<caption>The three phases</caption>
<tr><th></th>{{range .Rows}}<th>{{.Phase}}</th>{{end}}</tr>
<tr><td>victim IOPS</td>{{range .Rows}}<td>{{.VictimIOPS}}</td>{{end}}</tr>
<tr><td>victim p50 (µs)</td>{{range .Rows}}<td>{{.P50}}</td>{{end}}</tr>
<tr><td>victim p99 (µs)</td>{{range .Rows}}<td>{{.P99}}</td>{{end}}</tr>
<tr><td>victim p99.9 (µs)</td>{{range .Rows}}<td>{{.P999}}</td>{{end}}</tr>
<tr><td>aggressor IOPS</td>{{range .Rows}}<td>{{.AggressorIOPS}}</td>{{end}}</tr>
</table>
<p class="{{if .R.Inconclusive}}meta{{else if .R.Protected}}pass{{else}}fail{{end}}">{{.R.Verdict}}</p>
{{range .R.Notes}}<p class="meta">Note: {{.}}</p>{{end}}
</body>
</html>
`))
