package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/stats"
	"github.com/iomatrix/iomatrix/results"
)

// A fleet document (iomatrix merge) holds several results documents as its
// members and, per cell, the spread of every metric across the members
// that measured it: matrices, charts and compare read the median member's
// figure (Metric.Measure), text cells add the range, and a members table
// says how far each member is from the fleet.

// MemberInput is one results document to merge.
type MemberInput struct {
	Doc    *results.Document
	Source string // the file it was read from
	Label  string // "" for the automatic label
}

// ErrMerge is returned for inputs that cannot form a fleet.
var ErrMerge = errors.New("cannot merge")

// DefaultOutlier is how far below the fleet median a member is flagged.
const DefaultOutlier = 0.10

// Merge builds a fleet document. Members are labelled by host, by host
// and target where hosts repeat, or as given (every one or none).
func Merge(in []MemberInput) (*results.Document, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("%w: a fleet needs two members or more, got %d", ErrMerge, len(in))
	}
	for _, m := range in {
		if len(m.Doc.Members) > 0 {
			return nil, fmt.Errorf("%w: %s is a fleet document already; merge its members' own files", ErrMerge, m.Source)
		}
		if len(m.Doc.Results) == 0 {
			return nil, fmt.Errorf("%w: %s has no results", ErrMerge, m.Source)
		}
	}
	labels, err := memberLabels(in)
	if err != nil {
		return nil, err
	}
	first := in[0].Doc
	fleet := &results.Document{SchemaVersion: results.SchemaVersion, Tool: results.Tool{Name: "iomatrix", Version: results.Version},
		StartedAt: first.StartedAt, FinishedAt: first.FinishedAt, Host: results.Host{Hostname: fmt.Sprintf("fleet of %d", len(in))},
		Target: first.Target, Settings: first.Settings, Cap: first.Cap}
	for i, m := range in {
		d := m.Doc
		fleet.Members = append(fleet.Members, results.Member{Label: labels[i], Source: m.Source, Host: d.Host, Target: d.Target,
			Settings: d.Settings, Cap: d.Cap, Results: d.Results})
		fleet.StartedAt = min(fleet.StartedAt, d.StartedAt)
		if d.FinishedAt == "" || fleet.FinishedAt == "" {
			fleet.FinishedAt = ""
		} else {
			fleet.FinishedAt = max(fleet.FinishedAt, d.FinishedAt)
		}
		// What the members do not share is not the fleet's.
		if d.Target != fleet.Target {
			fleet.Target = commonTarget(fleet.Target, d.Target)
		}
		if d.Settings != fleet.Settings {
			fleet.Settings = results.Settings{Profile: common(fleet.Settings.Profile, d.Settings.Profile),
				Engine: common(fleet.Settings.Engine, d.Settings.Engine)}
		}
		if !sameCap(fleet.Cap, d.Cap) {
			fleet.Cap = nil
		}
	}
	fleet.Results = fleetCells(fleet.Members)
	return fleet, nil
}

func common(a, b string) string {
	if a == b {
		return a
	}
	return ""
}

// commonTarget keeps what two targets share: their kind and size.
func commonTarget(a, b results.TargetInfo) results.TargetInfo {
	var t results.TargetInfo
	t.Kind = common(a.Kind, b.Kind)
	if a.SizeBytes == b.SizeBytes {
		t.SizeBytes = a.SizeBytes
	}
	return t
}

func sameCap(a, b *results.Cap) bool {
	return a == nil && b == nil || a != nil && b != nil && CapSpec(a) == CapSpec(b)
}

