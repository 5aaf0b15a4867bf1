package fit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// Answer is a verdict in the form `fit --format json` prints; its field
// names are read by scripts: add fields, never rename.
type Answer struct {
	Fits        bool            `json:"fits"`
	Need        AnswerNeed      `json:"need"`
	Member      string          `json:"member,omitempty"`
	Cell        string          `json:"cell"`
	Pattern     results.Pattern `json:"pattern"`
	IOPS        float64         `json:"iops"`
	HeadroomPct float64         `json:"headroom_pct"`
	Latency     []AnswerLatency `json:"latency,omitempty"`
	Why         string          `json:"why,omitempty"`
	Notes       []string        `json:"notes,omitempty"`
	Systems     []AnswerSystem  `json:"systems,omitempty"`
	// Rehearsal is set by `fit --rehearse`: the systems run at once, and
	// the verdict on each. Fits above stays the lookup's; the rehearsal's
	// is its own.
	Rehearsal *results.Rehearsal `json:"rehearsal,omitempty"`
}

// AnswerNeed is the need judged.
type AnswerNeed struct {
	ReadIOPS    float64  `json:"read_iops"`
	WriteIOPS   float64  `json:"write_iops"`
	BlockSize   int64    `json:"block_size"`
	Concurrency int      `json:"concurrency,omitempty"`
	Bounds      []string `json:"bounds,omitempty"`
}

// AnswerLatency is one bound against the cell's figure.
type AnswerLatency struct {
	Bound string  `json:"bound"`
	US    float64 `json:"us"`
	Holds bool    `json:"holds"`
}

// AnswerSystem is one system of a workload and, when the sum fits, the
// cap that gives it its share, in three spellings.
type AnswerSystem struct {
	Name      string   `json:"name"`
	ReadIOPS  float64  `json:"read_iops"`
	WriteIOPS float64  `json:"write_iops"`
	Cap       string   `json:"cap,omitempty"`
	IOMax     string   `json:"io_max,omitempty"`
	Blkio     []string `json:"blkio_throttle,omitempty"`
}

// NewAnswer puts a verdict on doc in its written form. With a workload
// (nil for a single need), each system is listed, and when the sum fits,
// with its share as caps on the device doc measured.
func NewAnswer(doc *results.Document, v Verdict, work *Workload) Answer {
	a := Answer{Fits: v.Fits, Member: v.Member, Cell: v.Cell.Name, Pattern: v.Cell.Pattern, IOPS: v.IOPS,
		HeadroomPct: 100 * v.Headroom, Why: v.Why, Notes: v.Notes,
		Need: AnswerNeed{ReadIOPS: v.Need.ReadIOPS, WriteIOPS: v.Need.WriteIOPS, BlockSize: v.Need.BlockSize, Concurrency: v.Need.Concurrency}}
	for _, b := range v.Need.Bounds {
		a.Need.Bounds = append(a.Need.Bounds, b.String())
	}
	for _, c := range v.Latency {
		a.Latency = append(a.Latency, AnswerLatency{Bound: c.Bound.String(), US: c.Value, Holds: c.Holds})
	}
	if work == nil {
		return a
	}
	dev := deviceOf(doc)
	shares := work.Shares(v)
	for i, s := range work.Systems {
		sys := AnswerSystem{Name: s.Name, ReadIOPS: s.ReadIOPS, WriteIOPS: s.WriteIOPS}
		if v.Fits {
			l := cgroup.Limit{Device: dev, ReadIOPS: shares[i].ReadIOPS, WriteIOPS: shares[i].WriteIOPS}
			sys.Cap = fmt.Sprintf("riops=%d,wiops=%d", l.ReadIOPS, l.WriteIOPS)
			sys.IOMax = l.String()
			sys.Blkio = l.V1Lines()
		}
		a.Systems = append(a.Systems, sys)
	}
	return a
}

// deviceOf is the measured device, for the cap lines: a fleet's first
// member's.
func deviceOf(doc *results.Document) sysfs.DevNum {
	dev, _ := sysfs.ParseDevNum(doc.Target.Device)
	if len(doc.Members) > 0 {
		dev, _ = sysfs.ParseDevNum(doc.Members[0].Target.Device)
	}
	return dev
}

// WriteJSON prints the answer as one indented JSON document.
func (a Answer) WriteJSON(w io.Writer) error { return report.WriteJSON(w, a) }

