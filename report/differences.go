package report

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Difference is a setting in which the two runs of a comparison differ.
type Difference struct {
	Setting string `json:"setting"`
	Base    string `json:"base"`
	New     string `json:"new"`
}

// String renders a difference as "setting: base → new".
func (d Difference) String() string { return d.Setting + ": " + d.Base + " → " + d.New }

// comparedSettings are what makes two runs like for like, in the order a
// reader weighs them: where and how much was measured, how, under what
// cap, on what machine. Each renders a document's value as text; an
// unknown value is "unknown", so that a file that lacks it (a fio import)
// still shows as different from one that has it.
var comparedSettings = []struct {
	name  string
	value func(d *results.Document) string
}{
	{"target", func(d *results.Document) string { return d.Target.Path }},
	{"target kind", func(d *results.Document) string { return d.Target.Kind }},
	{"disk", func(d *results.Document) string { return d.Target.Disk }},
	{"target size", func(d *results.Document) string { return sizeOrUnknown(d.Target.SizeBytes) }},
	{"logical block size", func(d *results.Document) string { return sizeOrUnknown(int64(d.Target.LogicalBlockSize)) }},
	{"rotational", func(d *results.Document) string {
		if d.Target.Disk == "" {
			return "" // read from the disk's sysfs entry: unknown without one
		}
		return strconv.FormatBool(d.Target.Rotational)
	}},
	{"scheduler", func(d *results.Document) string { return d.Target.Scheduler }},
	{"filesystem", func(d *results.Document) string { return d.Target.Filesystem }},
	{"profile", func(d *results.Document) string { return d.Settings.Profile }},
	{"data content", dataContent},
	{"engine", engineOf},
	{"engine options", func(d *results.Document) string {
		if d.Settings.EngineOptions == "" {
			return "none"
		}
		return d.Settings.EngineOptions
	}},
	{"runtime", func(d *results.Document) string {
		if d.Settings.Auto != nil {
			return runtimeSetting(d.Settings)
		}
		return durationOrUnknown(d.Settings.RuntimeNS)
	}},
	{"ramp", func(d *results.Document) string { return time.Duration(d.Settings.RampNS).String() }},
	{"cap", func(d *results.Document) string {
		if d.Cap == nil {
			return "none"
		}
		return DescribeCap(d.Cap)
	}},
	{"host", func(d *results.Document) string { return d.Host.Hostname }},
	{"kernel", func(d *results.Document) string { return d.Host.Kernel }},
	{"cpus", func(d *results.Document) string {
		if d.Host.CPUs == 0 {
			return ""
		}
		return strconv.Itoa(d.Host.CPUs)
	}},
	{"tool", func(d *results.Document) string { return strings.TrimSpace(d.Tool.Name + " " + d.Tool.Version) }},
}

// differences lists the settings in which base and cur differ; empty (not
// nil) when none does.
func differences(base, cur *results.Document) []Difference {
	diffs := []Difference{}
	for _, s := range comparedSettings {
		b, n := orUnknown(s.value(base)), orUnknown(s.value(cur))
		if b != n {
			diffs = append(diffs, Difference{Setting: s.name, Base: b, New: n})
		}
	}
	return diffs
}

// dataContent is what the run's writes carried: one content ("random,
// unique", "compress 50 %"), or each of several, or "no writes".
func dataContent(d *results.Document) string {
	var contents []string
	for _, r := range d.Results {
		if c := r.Pattern.Content(); r.Pattern.Writes() && !slices.Contains(contents, c) {
			contents = append(contents, c)
		}
	}
	if len(contents) == 0 {
		return "no writes"
	}
	slices.Sort(contents)
	return strings.Join(contents, "; ")
}

// pairKey is how Compare pairs the results of two runs: by name, or,
// when each run wrote one data content and the two differ (the same
// profile run on plain and on compressible data), by name without the
// content, which the differences then name (dataContent).
func pairKey(base, cur *results.Document) func(results.Result) string {
	b, n := dataContent(base), dataContent(cur)
	if b == n || strings.Contains(b, "; ") || strings.Contains(n, "; ") || b == "no writes" || n == "no writes" {
		return func(r results.Result) string { return r.Name }
	}
	return func(r results.Result) string {
		p := r.Pattern
		p.Compress, p.Dedupe = 0, 0
		if r.Name != r.Pattern.Name() {
			return r.Name // a name of its own (a fio job's): as it is
		}
		return p.Name()
	}
}

// engineOf is the run's engine; a fio import records one per result only.
func engineOf(d *results.Document) string {
	if d.Settings.Engine != "" {
		return d.Settings.Engine
	}
	var engines []string
	for _, r := range d.Results {
		if r.Engine != "" && !slices.Contains(engines, r.Engine) {
			engines = append(engines, r.Engine)
		}
	}
	slices.Sort(engines)
	return strings.Join(engines, "+")
}

func sizeOrUnknown(n int64) string {
	if n <= 0 {
		return ""
	}
	return units.FormatSize(n)
}

func durationOrUnknown(ns int64) string {
	if ns <= 0 {
		return ""
	}
	return time.Duration(ns).String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
