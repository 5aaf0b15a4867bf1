package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// CapVerdict is cap verify's answer as one document: what `cap verify
// --format json` prints and a CI job reads. Its field names are a contract
// (docs/caps.md, "cap verify --format json"): add fields, never rename.
type CapVerdict struct {
	// Verdict is "ok" (every cell holds), "fail" (a cell does not),
	// "inconclusive" (none fails, but another process loaded the device
	// while some were measured, so that their rate could not be judged)
	// or "incomplete" (interrupted or stopped by an I/O error before every
	// pattern was measured; the cells measured so far are listed).
	Verdict      string             `json:"verdict"`
	Summary      string             `json:"summary"`
	ResultsFile  string             `json:"results_file"`
	BaselineFile string             `json:"baseline_file"`
	Tool         results.Tool       `json:"tool"`
	Host         results.Host       `json:"host"`
	Target       results.TargetInfo `json:"target"`
	Settings     VerdictSettings    `json:"settings"`
	Cap          *results.Cap       `json:"cap"`
	Cells        []VerdictCell      `json:"cells"`
	Passed       int                `json:"passed"`
	Failed       int                `json:"failed"`
	Inconclusive int                `json:"inconclusive"`
}

// VerdictSettings are the run's settings and the verdict's rules.
type VerdictSettings struct {
	results.Settings
	TolerancePct        float64 `json:"tolerance_pct"`
	CounterTolerancePct float64 `json:"counter_tolerance_pct"`
	// Window says how each capped cell was measured.
	Window string `json:"window"`
}

// VerdictCell is one pattern's verdict.
type VerdictCell struct {
	Name    string          `json:"name"`
	Pattern results.Pattern `json:"pattern"`
	OK      bool            `json:"ok"`
	// Inconclusive: neither OK nor failed (results.CapCheck.Inconclusive).
	Inconclusive bool    `json:"inconclusive,omitempty"`
	MeasuredIOPS float64 `json:"measured_iops"`
	ExpectedIOPS float64 `json:"expected_iops"`
	UncappedIOPS float64 `json:"uncapped_iops"`
	// ReadShare is the measured window's share of reads, at which the cap
	// model was taken.
	ReadShare    float64 `json:"read_share"`
	DeviationPct float64 `json:"deviation_pct"`
	// CarryPct is allowed beyond the tolerance in a cell that both reads
	// and writes: the throttle's carry-over (results.CapCheck.CarryPct).
	CarryPct float64 `json:"carry_pct,omitempty"`
	Binding  bool    `json:"binding"`
	RateOK   bool    `json:"rate_ok"`
	// IOs are the I/Os iomatrix completed over the whole pattern (ramp and
	// drain included); RequestsPerIO turns them into ExpectedRequests,
	// which the kernel's count for the cgroup (KernelRequests) must equal.
	IOs              results.Counts   `json:"iomatrix_ios"`
	RequestsPerIO    int              `json:"requests_per_io"`
	ExpectedRequests results.Counts   `json:"expected_requests"`
	KernelRequests   *results.Counts  `json:"kernel_requests"`
	ForeignRequests  results.Counts   `json:"foreign_requests"`
	MissingRequests  results.Counts   `json:"missing_requests"`
	CountersOK       bool             `json:"counters_ok"`
	Error            *results.IOError `json:"error,omitempty"`
	Reasons          []string         `json:"reasons,omitempty"`
	// Stop, Rounds and CIPct say how the cell's window ended and how
	// precise its IOPS are (see results.Result).
	Stop   string   `json:"stop,omitempty"`
	Rounds int      `json:"rounds,omitempty"`
	CIPct  *float64 `json:"ci_pct,omitempty"`
}

// NotBindingMark follows the expectation of a cell where the cap does not
// bind: the expectation there is the uncapped figure.
const NotBindingMark = "†"

// VerdictRun is what a verdict needs besides the results: where they are,
// the rules they were judged by, and whether every pattern was measured.
type VerdictRun struct {
	ResultsFile, BaselineFile         string
	TolerancePct, CounterTolerancePct float64
	Window                            string // how each capped cell was measured
	Complete                          bool
}