// Failure is nil when the answer fits, and otherwise why not: by the
// rehearsal when there was one (its first system that does not fit),
// by the lookup when not.
func (a Answer) Failure() error {
	if a.Rehearsal == nil {
		if !a.Fits {
			return fmt.Errorf("does not fit: %s", a.Why)
		}
		return nil
	}
	if a.Rehearsal.Inconclusive {
		for _, sys := range a.Rehearsal.Systems {
			if !sys.Fits {
				return fmt.Errorf("%w: %s: %s", ErrInconclusive, sys.Name, sys.Why)
			}
		}
	}
	for _, sys := range a.Rehearsal.Systems {
		if !sys.Fits && !sys.Inconclusive {
			return fmt.Errorf("does not fit, by the rehearsal: %s: %s", sys.Name, sys.Why)
		}
	}
	return nil
}

// ErrInconclusive is Failure's error for a rehearsal that neither fits
// nor fails: a system did not fit while its run waited for a CPU long
// enough to explain it, and no other system failed.
var ErrInconclusive = errors.New("inconclusive, by the rehearsal")

// Write renders the answer as format asks: "json" is the answer as one
// document (WriteJSON); "text" is WriteText, then the rehearsal's
// document when there is one (report.WriteRehearsal).
func Write(w io.Writer, format string, v Verdict, a Answer, rehearsal *results.Document) error {
	if format == "json" {
		return a.WriteJSON(w)
	}
	if err := WriteText(w, v, a); err != nil || rehearsal == nil {
		return err
	}
	fmt.Fprintln(w)
	return report.WriteRehearsal(w, rehearsal)
}

// WriteText renders the verdict for a reader: the verdict line with the
// need, the cell it rests on, the headroom, why it does not fit, the
// notes, and the systems with their caps.
func WriteText(w io.Writer, v Verdict, a Answer) error {
	bw := bufio.NewWriter(w)
	need := v.Need
	verdict := "FITS"
	if !v.Fits {
		verdict = "DOES NOT FIT"
	}
	var at []string
	at = append(at, results.ShortSize(need.BlockSize))
	if need.Concurrency > 0 {
		at = append(at, fmt.Sprintf("%d in flight", need.Concurrency))
	}
	for _, b := range need.Bounds {
		at = append(at, b.String())
	}
	fmt.Fprintf(bw, "%s: %s reads + %s writes = %s IOPS (%.0f %% reads) at %s\n", verdict, units.Thousands(need.ReadIOPS, 0),
		units.Thousands(need.WriteIOPS, 0), units.Thousands(need.Total(), 0), need.ReadPct(), strings.Join(at, ", "))
	p := v.Cell.Pattern
	member := ""
	if v.Member != "" {
		member = " of member " + v.Member + " (the fleet's worst)"
	}
	fmt.Fprintf(bw, "cell: %s%s (%s, %d %% reads, QD%d×%d): %s IOPS", v.Cell.Name, member, results.ShortSize(p.BlockSize), p.ReadPct,
		p.QueueDepth, max(p.Jobs, 1), units.Thousands(v.IOPS, 0))
	for _, c := range v.Latency {
		fmt.Fprintf(bw, ", %s %s µs", strings.TrimPrefix(string(c.Bound.Metric), "lat-"), units.Thousands(c.Value, 0))
	}
	fmt.Fprintf(bw, "\nheadroom: %+.1f %%\n", 100*v.Headroom)
	if !v.Fits {
		fmt.Fprintf(bw, "why: %s\n", v.Why)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(bw, "note: %s\n", n)
	}
	if len(a.Systems) > 0 {
		fmt.Fprintf(bw, "\nsystems:\n")
	}
	for _, s := range a.Systems {
		fmt.Fprintf(bw, "  %s: %s reads/s, %s writes/s", s.Name, units.Thousands(s.ReadIOPS, 0), units.Thousands(s.WriteIOPS, 0))
		if s.Cap == "" {
			fmt.Fprintln(bw)
			continue
		}
		fmt.Fprintf(bw, "\n    --cap %s\n    io.max: %s\n", s.Cap, s.IOMax)
		for _, l := range s.Blkio {
			fmt.Fprintf(bw, "    %s\n", l)
		}
	}
	return bw.Flush()
}