// memberLabels names the members: as given, else by host, else by host and
// target where a host appears twice; two members may not share a label.
func memberLabels(in []MemberInput) ([]string, error) {
	labels := make([]string, len(in))
	hosts := map[string]int{}
	for _, m := range in {
		hosts[m.Doc.Host.Hostname]++
	}
	for i, m := range in {
		switch {
		case m.Label != "":
			if err := results.CheckName(m.Label); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrMerge, m.Source, fault.NewMention(func(n fault.Namer) string {
					return n("label") + " " + err.Error()
				}))
			}
			labels[i] = m.Label
		case m.Doc.Host.Hostname == "":
			labels[i] = m.Source
		case hosts[m.Doc.Host.Hostname] > 1:
			labels[i] = m.Doc.Host.Hostname + ":" + m.Doc.Target.Path
		default:
			labels[i] = m.Doc.Host.Hostname
		}
	}
	for i, l := range labels {
		if j := slices.Index(labels, l); j != i {
			return nil, fmt.Errorf("%w: %s and %s would both be labelled %q; %w", ErrMerge, in[j].Source, in[i].Source, l,
				fault.NewMention(func(n fault.Namer) string { return "give each member a " + n("label") }))
		}
	}
	return labels, nil
}

// fleetCells is, per pattern in the order first met, the spread of every
// metric across the members that measured it without error; a latency
// only across the members that have one (Metric.Absent), and none where
// no member has.
func fleetCells(members []results.Member) []results.Result {
	var cells []results.Result
	index := map[string]int{}
	var who [][]int // members, by cell
	var of [][]*results.Result
	for mi := range members {
		for ri := range members[mi].Results {
			r := &members[mi].Results[ri]
			if r.Error != nil {
				continue
			}
			i, ok := index[r.Name]
			if !ok {
				i = len(cells)
				index[r.Name] = i
				cells = append(cells, results.Result{Name: r.Name, Pattern: r.Pattern, Engine: r.Engine})
				who, of = append(who, nil), append(of, nil)
			}
			who[i], of[i] = append(who[i], mi), append(of[i], r)
		}
	}
	for i := range cells {
		f := &results.Fleet{Metrics: map[string]results.Spread{}}
		for _, mi := range who[i] {
			f.Members = append(f.Members, members[mi].Label)
		}
		for _, m := range Metrics {
			var vals []float64
			var sp results.Spread
			for _, r := range of[i] {
				if m.Absent(*r) {
					continue
				}
				v, flags := m.Measure(*r)
				vals = append(vals, v)
				sp.Approx = sp.Approx || flags.Has(FlagApprox)
				sp.FewIOs = sp.FewIOs || flags.Has(FlagFewIOs)
				sp.Unsettled = sp.Unsettled || flags.Has(FlagUnsettled)
			}
			if len(vals) == 0 {
				continue
			}
			sp.Min, sp.Median, sp.Max = slices.Min(vals), stats.Median(vals), slices.Max(vals)
			f.Metrics[string(m)] = sp
		}
		f.ReadLatNS = fleetLatency(of[i], func(r *results.Result) *results.DirStats { return &r.Read })
		f.WriteLatNS = fleetLatency(of[i], func(r *results.Result) *results.DirStats { return &r.Write })
		cells[i].Fleet = f
		cells[i].Total.IOPS, cells[i].Total.MiBPerS = f.Metrics[string(IOPS)].Median, f.Metrics[string(MiBps)].Median
	}
	return cells
}

// fleetLatency is a direction's latency over the members as one, the
// union of their histograms; nil where a member that did I/O in it kept
// none (or an inconsistent one, which reading a file refuses already).
func fleetLatency(of []*results.Result, dir func(*results.Result) *results.DirStats) *results.Latency {
	var ls []*results.Latency
	for _, r := range of {
		if d := dir(r); d.IOs > 0 {
			ls = append(ls, &d.LatNS)
		}
	}
	u, err := results.Union(ls)
	if err != nil {
		return nil
	}
	return u
}

// fleetMeasure is a fleet cell's figure: the median member's, with the
// caveats of any member's.
func fleetMeasure(f *results.Fleet, m Metric) (float64, Flags) {
	sp := f.Metrics[string(m)]
	var flags Flags
	if sp.Approx {
		flags |= FlagApprox
	}
	if sp.FewIOs {
		flags |= FlagFewIOs
	}
	if sp.Unsettled {
		flags |= FlagUnsettled
	}
	return sp.Median, flags
}