// BuildCapVerdict gathers the checked results of doc into a verdict.
func BuildCapVerdict(doc *results.Document, run VerdictRun) *CapVerdict {
	v := &CapVerdict{
		ResultsFile: run.ResultsFile, BaselineFile: run.BaselineFile,
		Tool: doc.Tool, Host: doc.Host, Target: doc.Target, Cap: doc.Cap,
		Settings: VerdictSettings{Settings: doc.Settings, TolerancePct: run.TolerancePct,
			CounterTolerancePct: run.CounterTolerancePct, Window: run.Window},
		Cells: []VerdictCell{},
	}
	complete := run.Complete
	for _, r := range doc.Results {
		k := r.CapCheck
		if k == nil {
			continue
		}
		v.Cells = append(v.Cells, VerdictCell{
			Name: r.Name, Pattern: r.Pattern, OK: k.OK, Inconclusive: k.Inconclusive, MeasuredIOPS: r.Total.IOPS,
			ExpectedIOPS: k.ExpectedIOPS, UncappedIOPS: k.UncappedIOPS, ReadShare: k.ReadShare, DeviationPct: k.DeviationPct,
			CarryPct: k.CarryPct, Binding: k.Binding, RateOK: k.RateOK, IOs: r.Completed, RequestsPerIO: k.RequestsPerIO,
			ExpectedRequests: k.ExpectedRequests, KernelRequests: r.CgroupIOs,
			ForeignRequests: k.ForeignRequests, MissingRequests: k.MissingRequests,
			CountersOK: k.CountersOK, Error: r.Error, Reasons: k.Reasons,
			Stop: r.Stop, Rounds: r.Rounds, CIPct: r.CIPct,
		})
		switch {
		case k.OK:
			v.Passed++
		case k.Inconclusive:
			v.Inconclusive++
		default:
			v.Failed++
		}
	}
	n := len(v.Cells)
	notJudged := ""
	if v.Inconclusive > 0 {
		notJudged = fmt.Sprintf("; %d could not be judged: another process loaded the device", v.Inconclusive)
	}
	switch {
	case v.Failed > 0:
		v.Verdict = "fail"
		v.Summary = fmt.Sprintf("the cap does not hold in %d of %s", v.Failed, units.Count(n, "cell"))
		if !complete {
			v.Summary += " measured before the run stopped"
		}
		v.Summary += notJudged
	case !complete:
		v.Verdict = "incomplete"
		v.Summary = fmt.Sprintf("interrupted: the cap holds in the %s measured", units.Count(n, "cell"))
		if v.Inconclusive > 0 {
			v.Summary = fmt.Sprintf("interrupted: the cap holds in %d of the %s measured", v.Passed, units.Count(n, "cell")) + notJudged
		}
	case v.Inconclusive > 0:
		v.Verdict = "inconclusive"
		v.Summary = fmt.Sprintf("the cap holds in %d of %s", v.Passed, units.Count(n, "cell")) + notJudged +
			" while they were measured (run again on a quiet device)"
	default:
		v.Verdict = "ok"
		v.Summary = "the cap holds in " + units.Count(n, "cell")
		if n > 1 {
			v.Summary = "the cap holds in all " + units.Count(n, "cell")
		}
	}
	return v
}

// WriteJSON prints the verdict as one JSON document.
func (v *CapVerdict) WriteJSON(w io.Writer) error { return WriteJSON(w, v) }

