package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// A Request asks Render for a document file in a format.
type Request struct {
	Path string
	// Format is a format's name; when it is not Given and Out is, the
	// format of Out's extension.
	Format string
	// Metric, Wide and Outlier shape a results file's matrices (Options);
	// an observation has none, and refuses them when Given.
	Metric  string
	Wide    bool
	Outlier float64
	// Out is the file to write, atomically; "": the writer Render is
	// handed, which is a Terminal or not.
	Out      string
	Terminal bool
	// Given says whether an option (format, metric, wide, outlier) was
	// asked for rather than left at its default; nil: none was.
	Given func(option string) bool
}

func (r Request) given(option string) bool { return r.Given != nil && r.Given(option) }

// FormatError is a format that Render cannot write: one its Out's
// extension does not tell among Formats (those of the document's kind,
// an Observation's or a results file's), or a Binary format bound for a
// terminal.
type FormatError struct {
	Out         string
	Formats     []string
	Observation bool
	Binary      string
}

func (e *FormatError) Error() string {
	if e.Binary != "" {
		return e.Binary + " is binary: not for a terminal"
	}
	return fmt.Sprintf("%s: cannot tell the format from the extension (%s)", e.Out, strings.Join(e.Formats, ", "))
}

// Render renders the document at r.Path, a results file or an
// observation, in r's format, whole, then writes it to w or atomically to
// r.Out: a failed rendering leaves neither half a page nor a broken file.
// Everything is checked before the document is read; bad input is a
// fault.InputError naming its option, or a *FormatError.
func Render(w io.Writer, r Request) error {
	if data := observationBytes(r.Path); data != nil {
		return r.observation(w, data)
	}
	metric, err := ParseMetric(r.Metric)
	if err != nil {
		return fault.Input("metric", "%w", err)
	}
	format, err := r.format(Formats(), false)
	if err != nil {
		return err
	}
	write, err := Lookup(format)
	if err != nil {
		return fault.Input("format", "%w", err)
	}
	if format == "json" && r.given("metric") {
		// The metric asked for: its matrices, not the whole document.
		write = writeMatrixJSON
	}
	if err := CheckMetric(format, metric); err != nil {
		return err
	}
	if r.Out == "" && Binary(format) && r.Terminal {
		return fault.AsInput(&FormatError{Binary: format})
	}
	if err := checkOut(r.Out); err != nil {
		return err
	}
	doc, err := results.ReadResultsFile(r.Path)
	if err != nil {
		return err
	}
	return r.emit(w, func(b io.Writer) error {
		return write(b, doc, Options{Metric: metric, Wide: r.Wide, Outlier: r.Outlier})
	})
}

// observation renders an observation (iomatrix observe's document) in
// one of ObservationFormats.
func (r Request) observation(w io.Writer, data []byte) error {
	for _, name := range []string{"metric", "wide", "outlier"} {
		if r.given(name) {
			return fault.Input(name, "%s is an observation, which has no matrix to pick cells or members from", r.Path)
		}
	}
	format, err := r.format(ObservationFormats, true)
	if err != nil {
		return err
	}
	write, err := LookupObservation(format)
	if err != nil {
		return fault.AsInput(fault.NewMention(func(n fault.Namer) string {
			return n("format") + " " + format + ": an observation renders as " + strings.Join(ObservationFormats, ", ")
		}))
	}
	if err := checkOut(r.Out); err != nil {
		return err
	}
	obs, err := results.ReadObservation(bytes.NewReader(data))
	if err != nil {
		return fault.AsInput(fmt.Errorf("%s: %w", r.Path, err))
	}
	return r.emit(w, func(b io.Writer) error { return write(b, obs) })
}

// format is the format asked for, or, for Out without one, the one of
// Out's extension among formats.
func (r Request) format(formats []string, observation bool) (string, error) {
	if r.Out == "" || r.given("format") {
		return r.Format, nil
	}
	f, ok := FormatForPath(r.Out)
	if !ok || !slices.Contains(formats, f) {
		return "", fault.AsInput(&FormatError{Out: r.Out, Formats: formats, Observation: observation})
	}
	return f, nil
}

func (r Request) emit(w io.Writer, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return fmt.Errorf("render %s: %w", r.Path, err)
	}
	return results.WriteOut(w, r.Out, buf.Bytes())
}

// observationBytes is the content of path when it is an observation,
// nil otherwise: a file that cannot be read or is no iomatrix document is
// left to the results reader, which says what is wrong with it.
func observationBytes(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if kind, err := results.DocumentKind(data); err != nil || kind != results.KindObservation {
		return nil
	}
	return data
}

