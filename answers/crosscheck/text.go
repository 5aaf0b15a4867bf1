package crosscheck

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest/pattern"
)

// Text writes a comparison as a table, row by row as the pairs end: a
// Sink.
type Text struct {
	w           io.Writer
	width       int  // of the pattern column
	readInPlace bool // the header says so
}

// NewText is a table on w of a comparison of pats, on a target that is
// read in place or not (Options.ReadInPlace).
func NewText(w io.Writer, pats []pattern.Spec, readInPlace bool) *Text {
	t := &Text{w: w, width: len("pattern"), readInPlace: readInPlace}
	for _, ps := range pats {
		t.width = max(t.width, len(ps.Pattern.Name()))
	}
	return t
}

// WriteText writes a whole document at once, as a Text shows it while it
// runs.
func WriteText(w io.Writer, d *Document, readInPlace bool) {
	pats := make([]pattern.Spec, len(d.Patterns))
	for i, r := range d.Patterns {
		pats[i] = pattern.Spec{Spec: r.Spec, Pattern: r.Pattern}
	}
	t := NewText(w, pats, readInPlace)
	t.Start(d)
	for _, r := range d.Patterns {
		for k, p := range r.Pairs {
			t.pair(r.Name, k+1, p)
		}
		if len(r.Pairs) == d.Pairs {
			t.Pattern(&r)
		}
	}
	t.End(d)
}

// Start writes the header: the target, both tools and how they run.
func (t *Text) Start(d *Document) {
	tg := d.Target
	where := []string{tg.Kind}
	if tg.Disk != "" {
		where = append(where, "on "+tg.Disk+" ("+tg.Device+")")
	}
	if tg.Filesystem != "" {
		where = append(where, tg.Filesystem)
	}
	if t.readInPlace {
		where = append(where, "read in place")
	}
	fio := d.Fio
	shape := "--iodepth=QD --numjobs=JOBS"
	if fio.IOEngine == "psync" {
		shape = "--iodepth=1 --numjobs=QD×JOBS"
	}
	shape += " --randrepeat=0 --norandommap"
	switch {
	case len(fio.Tuned) > 0:
		shape += " " + strings.Join(fio.Tuned, " ") + " (fio's peak-IOPS options; --fio-defaults for none)"
	case fio.IOEngine == "io_uring" || fio.IOEngine == "io_uring_cmd":
		shape += " (fio's defaults, --fio-defaults)"
	}
	if fio.IOEngine == "io_uring_cmd" {
		shape = "--cmd_type=nvme " + shape
	}
	if len(fio.Ring) > 0 {
		shape += ", " + strings.Join(fio.Ring, " ") + " (as iomatrix's " + strings.Join(d.Iomatrix.Ring, " ") + ")"
	}
	if len(fio.Extra) > 0 {
		shape += ", then " + strings.Join(fio.Extra, " ")
	}
	fmt.Fprintf(t.w, "target:    %s (%s), %s = %s bytes for both tools\n", tg.Path, strings.Join(where, ", "), units.FormatSize(tg.SizeBytes), units.Thousands(float64(tg.SizeBytes), 0))
	fmt.Fprintf(t.w, "fio:       %s, --ioengine=%s %s\n", fio.Version, fio.IOEngine, shape)
	fmt.Fprintf(t.w, "iomatrix:  %s, --engine %s\n", d.Iomatrix.Version, strings.Join(append([]string{d.Iomatrix.Engine}, d.Iomatrix.Ring...), " "))
	fmt.Fprintf(t.w, "runs:      %s per pattern, fio first in odd pairs and iomatrix first in even ones, each %s after a %s ramp\n",
		units.Count(d.Pairs, "pair"), time.Duration(d.RuntimeNS), time.Duration(d.RampNS))
	fmt.Fprintf(t.w, "cpu-s/Mio: user+sys CPU seconds per million I/Os, from each process's rusage at exit (start-up and ramp included)\n\n")
	t.columns()
}

// Pair writes the row of r's last pair.
func (t *Text) Pair(r *Result) {
	t.pair(r.Name, len(r.Pairs), r.Pairs[len(r.Pairs)-1])
}

