package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Options shape a rendering.
type Options struct {
	Metric Metric
	// Wide makes the CSV writer emit the matrix instead of one row per
	// result.
	Wide bool
	// Outlier is how far from a fleet's median a member is flagged
	// (DefaultOutlier when 0).
	Outlier float64
}

func outlierOf(o Options) float64 {
	if o.Outlier == 0 {
		return DefaultOutlier
	}
	return o.Outlier
}

// WriteFunc renders a results document in one format.
type WriteFunc func(w io.Writer, doc *results.Document, o Options) error

// ErrBadFormat is returned for unknown format names.
var ErrBadFormat = errors.New("unknown format")

// writers is the registry of output formats, by name.
var writers = map[string]WriteFunc{
	"text":     writeText,
	"markdown": writeMarkdown,
	"csv":      writeCSV,
	"json":     writeJSON,
}

// everyFigure names the formats that carry every figure of every result
// rather than one metric's matrices.
var everyFigure = map[string]bool{}

// CheckMetric tells whether a format can show a metric. Every format
// shows the plain metrics; one that carries every figure (openmetrics)
// has no cell to pick for a bound metric, which is refused rather than
// ignored.
func CheckMetric(format string, m Metric) error {
	if _, bounded := m.Bounded(); bounded && everyFigure[format] {
		return fault.Input("metric", "%s picks one cell per row, which %s cannot show: it carries every figure of every result (use text, markdown, csv, html or xlsx)", m, format)
	}
	return nil
}

// extensions maps file extensions to format names for -o.
var extensions = map[string]string{
	".txt": "text", ".md": "markdown", ".markdown": "markdown", ".csv": "csv", ".json": "json",
	".html": "html", ".htm": "html", ".xlsx": "xlsx", ".prom": "openmetrics",
}

// Register adds a format; it is how the heavier writers plug in.
func Register(name string, f WriteFunc) { writers[name] = f }

