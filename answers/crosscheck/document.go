package crosscheck

import (
	"io"
	"time"

	"github.com/iomatrix/iomatrix/internal/stats"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// CPUAccounting says how crosscheck counts CPU, in its document.
const CPUAccounting = "rusage: user+sys CPU time of each run's process, its threads and the children it waited for, " +
	"as the kernel reports it at exit (start-up and ramp included), per million I/Os of the measured window"

// Document is a comparison (crosscheck's --format json output, described
// in docs/crosscheck.md): what was compared, how, and per pattern every pair of
// runs and their medians. A figure that could not be had (a failed run)
// is null.
type Document struct {
	StartedAt     string             `json:"started_at"`
	FinishedAt    string             `json:"finished_at"`
	Complete      bool               `json:"complete"`
	Host          results.Host       `json:"host"`
	Target        results.TargetInfo `json:"target"`
	Fio           FioInfo            `json:"fio"`
	Iomatrix      IomatrixInfo       `json:"iomatrix"`
	Pairs         int                `json:"pairs"`
	RuntimeNS     int64              `json:"runtime_ns"`
	RampNS        int64              `json:"ramp_ns"`
	CPUAccounting string             `json:"cpu_accounting"`
	Patterns      []Result           `json:"patterns"`
	FailedRuns    int                `json:"failed_runs"`
}

// FioInfo is the fio that ran and the options every run got.
type FioInfo struct {
	Path     string `json:"path"`
	Version  string `json:"version"`
	IOEngine string `json:"ioengine"`
	// Tuned are fio's peak-IOPS options given to every run (empty with
	// FioDefaults or the psync engine); Extra is FioExtra, after them.
	Tuned []string `json:"tuned"`
	Extra []string `json:"extra"`
	// Ring are the options that match iomatrix's ring mode (FioRing).
	Ring []string `json:"ring,omitempty"`
}

// IomatrixInfo is the iomatrix that ran.
type IomatrixInfo struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	Engine  string `json:"engine"`
	// Ring are its ring-mode flags (--poll, --sqpoll, --sqpoll-cpu N).
	Ring []string `json:"ring,omitempty"`
}

// Result is one pattern's comparison.
type Result struct {
	Spec            string          `json:"spec"`
	Name            string          `json:"name"`
	Pattern         results.Pattern `json:"pattern"`
	FioCommand      []string        `json:"fio_command"`
	IomatrixCommand []string        `json:"iomatrix_command"`
	Pairs           []Pair          `json:"pairs"`
	Median          Medians         `json:"median"`
}

// Pair is a fio run and an iomatrix run, one after the other.
type Pair struct {
	// First is the tool that ran first: fio in odd pairs, iomatrix in
	// even ones.
	First    string  `json:"first"`
	Fio      ToolRun `json:"fio"`
	Iomatrix ToolRun `json:"iomatrix"`
	// Ratio is iomatrix's IOPS over fio's.
	Ratio *float64 `json:"ratio"`
}

// ToolRun is one run of one tool.
type ToolRun struct {
	IOPS             *float64 `json:"iops"`
	IOs              uint64   `json:"ios"` // of the measured window
	CPUSeconds       float64  `json:"cpu_seconds"`
	CPUSecondsPerMio *float64 `json:"cpu_s_per_mio"`
	WallSeconds      float64  `json:"wall_seconds"`
	// Raw is the file under Keep that holds the tool's output.
	Raw   string `json:"raw,omitempty"`
	Error string `json:"error,omitempty"`
}

// Medians are the medians of a pattern's pairs; Ratio is the median of
// the pairs' ratios, not the ratio of the median IOPS.
type Medians struct {
	FioIOPS                  *float64 `json:"fio_iops"`
	IomatrixIOPS             *float64 `json:"iomatrix_iops"`
	Ratio                    *float64 `json:"ratio"`
	FioCPUSecondsPerMio      *float64 `json:"fio_cpu_s_per_mio"`
	IomatrixCPUSecondsPerMio *float64 `json:"iomatrix_cpu_s_per_mio"`
	// RatioInterval is where the median ratio lies, as far as the pairs
	// can tell; nil with fewer than two ratios.
	RatioInterval *Interval `json:"ratio_interval"`
}