// checkOut refuses an output file that could not be saved (out).
func checkOut(out string) error {
	if err := results.CheckSavable(out); err != nil {
		return fault.Input("out", "%w", err)
	}
	return nil
}

// cellMetric parses the metric of the commands that compare cell by cell
// (compare, merge, k8s): a per-row bound metric is report's alone.
func cellMetric(s string) (Metric, error) {
	m, err := ParseMetric(s)
	if err != nil {
		return "", fault.Input("metric", "%w", err)
	}
	if _, bounded := m.Bounded(); bounded {
		return "", fault.Input("metric", "%s picks one cell per row, which only iomatrix report shows; compare cells with iops or lat-p99", s)
	}
	return m, nil
}

// CompareFiles compares the results files base and cur cell by cell on
// metric (Compare, each run named by its file's base name) and writes the
// comparison to w in format, one of ComparisonFormats. CSV has no header
// to say how the runs differ: notice is told instead. A comparison of
// nothing is the error (Comparison.Err).
func CompareFiles(w io.Writer, base, cur, metric, format string, notice func(string)) error {
	m, err := cellMetric(metric)
	if err != nil {
		return err
	}
	b, err := results.ReadResultsFile(base)
	if err != nil {
		return err
	}
	n, err := results.ReadResultsFile(cur)
	if err != nil {
		return err
	}
	c := Compare(b, n, filepath.Base(base), filepath.Base(cur), m)
	if err := WriteComparison(w, c, format); err != nil {
		return err
	}
	if note := c.DifferencesNote(); note != "" && format == "csv" {
		// A person still sees them; a script reading the output gets
		// cells only.
		notice("note: " + note)
	}
	return c.Err()
}

// FleetFormats are the formats of a fleet's report.
var FleetFormats = []string{"text", "markdown", "csv", "json", "html"}

// FleetReport is the report of a fleet (or of one results document) that
// merge and k8s write: its format (one of FleetFormats), its metric (a
// cell's) and how far from the median a member is an outlier.
type FleetReport struct {
	Format  string
	Metric  string
	Outlier float64 // a fraction
}

// Check refuses the report's metric or format before any work.
func (r FleetReport) Check() error {
	_, _, err := r.writer()
	return err
}

// Write renders doc whole, then writes it to w.
func (r FleetReport) Write(w io.Writer, doc *results.Document) error {
	write, o, err := r.writer()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := write(&buf, doc, o); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func (r FleetReport) writer() (WriteFunc, Options, error) {
	m, err := cellMetric(r.Metric)
	if err != nil {
		return nil, Options{}, err
	}
	write, err := Lookup(r.Format)
	if err != nil {
		return nil, Options{}, fault.Input("format", "%w", err)
	}
	return write, Options{Metric: m, Outlier: r.Outlier}, nil
}

// Merging is a fleet to merge from results files: iomatrix merge.
type Merging struct {
	Files []string
	// Labels are the members' labels, one per file in order; none: the
	// automatic ones.
	Labels []string
	// Out is where the fleet document is saved; "": nowhere.
	Out    string
	Report FleetReport
	Notice func(string)
}

// MergeFiles merges the files into a fleet document (Merge), saves it to
// m.Out, telling m.Notice, and writes its report to w. Everything is
// checked before a file is read; files that cannot form a fleet are bad
// input too.
func MergeFiles(w io.Writer, m Merging) error {
	if err := m.Report.Check(); err != nil {
		return err
	}
	if len(m.Labels) > 0 && len(m.Labels) != len(m.Files) {
		return fault.Input("label", "%d given for %d files; give one per file, in order, or none", len(m.Labels), len(m.Files))
	}
	if err := checkOut(m.Out); err != nil {
		return err
	}
	in := make([]MemberInput, len(m.Files))
	for i, name := range m.Files {
		d, err := results.ReadResultsFile(name)
		if err != nil {
			return err
		}
		in[i] = MemberInput{Doc: d, Source: name}
		if len(m.Labels) > 0 {
			in[i].Label = m.Labels[i]
		}
	}
	fleet, err := Merge(in)
	if errors.Is(err, ErrMerge) {
		return fault.AsInput(err)
	}
	if err != nil {
		return err
	}
	if m.Out != "" {
		if err := results.WriteFileAtomic(m.Out, fleet); err != nil {
			return err
		}
		m.Notice(fmt.Sprintf("fleet of %s, %s, written to %s", units.Count(len(fleet.Members), "member"), units.Count(len(fleet.Results), "cell"), m.Out))
	}
	return m.Report.Write(w, fleet)
}
