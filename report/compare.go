package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/renderer"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Comparison sets two runs side by side, pattern by pattern.
type Comparison struct {
	Metric Metric `json:"metric"`
	Base   string `json:"base"`
	New    string `json:"new"`
	// Differences are the settings in which the runs differ (target,
	// size, engine, cap, host…): [] when they are alike.
	Differences []Difference `json:"differences"`
	Cells       []CellDelta  `json:"cells"`
	// Loads are the loads of load–latency curves measured in both runs
	// (see LoadDelta); their results are in neither Cells nor the Only
	// lists.
	Loads    []LoadDelta `json:"loads"`
	OnlyBase []string    `json:"only_in_base"`
	OnlyNew  []string    `json:"only_in_new"`
	// GeoMean is new/base over every comparable cell (a base above 0);
	// nil (JSON null) when there is none, as there is no ratio then.
	GeoMean *float64   `json:"geomean_ratio"`
	Worst   *CellDelta `json:"worst,omitempty"`
	Best    *CellDelta `json:"best,omitempty"`
	matrix  Matrix     // the new run's matrix, restricted to shared patterns
	byName  map[string]CellDelta
}

// CellDelta is one pattern measured in both runs.
type CellDelta struct {
	Name  string  `json:"name"`
	Base  float64 `json:"base"`
	New   float64 `json:"new"`
	Ratio float64 `json:"ratio"` // new / base; 0 when base is 0
	// Approx: either side is an approximate figure; FewIOs: either side is
	// a percentile on too few I/Os; Unsettled: either side's window never
	// converged (see Metric.Measure).
	Approx    bool `json:"approx"`
	FewIOs    bool `json:"few_ios"`
	Unsettled bool `json:"unsettled"`
	flags     Flags
	// baseAbsent, newAbsent: that run has no figure of the metric (the
	// latency of a result that completed no I/O, Metric.Absent). Its
	// value is null in JSON and empty in CSV, and there is no ratio.
	baseAbsent, newAbsent bool
}

// MarshalJSON writes an absent figure, and the ratio it leaves out, as
// null: 0 µs would read as a latency measured.
func (c CellDelta) MarshalJSON() ([]byte, error) {
	out := struct {
		Name      string   `json:"name"`
		Base      *float64 `json:"base"`
		New       *float64 `json:"new"`
		Ratio     *float64 `json:"ratio"`
		Approx    bool     `json:"approx"`
		FewIOs    bool     `json:"few_ios"`
		Unsettled bool     `json:"unsettled"`
	}{c.Name, &c.Base, &c.New, &c.Ratio, c.Approx, c.FewIOs, c.Unsettled}
	if c.baseAbsent {
		out.Base = nil
	}
	if c.newAbsent {
		out.New = nil
	}
	if c.baseAbsent || c.newAbsent {
		out.Ratio = nil
	}
	return json.Marshal(out)
}

// ratioCSV is the cell's ratio and change in CSV: empty where there is
// no ratio (a base of 0, or a figure absent), never -100 %.
func (c CellDelta) ratioCSV() (ratio, change string) {
	if c.Ratio == 0 || c.baseAbsent || c.newAbsent {
		return "", ""
	}
	return ftoa(roundTo(c.Ratio, 4)), ftoa(roundTo(c.Change(), 2))
}

// valueCSV is a run's figure in CSV: empty where it is absent.
func valueCSV(v float64, absent bool) string {
	if absent {
		return ""
	}
	return ftoa(roundTo(v, 2))
}

// Change is the relative change in percent.
func (c CellDelta) Change() float64 { return (c.Ratio - 1) * 100 }