// MemberRow is how far one member of a fleet is from the fleet.
type MemberRow struct {
	Label  string `json:"label"`
	Host   string `json:"host"`
	Target string `json:"target"`
	Cells  int    `json:"cells"`
	// Ratio is the geometric mean, over the member's cells that other
	// members measured too, of its figure over the fleet median; Worst is
	// its cell furthest below (for latency, above) the median.
	Ratio      float64 `json:"ratio"`
	Worst      string  `json:"worst"`
	WorstRatio float64 `json:"worst_ratio"`
	// Outlier: Ratio is worse than the median by more than the outlier
	// threshold.
	Outlier bool `json:"outlier"`
}

// Members is the members table of a fleet document for a metric: each
// member's deviation from the fleet median; outlier is the fraction below
// (for latency: above) the median that flags a member.
func Members(doc *results.Document, m Metric, outlier float64) []MemberRow {
	median := map[string]float64{}
	for _, r := range doc.Results {
		if r.Fleet != nil && len(r.Fleet.Members) > 1 {
			median[r.Name] = r.Fleet.Metrics[string(m)].Median
		}
	}
	var rows []MemberRow
	for _, mem := range doc.Members {
		row := MemberRow{Label: mem.Label, Host: mem.Host.Hostname, Target: mem.Target.Path, WorstRatio: 1}
		var logSum float64
		for _, r := range mem.Results {
			med, ok := median[r.Name]
			v, _ := m.Measure(r)
			if !ok || med <= 0 || v <= 0 || r.Error != nil {
				continue
			}
			ratio := v / med
			row.Cells++
			logSum += math.Log(ratio)
			if worse(m, ratio, row.WorstRatio) || row.Worst == "" {
				row.Worst, row.WorstRatio = r.Name, ratio
			}
		}
		if row.Cells > 0 {
			row.Ratio = math.Exp(logSum / float64(row.Cells))
			if m.LowerIsBetter() {
				row.Outlier = row.Ratio > 1+outlier
			} else {
				row.Outlier = row.Ratio < 1-outlier
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// worse tells whether ratio a is further from the fleet in the bad
// direction than b.
func worse(m Metric, a, b float64) bool {
	if m.LowerIsBetter() {
		return a > b
	}
	return a < b
}

// membersRows renders the members table as text rows.
func membersRows(rows []MemberRow, m Metric) (header []string, out [][]string) {
	header = []string{"member", "host", "target", "cells", "vs fleet median", "worst cell", ""}
	for _, r := range rows {
		flag := ""
		if r.Outlier {
			flag = "OUTLIER"
		}
		ratio, worst := "", ""
		if r.Cells > 0 {
			ratio = fmt.Sprintf("%+.1f %%", (r.Ratio-1)*100)
			worst = fmt.Sprintf("%s %+.1f %%", r.Worst, (r.WorstRatio-1)*100)
		}
		out = append(out, []string{r.Label, r.Host, r.Target, fmt.Sprint(r.Cells), ratio, worst, flag})
	}
	return header, out
}

// membersNote explains the members table.
func membersNote(m Metric, outlier float64) string {
	dir := "below"
	if m.LowerIsBetter() {
		dir = "above"
	}
	return fmt.Sprintf("vs fleet median: the geometric mean of the member's %s over the fleet median, over the cells two members or more measured; "+
		"OUTLIER: more than %s %% %s it", m.Title(), plain(outlier*100), dir)
}

// fleetTitle describes the members in one line.
func fleetTitle(doc *results.Document) string {
	labels := make([]string, len(doc.Members))
	for i, m := range doc.Members {
		labels[i] = m.Label
	}
	return fmt.Sprintf("fleet of %d members: %s; cells show the median member's figure (min–max across members)", len(doc.Members), strings.Join(labels, ", "))
}