// WriteCapCheck renders cap verify's verdict as text: the matrices of
// measured against expected IOPS, the kernel's counts against iomatrix's,
// the cells that failed and why, and the verdict line.
func WriteCapCheck(w io.Writer, doc *results.Document, v *CapVerdict) error {
	fmt.Fprintf(w, "iomatrix cap verify: %s, tolerance %g %%\nresults: %s\n\n", Describe(doc), v.Settings.TolerancePct, v.ResultsFile)
	rate := func(c *Cell) string {
		k := c.Result.CapCheck
		verdict := "ok"
		switch {
		case k.Inconclusive:
			verdict = "not judged"
		case !k.RateOK:
			verdict = "FAIL"
		}
		bind := ""
		if !k.Binding {
			bind = NotBindingMark
		}
		return fmt.Sprintf("%s / %s%s (%+.1f%%) %s", FormatMeasure(IOPS, c.Value, c.Flags), FormatValue(IOPS, k.ExpectedIOPS), bind, k.DeviationPct, verdict)
	}
	counters := func(c *Cell) string {
		r, k := c.Result, c.Result.CapCheck
		if r.CgroupIOs == nil {
			return "unavailable FAIL"
		}
		kernel, want := r.CgroupIOs.Reads+r.CgroupIOs.Writes, k.ExpectedRequests.Reads+k.ExpectedRequests.Writes
		s := fmt.Sprintf("%s / %s", units.Thousands(float64(kernel), 0), units.Thousands(float64(want), 0))
		if f := k.ForeignRequests.Reads + k.ForeignRequests.Writes; f > 0 {
			s += fmt.Sprintf(" (%s foreign)", units.Thousands(float64(f), 0))
		}
		if m := k.MissingRequests.Reads + k.MissingRequests.Writes; m > 0 {
			s += fmt.Sprintf(" (%s missing)", units.Thousands(float64(m), 0))
		}
		if !k.CountersOK {
			s += " FAIL"
		}
		return s
	}
	if err := writeCheckTables(w, doc, "measured / expected IOPS (deviation)", rate); err != nil {
		return err
	}
	for _, note := range BuildMetric(doc.Results, IOPS).Flags().Notes() {
		fmt.Fprintln(w, note)
	}
	for _, c := range v.Cells {
		if !c.Binding {
			fmt.Fprintln(w, NotBindingMark+" the cap does not bind there (its model is at least 90 % of the uncapped IOPS): the expectation is the uncapped figure, "+
				"which the cell must reach (less the tolerance) without exceeding the cap model")
			break
		}
	}
	if carry := maxCarry(v.Cells); carry > 0 {
		fmt.Fprintf(w, "a cell that both reads and writes may deviate %.1f %% more: the throttle carries a direction's unused budget over one slice (see carry_pct)\n", carry)
	}
	fmt.Fprintln(w)
	if err := writeCheckTables(w, doc, "cgroup requests: kernel / iomatrix", counters); err != nil {
		return err
	}
	fmt.Fprintf(w, "iomatrix counts its completed I/Os times the requests the block layer makes of each; the two must agree within %g %%\n", v.Settings.CounterTolerancePct)
	fmt.Fprintf(w, "window: %s\n", v.Settings.Window)
	var lines []string
	for _, c := range v.Cells {
		if !c.OK {
			lines = append(lines, c.Name+": "+strings.Join(c.Reasons, "; "))
		}
	}
	list := ""
	if len(lines) > 0 {
		list = ":\n  " + strings.Join(lines, "\n  ")
	}
	_, err := fmt.Fprintf(w, "\n%s: %s%s\n", strings.ToUpper(v.Verdict), v.Summary, list)
	return err
}

// writeCheckTables renders one matrix per table of doc's checked results,
// each cell drawn by cell.
func writeCheckTables(w io.Writer, doc *results.Document, what string, cell func(*Cell) string) error {
	m := BuildMetric(doc.Results, IOPS)
	for _, t := range m.Tables {
		fmt.Fprintf(w, "%s: %s\n", strings.TrimSuffix(t.Title, " IOPS"), what)
		header := append([]string{""}, t.Cols...)
		var rows [][]string
		for r, label := range t.Rows {
			row := []string{label}
			for _, c := range t.Cells[r] {
				if c == nil || c.Result.CapCheck == nil {
					row = append(row, "")
					continue
				}
				row = append(row, cell(c))
			}
			rows = append(rows, row)
		}
		if err := renderRows(w, header, rows, asciiTable()); err != nil {
			return err
		}
	}
	return nil
}

// maxCarry is the largest carry-over allowance among the cells.
func maxCarry(cells []VerdictCell) float64 {
	m := 0.0
	for _, c := range cells {
		m = max(m, c.CarryPct)
	}
	return m
}