// Compare matches the results of two documents by pattern name (or, for
// two runs that each wrote one data content, by name without it: see
// pairKey). Patterns
// present in only one of them are listed, never dropped silently. For
// latency metrics a ratio below 1 is an improvement: worst and best follow
// the metric's direction.
func Compare(base, cur *results.Document, baseName, newName string, m Metric) *Comparison {
	// Empty lists rather than nil: JSON shows [] for "none", never null.
	c := &Comparison{Metric: m, Base: baseName, New: newName, byName: map[string]CellDelta{},
		Cells: []CellDelta{}, OnlyBase: []string{}, OnlyNew: []string{}, Differences: differences(base, cur)}
	// An open-loop result is a load of a curve: matched by its share of
	// each run's maximum, not by name, whose rate differs with the
	// maximum.
	var paired map[string]bool
	c.Loads, paired = matchLoads(Curves(base.Results), Curves(cur.Results))
	key := pairKey(base, cur)
	inBase := map[string]*results.Result{}
	for i := range base.Results {
		inBase[key(base.Results[i])] = &base.Results[i]
	}
	var shared []results.Result
	seen := map[string]bool{}
	var logSum float64
	var n int
	for _, r := range cur.Results {
		seen[key(r)] = true
		if paired[r.Name] {
			continue
		}
		b, ok := inBase[key(r)]
		if !ok {
			c.OnlyNew = append(c.OnlyNew, r.Name)
			continue
		}
		shared = append(shared, r)
		d := CellDelta{Name: r.Name, baseAbsent: m.Absent(*b), newAbsent: m.Absent(r)}
		var baseFlags, newFlags Flags
		d.Base, baseFlags = m.Measure(*b)
		d.New, newFlags = m.Measure(r)
		d.flags = baseFlags | newFlags
		d.Approx, d.FewIOs, d.Unsettled = d.flags.Has(FlagApprox), d.flags.Has(FlagFewIOs), d.flags.Has(FlagUnsettled)
		if d.Base > 0 && !d.baseAbsent && !d.newAbsent {
			d.Ratio = d.New / d.Base
			if d.Ratio > 0 {
				logSum += math.Log(d.Ratio)
				n++
			}
		}
		c.byName[r.Name] = d
		c.Cells = append(c.Cells, d)
	}
	for _, r := range base.Results {
		if !seen[key(r)] && !paired[r.Name] {
			c.OnlyBase = append(c.OnlyBase, r.Name)
		}
	}
	slices.Sort(c.OnlyBase)
	slices.Sort(c.OnlyNew)
	if n > 0 {
		g := math.Exp(logSum / float64(n))
		c.GeoMean = &g
	}
	lowerIsBetter := m.LowerIsBetter()
	for i := range c.Cells {
		d := &c.Cells[i]
		if d.Ratio == 0 {
			continue
		}
		better := func(a, b *CellDelta) bool {
			if lowerIsBetter {
				return a.Ratio < b.Ratio
			}
			return a.Ratio > b.Ratio
		}
		if c.Best == nil || better(d, c.Best) {
			c.Best = d
		}
		if c.Worst == nil || better(c.Worst, d) {
			c.Worst = d
		}
	}
	c.matrix = BuildMetric(shared, m)
	return c
}

// ErrNoCommonPattern: the two runs share no pattern, so nothing was
// compared.
var ErrNoCommonPattern = errors.New("no pattern in common")

// Err is ErrNoCommonPattern, naming both runs, when they share no pattern:
// a comparison of nothing is not a success.
func (c *Comparison) Err() error {
	if len(c.Cells) == 0 && len(c.Loads) == 0 {
		return fmt.Errorf("%s and %s: %w: nothing to compare", c.Base, c.New, ErrNoCommonPattern)
	}
	return nil
}

// Summary is the one-line verdict.
func (c *Comparison) Summary() string {
	if len(c.Cells) == 0 && len(c.Loads) > 0 {
		return units.Count(len(c.Loads), "load") + " of load–latency curves compared on p99 response time; no matrix pattern in common"
	}
	if len(c.Cells) == 0 {
		return "no pattern in common: nothing compared, no ratio"
	}
	s := units.Count(len(c.Cells), "pattern") + " compared on " + string(c.Metric) + ": "
	if c.GeoMean == nil {
		// A ratio needs a base above 0: 0 would read as -100 %.
		return s + "no ratio, the base measured 0 in every one"
	}
	s += fmt.Sprintf("geometric-mean ratio %.3f (%+.1f %%)", *c.GeoMean, (*c.GeoMean-1)*100)
	if c.Worst != nil {
		s += fmt.Sprintf("; worst %s %+.1f %%, best %s %+.1f %%", c.Worst.Name, c.Worst.Change(), c.Best.Name, c.Best.Change())
	}
	for _, k := range []struct {
		flag Flags
		what string
	}{{FlagApprox, "approximate"}, {FlagFewIOs, "low-confidence"}, {FlagUnsettled, "not converged"},
		{FlagDeviceChanged, "measured on a changed device"}, {FlagBursting, "measured during a burst"}} {
		if n := c.markedCells(k.flag); n > 0 {
			s += fmt.Sprintf("; %d %s (%s)", n, k.what, k.flag.Signs())
		}
	}
	return s
}

// markedCells counts the cells where either run's figure carries flag.
func (c *Comparison) markedCells(flag Flags) int {
	n := 0
	for _, d := range c.Cells {
		if d.flags.Has(flag) {
			n++
		}
	}
	return n
}

// flags is every flag a compared cell carries.
func (c *Comparison) flags() Flags {
	var f Flags
	for _, d := range c.Cells {
		f |= d.flags
	}
	return f
}