// Pattern writes r's median row.
func (t *Text) Pattern(r *Result) {
	m := r.Median
	t.row(r.Name, "median", m.FioIOPS, m.IomatrixIOPS, m.Ratio, m.FioCPUSecondsPerMio, m.IomatrixCPUSecondsPerMio)
	if iv := m.RatioInterval; iv != nil {
		fmt.Fprintf(t.w, "%-*s %6s the median ratio lies in %s with %s confidence (%s, by rank)", t.width, "", "",
			intervalRange(iv), percent(iv.Confidence), units.Count(iv.Pairs, "pair"))
		if iv.High-iv.Low > wideInterval {
			fmt.Fprint(t.w, ": too wide to tell a 5 % difference between the tools; more --pairs narrow it")
		}
		fmt.Fprintln(t.w)
	}
	fmt.Fprintln(t.w)
}

// wideInterval is the width of a ratio's interval past which the table
// says that more pairs would narrow it: a 5 % difference between the
// tools cannot be told within it.
const wideInterval = 0.10

// intervalRange is an interval's ends, "0.951-1.032".
func intervalRange(iv *Interval) string {
	return strconv.FormatFloat(iv.Low, 'f', 3, 64) + "-" + strconv.FormatFloat(iv.High, 'f', 3, 64)
}

// percent is a confidence as the table shows it: "95 %", "93.75 %".
func percent(c float64) string {
	return strconv.FormatFloat(math.Round(c*1e4)/100, 'f', -1, 64) + " %"
}

// End repeats the medians of every pattern in one table, and says when
// the comparison was cut short.
func (t *Text) End(d *Document) {
	if len(d.Patterns) > 1 {
		fmt.Fprintln(t.w, "medians (ratio: the median of the pairs' iomatrix/fio IOPS ratios; interval: where it lies, and how surely)")
		t.line("pattern", "pair", "fio IOPS", "iomatrix IOPS", "ratio", "fio cpu-s/Mio", "iomatrix cpu-s/Mio", "  ratio interval")
		for _, r := range d.Patterns {
			m := r.Median
			iv := "  n/a"
			if m.RatioInterval != nil {
				iv = "  " + intervalRange(m.RatioInterval) + " (" + percent(m.RatioInterval.Confidence) + ")"
			}
			t.row(r.Name, "", m.FioIOPS, m.IomatrixIOPS, m.Ratio, m.FioCPUSecondsPerMio, m.IomatrixCPUSecondsPerMio, iv)
		}
	}
	if !d.Complete {
		fmt.Fprintln(t.w, "interrupted: the pairs above are all that ran")
	}
}

func (t *Text) columns() {
	t.line("pattern", "pair", "fio IOPS", "iomatrix IOPS", "ratio", "fio cpu-s/Mio", "iomatrix cpu-s/Mio")
}

// line writes a row of the table: the seven columns, and what follows
// them in the summary (the ratio's interval).
func (t *Text) line(cells ...string) {
	fmt.Fprintf(t.w, "%-*s %6s %12s %14s %7s %14s %19s%s\n", t.width, cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], strings.Join(cells[7:], ""))
}

func (t *Text) row(name, pair string, fioIOPS, iomIOPS, ratio, fioCPU, iomCPU *float64, more ...string) {
	iops := func(v *float64) string { return orNA(v, func(x float64) string { return units.Thousands(x, 0) }) }
	fixed := func(v *float64) string {
		return orNA(v, func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) })
	}
	t.line(append([]string{name, pair, iops(fioIOPS), iops(iomIOPS), fixed(ratio), fixed(fioCPU), fixed(iomCPU)}, more...)...)
}

func orNA(v *float64, format func(float64) string) string {
	if v == nil {
		return "n/a"
	}
	return format(*v)
}

func (t *Text) pair(name string, k int, p Pair) {
	t.row(name, strconv.Itoa(k), p.Fio.IOPS, p.Iomatrix.IOPS, p.Ratio, p.Fio.CPUSecondsPerMio, p.Iomatrix.CPUSecondsPerMio)
}
