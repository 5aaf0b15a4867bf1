package fit

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// Shape is what a version 2 workload file says of a system beyond its
// rates: how its I/O is made, as it was observed. fit's verdict does not
// use it (a version 1 file and a version 2 file of the same rates are
// judged alike); a rehearsal replays it.
type Shape struct {
	// ReadShare is reads over all I/Os, 0 to 1, in the hour the size mix
	// comes from (the rates' statistic may take reads and writes from
	// different minutes; this is one moment's mix).
	ReadShare float64
	// SizeMix is the system's I/Os by size, in the block-size mix syntax
	// (pattern.ParseBSSplit, canonical); "" when one size is all.
	SizeMix string
	// DurableWrites is the writes per second a commit waits on (the
	// database's flushes), at the rates' statistic; Known is false when
	// no database was read.
	DurableWrites float64
	DurableKnown  bool
	// BurstWrites of the data writes a second come in bursts of
	// BurstSize at one moment: a background writer's batches (InnoDB's
	// page cleaner, per doublewrite batch); 0 when not known.
	BurstWrites float64
	BurstSize   int
	// Timeline, when set, is where the system's observed timeline is.
	Timeline *TimelineRef
}

// TimelineRef names a system's series in an observation document.
type TimelineRef struct {
	// Observation is the document's path: a relative one is relative to
	// the directory of the workload file that holds it.
	Observation string
	// System is the system's name in the observation, and Series "io"
	// (its cgroup's counters) or "database" (its database's).
	System, Series string
}

// The series a timeline may name.
const (
	SeriesIO       = "io"
	SeriesDatabase = "database"
)

// Resolve is the observation's path as seen from the working directory,
// for a reference read from the workload file at workloadPath.
func (r TimelineRef) Resolve(workloadPath string) string {
	if filepath.IsAbs(r.Observation) {
		return r.Observation
	}
	return filepath.Join(filepath.Dir(workloadPath), r.Observation)
}

// Find finds the series the reference names in an observation.
func (r TimelineRef) Find(o *results.Observation) (*results.ObservedSeries, error) {
	for _, s := range o.Systems {
		if s.Name != r.System {
			continue
		}
		ser := s.IO
		if r.Series == SeriesDatabase {
			ser = s.Database
		}
		if ser == nil {
			return nil, fmt.Errorf("system %s has no %s series in the observation", r.System, r.Series)
		}
		return ser, nil
	}
	return nil, fmt.Errorf("no system %s in the observation", r.System)
}

// workloadShape is a system's version 2 fields as the file holds them.
type workloadShape struct {
	ReadShare     *float64          `yaml:"read_share"`
	BSSplit       string            `yaml:"bssplit"`
	DurableWrites *optionalRate     `yaml:"durable_writes"`
	WriteBursts   *burstsField      `yaml:"write_bursts"`
	Timeline      *workloadTimeline `yaml:"timeline"`
}

// burstsField is a system's write_bursts: its data writes a second that
// come in bursts, and the writes of one burst.
type burstsField struct {
	Size   *float64 `yaml:"size"`
	Writes *float64 `yaml:"writes"`
}

type workloadTimeline struct {
	Observation string `yaml:"observation"`
	System      string `yaml:"system"`
	Series      string `yaml:"series"`
}

// unknown is how a version 2 file says a figure was not observed.
const unknown = "unknown"

// optionalRate is a rate, or "unknown".
type optionalRate struct {
	v     float64
	known bool
}

func (r *optionalRate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: durable_writes: a rate per second or %q", n.Line, unknown)
	}
	if n.Value == unknown && n.Tag == "!!str" {
		*r = optionalRate{}
		return nil
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || n.Tag == "!!str" {
		return fmt.Errorf("line %d: durable_writes: %q is neither a rate per second nor %q", n.Line, n.Value, unknown)
	}
	*r = optionalRate{v: v, known: true}
	return nil
}

// present tells whether any version 2 field was given.
func (s workloadShape) present() bool {
	return s.ReadShare != nil || s.BSSplit != "" || s.DurableWrites != nil || s.WriteBursts != nil || s.Timeline != nil
}

// field names the first version 2 field given, for the message that
// refuses it in a version 1 file.
func (s workloadShape) field() string {
	switch {
	case s.ReadShare != nil:
		return "read_share"
	case s.BSSplit != "":
		return "bssplit"
	case s.DurableWrites != nil:
		return "durable_writes"
	case s.WriteBursts != nil:
		return "write_bursts"
	}
	return "timeline"
}

