package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/results"
)

// cpuAccounting says how crosscheck counts CPU, in its output.
const cpuAccounting = "rusage: user+sys CPU time of each run's process, its threads and the children it waited for, " +
	"as the kernel reports it at exit (start-up and ramp included), per million I/Os of the measured window"

// crossDocument is crosscheck's --format json output (described in
// docs/crosscheck.md): what was compared, how, and per pattern every pair of runs and
// their medians. A figure that could not be had (a failed run) is null.
type crossDocument struct {
	StartedAt     string             `json:"started_at"`
	FinishedAt    string             `json:"finished_at"`
	Complete      bool               `json:"complete"`
	Host          results.Host       `json:"host"`
	Target        results.TargetInfo `json:"target"`
	Fio           crossFio           `json:"fio"`
	Iomatrix      crossIomatrix      `json:"iomatrix"`
	Pairs         int                `json:"pairs"`
	RuntimeNS     int64              `json:"runtime_ns"`
	RampNS        int64              `json:"ramp_ns"`
	CPUAccounting string             `json:"cpu_accounting"`
	Patterns      []crossResult      `json:"patterns"`
	FailedRuns    int                `json:"failed_runs"`
}

type crossFio struct {
	Path     string `json:"path"`
	Version  string `json:"version"`
	IOEngine string `json:"ioengine"`
	// Tuned are fio's peak-IOPS options given to every run (empty with
	// --fio-defaults or the psync engine); Extra is --fio-extra, after them.
	Tuned []string `json:"tuned"`
	Extra []string `json:"extra"`
}

type crossIomatrix struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	Engine  string `json:"engine"`
}

// crossResult is one pattern's comparison.
type crossResult struct {
	Spec            string          `json:"spec"`
	Name            string          `json:"name"`
	Pattern         results.Pattern `json:"pattern"`
	FioCommand      []string        `json:"fio_command"`
	IomatrixCommand []string        `json:"iomatrix_command"`
	Pairs           []crossPair     `json:"pairs"`
	Median          crossMedian     `json:"median"`
}

// crossPair is a fio run and an iomatrix run, one after the other.
type crossPair struct {
	// First is the tool that ran first: fio in odd pairs, iomatrix in
	// even ones.
	First    string   `json:"first"`
	Fio      crossRun `json:"fio"`
	Iomatrix crossRun `json:"iomatrix"`
	// Ratio is iomatrix's IOPS over fio's.
	Ratio *float64 `json:"ratio"`
}

// crossRun is one run of one tool.
type crossRun struct {
	IOPS             *float64 `json:"iops"`
	IOs              uint64   `json:"ios"` // of the measured window
	CPUSeconds       float64  `json:"cpu_seconds"`
	CPUSecondsPerMio *float64 `json:"cpu_s_per_mio"`
	WallSeconds      float64  `json:"wall_seconds"`
	// Raw is the file under --keep that holds the tool's output.
	Raw   string `json:"raw,omitempty"`
	Error string `json:"error,omitempty"`
}

// crossMedian are the medians of a pattern's pairs; Ratio is the median
// of the pairs' ratios, not the ratio of the median IOPS.
type crossMedian struct {
	FioIOPS                  *float64 `json:"fio_iops"`
	IomatrixIOPS             *float64 `json:"iomatrix_iops"`
	Ratio                    *float64 `json:"ratio"`
	FioCPUSecondsPerMio      *float64 `json:"fio_cpu_s_per_mio"`
	IomatrixCPUSecondsPerMio *float64 `json:"iomatrix_cpu_s_per_mio"`
}

func (c *crosscheck) newDocument(pairs int) *crossDocument {
	engine, _, _ := c.fioShape(results.Pattern{})
	return &crossDocument{
		StartedAt:     time.Now().UTC().Format(time.RFC3339),
		Host:          results.HostInfo(),
		Target:        results.TargetInfo{Path: c.target, SizeBytes: c.size},
		Fio:           crossFio{Path: c.fio, Version: c.fioVersion, IOEngine: engine, Tuned: append([]string{}, c.fioTuned...), Extra: append([]string{}, c.fioExtra...)},
		Iomatrix:      crossIomatrix{Path: c.exe, Version: results.Version, Engine: c.engine},
		Pairs:         pairs,
		RuntimeNS:     int64(c.runtime),
		RampNS:        int64(c.ramp),
		CPUAccounting: cpuAccounting,
		Patterns:      []crossResult{},
	}
}

// finish closes the document: complete when every pair ran.
func (c *crosscheck) finish(complete bool) {
	d := c.doc
	d.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	d.Complete = complete
	d.FailedRuns = 0
	for _, r := range d.Patterns {
		for _, p := range r.Pairs {
			for _, run := range []crossRun{p.Fio, p.Iomatrix} {
				if run.Error != "" {
					d.FailedRuns++
				}
			}
		}
	}
}