// Formats lists the registered format names.
func Formats() []string {
	names := make([]string, 0, len(writers))
	for n := range writers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the writer of a format.
func Lookup(name string) (WriteFunc, error) {
	if f, ok := writers[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w %q (valid: %s)", ErrBadFormat, name, strings.Join(Formats(), ", "))
}

// FormatForPath infers a format from a file name's extension.
func FormatForPath(path string) (string, bool) {
	f, ok := extensions[strings.ToLower(filepath.Ext(path))]
	if _, registered := writers[f]; !registered {
		return "", false
	}
	return f, ok
}

// Binary reports whether a format's output is not text (not for terminals).
func Binary(format string) bool { return format == "xlsx" }

func metricOf(o Options) Metric {
	if o.Metric == "" {
		return DefaultM
	}
	return o.Metric
}

// Describe is the one-line summary of a document's run: target and its
// size, profile, settings and cap. The size and the cap are always there
// when known: a target a page cache or a controller's cache can hold reads
// very differently from a large one, and an uncapped run from a capped one.
func Describe(doc *results.Document) string {
	t, s := doc.Target, doc.Settings
	var parts, detail []string
	if kind := t.Kind; kind != "" || t.Disk != "" {
		if t.Disk != "" {
			kind = strings.TrimSpace(kind + " on " + t.Disk)
		}
		detail = append(detail, kind)
	}
	if t.SizeBytes > 0 {
		detail = append(detail, units.FormatSize(t.SizeBytes))
	}
	switch {
	case t.Path != "" && len(detail) > 0:
		parts = append(parts, t.Path+" ("+strings.Join(detail, ", ")+")")
	case t.Path != "":
		parts = append(parts, t.Path)
	case len(detail) > 0:
		parts = append(parts, "target "+strings.Join(detail, ", "))
	}
	if s.Profile != "" {
		parts = append(parts, "profile "+s.Profile)
	}
	if s.RuntimeNS > 0 {
		run := runtimeSetting(s) + " runtime"
		if s.RampNS > 0 {
			run += " + " + time.Duration(s.RampNS).String() + " ramp"
		}
		parts = append(parts, run)
	}
	if s.Engine != "" {
		parts = append(parts, "engine "+s.Engine)
	}
	if n := len(doc.Members); n > 0 {
		parts = append([]string{fmt.Sprintf("fleet of %d members", n)}, parts...)
	}
	if len(parts) == 0 && doc.Cap == nil {
		return "iomatrix results"
	}
	switch {
	case doc.Cap != nil && doc.Cap.Provisioned:
		parts = append(parts, DescribeCap(doc.Cap))
	case doc.Cap != nil:
		parts = append(parts, "cap "+DescribeCap(doc.Cap))
	case slices.ContainsFunc(doc.Members, func(m results.Member) bool { return m.Cap != nil }):
		parts = append(parts, "caps differ across members")
	case doc.Rehearsal != nil && doc.Rehearsal.WithCaps:
		parts = append(parts, "each system under its own cap")
	default:
		parts = append(parts, "no cap")
	}
	return strings.Join(parts, ", ")
}

// CapSpec renders a cap's limits the way caps are written,
// "riops=10000,wiops=10000,rbps=64MiB" (any subset; parsed back by
// cgroup.ParseCap, and a volume's provisioned limits, with their iops and
// bps on reads and writes together, by capverify.ParseProvisioned), or ""
// when the cap limits nothing.
func CapSpec(c *results.Cap) string {
	var l []string
	add := func(k string, v uint64, size bool) {
		switch {
		case v == 0:
		case size:
			l = append(l, k+"="+units.FormatSize(int64(v)))
		default:
			l = append(l, fmt.Sprintf("%s=%d", k, v))
		}
	}
	add("riops", c.ReadIOPS, false)
	add("wiops", c.WriteIOPS, false)
	add("rbps", c.ReadBPS, true)
	add("wbps", c.WriteBPS, true)
	add("iops", c.IOPS, false)
	add("bps", c.BPS, true)
	return strings.Join(l, ",")
}

// DescribeCap renders a cgroup cap as "riops=10000,wiops=10000 on 254:0
// (cgroup v1)", and a volume's provisioned limits as "provisioned limits
// iops=3000 on 254:0 (the volume's own: no cgroup)".
func DescribeCap(c *results.Cap) string {
	s := CapSpec(c)
	if s == "" {
		s = "none"
	}
	if c.Provisioned {
		return fmt.Sprintf("provisioned limits %s on %s (the volume's own: no cgroup)", s, cmp.Or(c.Device, "its device"))
	}
	return fmt.Sprintf("%s on %s (cgroup v%d)", s, c.Device, c.CgroupVersion)
}

// FormatValue renders a cell: thousands separators, decimals only where
// they carry information.
func FormatValue(m Metric, v float64) string {
	switch {
	case m.Unit() == "IOPS" || v >= 100:
		return units.Thousands(v, 0)
	case v >= 10:
		return units.Thousands(v, 1)
	}
	return units.Thousands(v, 2)
}

// FormatMeasure renders a value as FormatValue does, with the signs of
// its flags around it.
func FormatMeasure(m Metric, v float64, flags Flags) string {
	return flags.Decorate(FormatValue(m, v))
}

// cellText renders a cell; a missing cell is empty, never 0. A fleet cell
// measured by several members adds their range.
func cellText(m Metric, c *Cell) string {
	if c == nil {
		return ""
	}
	s := FormatMeasure(m, c.Value, c.Flags)
	if _, ok := m.Bounded(); ok {
		p := c.Result.Pattern
		s += fmt.Sprintf(" @QD%d", p.QueueDepth)
		if p.Jobs > 1 {
			s += fmt.Sprintf("×%d", p.Jobs)
		}
		if p.Access == results.Sequential {
			s += " " + strings.ToUpper(results.ShortSize(p.BlockSize))
		}
		return s
	}
	if f := c.Result.Fleet; f != nil && len(f.Members) > 1 {
		sp := f.Metrics[string(m)]
		s += " (" + FormatValue(m, sp.Min) + "–" + FormatValue(m, sp.Max) + ")"
	}
	return s
}