// shape checks a system's version 2 fields against its need: a read
// share of 0 to 1 that does no I/O the rates do not (no reads when reads
// is 0, no writes when writes is 0), a size mix of the sizes the engine
// issues, a rate of durable writes that is a rate and no more than the
// writes, write bursts of two writes or more among the data writes, and
// a whole timeline reference.
func (s workloadShape) shape(n Need) (*Shape, error) {
	sh := &Shape{ReadShare: n.ReadIOPS / max(n.Total(), 1)}
	if s.ReadShare != nil {
		v := *s.ReadShare
		str := strconv.FormatFloat(v, 'g', -1, 64)
		switch {
		case math.IsNaN(v) || v < 0 || v > 1:
			return nil, &NeedError{Field: "read_share", Value: str, Why: "not a share from 0 to 1"}
		case n.ReadIOPS == 0 && v > 0:
			return nil, &NeedError{Field: "read_share", Value: str, Why: "reads is 0"}
		case n.WriteIOPS == 0 && v < 1 && n.ReadIOPS > 0:
			return nil, &NeedError{Field: "read_share", Value: str, Why: "writes is 0, so every I/O is a read (1)"}
		}
		sh.ReadShare = v
	}
	if s.BSSplit != "" {
		b, err := pattern.ParseBSSplit(s.BSSplit)
		if err != nil {
			return nil, &NeedError{Field: "bssplit", Value: s.BSSplit, Why: strings.TrimPrefix(strings.TrimPrefix(err.Error(), pattern.ErrBadMix.Error()), ": ")}
		}
		if len(b.Sizes()) > pattern.MaxSplitSizes {
			return nil, &NeedError{Field: "bssplit", Value: s.BSSplit, Why: fmt.Sprintf("more than %d sizes", pattern.MaxSplitSizes)}
		}
		for _, size := range b.Sizes() {
			if size%512 != 0 {
				return nil, &NeedError{Field: "bssplit", Value: s.BSSplit, Why: "a size that is not a multiple of 512 bytes"}
			}
		}
		sh.SizeMix, _ = b.Canonical(int(math.Round(100 * sh.ReadShare)))
	}
	if r := s.DurableWrites; r != nil && r.known {
		if !isIOPS(r.v) || r.v > n.WriteIOPS {
			return nil, &NeedError{Field: "durable_writes", Value: strconv.FormatFloat(r.v, 'g', -1, 64), Why: "not a rate from 0 to the system's writes"}
		}
		sh.DurableWrites, sh.DurableKnown = r.v, true
	}
	if b := s.WriteBursts; b != nil {
		if b.Size == nil || b.Writes == nil {
			return nil, &NeedError{Field: "write_bursts", Why: "needs size (the writes of one burst) and writes (the writes a second in bursts)"}
		}
		size, writes := *b.Size, *b.Writes
		// The data writes: the writes less the durable writes' flushes.
		data := n.WriteIOPS
		if sh.DurableKnown && sh.DurableWrites < n.WriteIOPS {
			data -= sh.DurableWrites
		}
		if size != math.Trunc(size) || size < 2 || size > pattern.MaxBurst {
			return nil, &NeedError{Field: "write_bursts", Value: strconv.FormatFloat(size, 'g', -1, 64),
				Why: fmt.Sprintf("size: not a count of writes per burst from 2 to %d", pattern.MaxBurst)}
		}
		if !isIOPS(writes) || writes == 0 || writes > data*(1+1e-9) {
			return nil, &NeedError{Field: "write_bursts", Value: strconv.FormatFloat(writes, 'g', -1, 64),
				Why: "writes: not a rate above 0 and at most the system's data writes (its writes less its durable writes)"}
		}
		sh.BurstSize, sh.BurstWrites = int(size), writes
	}
	if t := s.Timeline; t != nil {
		if t.Observation == "" || t.System == "" || (t.Series != SeriesIO && t.Series != SeriesDatabase) {
			return nil, &NeedError{Field: "timeline", Why: "needs observation (a file), system (its name there) and series (io or database)"}
		}
		sh.Timeline = &TimelineRef{Observation: t.Observation, System: t.System, Series: t.Series}
	}
	return sh, nil
}

// sizeMixSplit turns an observed size mix (I/Os by size class, reads
// and writes apart) into the block-size mix syntax: each direction's
// classes in whole percent that sum to 100 (largest remainders), classes
// under half a percent left out, and the mix of a direction that did no
// I/O taken from the other. "" when there is nothing to say.
func sizeMixSplit(mix []results.SizeClass) string {
	var reads, writes []results.SizeClass
	for _, c := range mix {
		if c.Reads > 0 {
			reads = append(reads, results.SizeClass{Bytes: c.Bytes, Reads: c.Reads})
		}
		if c.Writes > 0 {
			writes = append(writes, results.SizeClass{Bytes: c.Bytes, Reads: c.Writes})
		}
	}
	r, w := percentages(reads), percentages(writes)
	switch {
	case r == "" && w == "":
		return ""
	case r == "":
		r = w
	case w == "":
		w = r
	}
	return r + "," + w
}

// percentages is one direction's classes (counts in Reads) as SIZE/PCT
// entries summing to 100.
func percentages(cs []results.SizeClass) string {
	var total uint64
	for _, c := range cs {
		total += c.Reads
	}
	if total == 0 {
		return ""
	}
	type part struct {
		bytes int64
		pct   int
		rem   float64
	}
	var parts []part
	sum := 0
	for _, c := range cs {
		exact := 100 * float64(c.Reads) / float64(total)
		if exact < 0.5 {
			continue
		}
		p := part{bytes: max(c.Bytes, 512), pct: int(exact), rem: exact - math.Floor(exact)}
		parts = append(parts, p)
		sum += p.pct
	}
	// Largest remainders first, then the larger class, until 100.
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if parts[a].rem != parts[b].rem {
			if parts[a].rem > parts[b].rem {
				return -1
			}
			return 1
		}
		return int(parts[b].bytes - parts[a].bytes)
	})
	for i := 0; sum < 100 && len(order) > 0; i = (i + 1) % len(order) {
		parts[order[i]].pct++
		sum++
	}
	var out []string
	for _, p := range parts {
		if p.pct > 0 {
			out = append(out, results.ShortSize(p.bytes)+"/"+strconv.Itoa(p.pct))
		}
	}
	return strings.Join(out, ":")
}