// Interval is a distribution-free confidence interval for the median
// ratio: two of the pairs' ratios, by rank (stats.Interval), and the
// confidence that the median of the ratios a longer series of pairs
// would give lies between them. The pairs are taken as independent draws
// of the machine's noise, so a device whose speed only drifts in one
// direction is outside what it allows for (the alternating order is
// there for that). 95 % is asked; fewer than six pairs cannot give it,
// and have their lowest and highest ratios at the confidence those have
// (93.75 % for 5 pairs, 75 % for 3).
type Interval struct {
	Low        float64 `json:"low"`
	High       float64 `json:"high"`
	Confidence float64 `json:"confidence"`
	// Pairs are the pairs it is taken from: those with a ratio.
	Pairs int `json:"pairs"`
}

// intervalLevel is the confidence asked of a median ratio's interval.
const intervalLevel = 0.95

func (c *Comparison) newDocument() *Document {
	engine, _, _ := c.fioShape(results.Pattern{})
	return &Document{
		StartedAt: time.Now().UTC().Format(time.RFC3339),
		Host:      results.HostInfo(),
		Target:    results.TargetInfo{Path: c.o.Target, SizeBytes: c.o.Size},
		Fio: FioInfo{Path: c.o.Fio, Version: c.fioVersion, IOEngine: engine,
			Tuned: append([]string{}, c.fioTuned...), Extra: append([]string{}, c.o.FioExtra...), Ring: FioRing(c.o.Ring)},
		Iomatrix:      IomatrixInfo{Path: c.o.Iomatrix, Version: results.Version, Engine: c.o.Engine, Ring: iomatrixRing(c.o.Ring)},
		Pairs:         c.o.Pairs,
		RuntimeNS:     int64(c.o.Runtime),
		RampNS:        int64(c.o.Ramp),
		CPUAccounting: CPUAccounting,
		Patterns:      []Result{},
	}
}

// finish closes the document: complete when every pair ran.
func (d *Document) finish(complete bool) {
	d.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	d.Complete = complete
	d.FailedRuns = 0
	for _, r := range d.Patterns {
		for _, p := range r.Pairs {
			for _, run := range []ToolRun{p.Fio, p.Iomatrix} {
				if run.Error != "" {
					d.FailedRuns++
				}
			}
		}
	}
}

// WriteJSON writes the document as indented JSON.
func (d *Document) WriteJSON(w io.Writer) error { return report.WriteJSON(w, d) }

// measured records the figures of a run that ended well: its IOPS and
// I/Os, and the CPU it took per million of them.
func (r *ToolRun) measured(total results.Total, cpu time.Duration) {
	r.IOPS, r.IOs = ptr(total.IOPS), total.IOs
	if total.IOs > 0 {
		r.CPUSecondsPerMio = ptr(cpu.Seconds() / (float64(total.IOs) / 1e6))
	}
}

// ratio is iomatrix's IOPS over fio's; nil unless both runs have one.
func ratio(fio, iomatrix ToolRun) *float64 {
	if fio.IOPS == nil || iomatrix.IOPS == nil || *fio.IOPS <= 0 {
		return nil
	}
	return ptr(*iomatrix.IOPS / *fio.IOPS)
}

func medians(pairs []Pair) Medians {
	of := func(get func(Pair) *float64) *float64 {
		var v []float64
		for _, p := range pairs {
			if x := get(p); x != nil {
				v = append(v, *x)
			}
		}
		return median(v)
	}
	return Medians{
		FioIOPS:                  of(func(p Pair) *float64 { return p.Fio.IOPS }),
		IomatrixIOPS:             of(func(p Pair) *float64 { return p.Iomatrix.IOPS }),
		Ratio:                    of(func(p Pair) *float64 { return p.Ratio }),
		FioCPUSecondsPerMio:      of(func(p Pair) *float64 { return p.Fio.CPUSecondsPerMio }),
		IomatrixCPUSecondsPerMio: of(func(p Pair) *float64 { return p.Iomatrix.CPUSecondsPerMio }),
		RatioInterval:            ratioInterval(pairs),
	}
}

// ratioInterval is the interval of the median of the pairs' ratios.
func ratioInterval(pairs []Pair) *Interval {
	var v []float64
	for _, p := range pairs {
		if p.Ratio != nil {
			v = append(v, *p.Ratio)
		}
	}
	lo, hi, conf, ok := stats.Interval(v, intervalLevel)
	if !ok {
		return nil
	}
	return &Interval{Low: lo, High: hi, Confidence: conf, Pairs: len(v)}
}

// median of v; nil when v is empty. An even count takes the mean of the
// middle two.
func median(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	m := stats.Median(v)
	return &m
}

func ptr(v float64) *float64 { return &v }