func (c *Comparison) cellText(cell *Cell) string {
	if cell == nil {
		return ""
	}
	d := c.byName[cell.Result.Name]
	s := FormatMeasure(c.Metric, cell.Value, d.flags)
	if d.Ratio > 0 {
		s += fmt.Sprintf(" (%+.1f %%)", (cell.Value/d.Base-1)*100)
	}
	return s
}

// DifferencesNote is the settings in which the runs differ on one line,
// for a format whose output has no place for them (CSV); "" when alike.
func (c *Comparison) DifferencesNote() string {
	if len(c.Differences) == 0 {
		return ""
	}
	lines := make([]string, len(c.Differences))
	for i, d := range c.Differences {
		lines[i] = d.String()
	}
	return "the runs differ (base → new): " + strings.Join(lines, "; ")
}

// writeDifferences names, under the header, each setting in which the
// runs differ, or says they are alike: side by side, cells of unlike runs
// would read as a change of the disk.
func (c *Comparison) writeDifferences(w io.Writer, md bool) {
	if len(c.Differences) == 0 {
		fmt.Fprintln(w, "same target, size, settings, cap and host in both runs")
		return
	}
	bullet := "  "
	if md {
		fmt.Fprintln(w)
		bullet = "- "
	}
	fmt.Fprintln(w, "the runs differ (base → new):")
	if md {
		fmt.Fprintln(w)
	}
	for _, d := range c.Differences {
		fmt.Fprintln(w, bullet+d.String())
	}
}

// ComparisonFormats are the formats a comparison renders in.
var ComparisonFormats = []string{"text", "markdown", "csv", "json"}

// WriteComparison renders c in one of ComparisonFormats.
func WriteComparison(w io.Writer, c *Comparison, format string) error {
	switch format {
	case "json":
		return WriteJSON(w, c)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"name", "base", "new", "ratio", "change_pct", "approx", "few_ios", "unsettled"})
		for _, d := range c.Cells {
			ratio, change := d.ratioCSV()
			cw.Write([]string{d.Name, valueCSV(d.Base, d.baseAbsent), valueCSV(d.New, d.newAbsent), ratio, change,
				strconv.FormatBool(d.Approx), strconv.FormatBool(d.FewIOs), strconv.FormatBool(d.Unsettled)})
		}
		for _, d := range c.Loads {
			cw.Write([]string{d.NewName, ftoa(roundTo(d.BaseP99US, 2)), ftoa(roundTo(d.NewP99US, 2)), ftoa(roundTo(d.Ratio, 4)),
				ftoa(roundTo((d.Ratio-1)*100, 2)), "", "", ""})
		}
		for _, n := range c.OnlyBase {
			cw.Write([]string{n, "", "", "", "only in base", "", "", ""})
		}
		for _, n := range c.OnlyNew {
			cw.Write([]string{n, "", "", "", "only in new", "", "", ""})
		}
		cw.Flush()
		return cw.Error()
	case "text", "markdown":
	default:
		return fmt.Errorf("%w %q (valid: %s)", ErrBadFormat, format, strings.Join(ComparisonFormats, ", "))
	}
	md := format == "markdown"
	fmt.Fprintf(w, "%s vs %s — new (change against base)\n", c.New, c.Base)
	c.writeDifferences(w, md)
	for _, t := range c.matrix.Tables {
		if md {
			fmt.Fprintf(w, "\n### %s\n\n", t.Title)
		} else {
			fmt.Fprintf(w, "\n%s\n", t.Title)
		}
		header := append([]string{""}, t.Cols...)
		var rows [][]string
		for i, r := range t.Rows {
			row := []string{r}
			for j := range t.Cols {
				row = append(row, c.cellText(t.Cells[i][j]))
			}
			rows = append(rows, row)
		}
		rend := asciiTable()
		if md {
			rend = renderer.NewMarkdown()
		}
		if err := renderRows(w, header, rows, rend); err != nil {
			return err
		}
	}
	if err := writeLoads(w, c.Loads, md); err != nil {
		return err
	}
	if notes := c.flags().Notes(); len(notes) > 0 {
		// A sign covers the change too: either run's figure may be the
		// marked one.
		fmt.Fprintf(w, "\n%s\n(here in either run, so the change carries the mark too)\n", strings.Join(notes, "\n"))
	}
	fmt.Fprintf(w, "\n%s\n", c.Summary())
	only := func(label string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(w, "only in %s (%d): %s\n", label, len(names), strings.Join(names, ", "))
		}
	}
	only("base "+c.Base, c.OnlyBase)
	only("new "+c.New, c.OnlyNew)
	return nil
}