func (c *crosscheck) keepDocument() error {
	data, err := json.MarshalIndent(c.doc, "", "  ")
	if err != nil {
		return err
	}
	return results.WriteBytesAtomic(filepath.Join(c.keep, "crosscheck.json"), append(data, '\n'))
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func medians(pairs []crossPair) crossMedian {
	of := func(get func(crossPair) *float64) *float64 {
		var v []float64
		for _, p := range pairs {
			if x := get(p); x != nil {
				v = append(v, *x)
			}
		}
		return median(v)
	}
	return crossMedian{
		FioIOPS:                  of(func(p crossPair) *float64 { return p.Fio.IOPS }),
		IomatrixIOPS:             of(func(p crossPair) *float64 { return p.Iomatrix.IOPS }),
		Ratio:                    of(func(p crossPair) *float64 { return p.Ratio }),
		FioCPUSecondsPerMio:      of(func(p crossPair) *float64 { return p.Fio.CPUSecondsPerMio }),
		IomatrixCPUSecondsPerMio: of(func(p crossPair) *float64 { return p.Iomatrix.CPUSecondsPerMio }),
	}
}

// median of v; nil when v is empty. An even count takes the mean of the
// middle two.
func median(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return &m
}

// crossText prints the comparison as a table, row by row as the runs end.
type crossText struct {
	w     io.Writer
	width int // of the pattern column
}

func newCrossText(w io.Writer, pats []crossPattern) *crossText {
	t := &crossText{w: w, width: len("pattern")}
	for _, cp := range pats {
		t.width = max(t.width, len(cp.Pattern.Name()))
	}
	return t
}

func (t *crossText) header(d *crossDocument, action string) {
	tg := d.Target
	where := []string{tg.Kind}
	if tg.Disk != "" {
		where = append(where, "on "+tg.Disk+" ("+tg.Device+")")
	}
	if tg.Filesystem != "" {
		where = append(where, tg.Filesystem)
	}
	if action == iotest.ActionReadOnly {
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
	case fio.IOEngine == "io_uring":
		shape += " (fio's defaults, --fio-defaults)"
	}
	if len(fio.Extra) > 0 {
		shape += ", then " + strings.Join(fio.Extra, " ")
	}
	fmt.Fprintf(t.w, "target:    %s (%s), %s = %s bytes for both tools\n", tg.Path, strings.Join(where, ", "), units.FormatSize(tg.SizeBytes), units.Thousands(float64(tg.SizeBytes), 0))
	fmt.Fprintf(t.w, "fio:       %s, --ioengine=%s %s\n", fio.Version, fio.IOEngine, shape)
	fmt.Fprintf(t.w, "iomatrix:  %s, --engine %s\n", d.Iomatrix.Version, d.Iomatrix.Engine)
	fmt.Fprintf(t.w, "runs:      %s per pattern, fio first in odd pairs and iomatrix first in even ones, each %s after a %s ramp\n",
		units.Count(d.Pairs, "pair"), time.Duration(d.RuntimeNS), time.Duration(d.RampNS))
	fmt.Fprintf(t.w, "cpu-s/Mio: user+sys CPU seconds per million I/Os, from each process's rusage at exit (start-up and ramp included)\n\n")
	t.columns()
}

func (t *crossText) columns() {
	t.line("pattern", "pair", "fio IOPS", "iomatrix IOPS", "ratio", "fio cpu-s/Mio", "iomatrix cpu-s/Mio")
}

func (t *crossText) line(cells ...string) {
	fmt.Fprintf(t.w, "%-*s %6s %12s %14s %7s %14s %19s\n", t.width, cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6])
}

func (t *crossText) row(name, pair string, fioIOPS, iomIOPS, ratio, fioCPU, iomCPU *float64) {
	iops := func(v *float64) string { return orNA(v, func(x float64) string { return units.Thousands(x, 0) }) }
	fixed := func(v *float64) string {
		return orNA(v, func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) })
	}
	t.line(name, pair, iops(fioIOPS), iops(iomIOPS), fixed(ratio), fixed(fioCPU), fixed(iomCPU))
}

func orNA(v *float64, format func(float64) string) string {
	if v == nil {
		return "n/a"
	}
	return format(*v)
}

func (t *crossText) pair(name string, k int, p crossPair) {
	t.row(name, strconv.Itoa(k), p.Fio.IOPS, p.Iomatrix.IOPS, p.Ratio, p.Fio.CPUSecondsPerMio, p.Iomatrix.CPUSecondsPerMio)
}

func (t *crossText) median(name string, m crossMedian) {
	t.row(name, "median", m.FioIOPS, m.IomatrixIOPS, m.Ratio, m.FioCPUSecondsPerMio, m.IomatrixCPUSecondsPerMio)
	fmt.Fprintln(t.w)
}

// summary repeats the medians of every pattern in one table.
func (t *crossText) summary(d *crossDocument) {
	if len(d.Patterns) > 1 {
		fmt.Fprintln(t.w, "medians (ratio: the median of the pairs' iomatrix/fio IOPS ratios)")
		t.columns()
		for _, r := range d.Patterns {
			m := r.Median
			t.row(r.Name, "", m.FioIOPS, m.IomatrixIOPS, m.Ratio, m.FioCPUSecondsPerMio, m.IomatrixCPUSecondsPerMio)
		}
	}
	if !d.Complete {
		fmt.Fprintln(t.w, "interrupted: the pairs above are all that ran")
	}
}
