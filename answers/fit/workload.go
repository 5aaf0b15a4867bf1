package fit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/yamldoc"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// Workload is several systems to consolidate on one volume.
type Workload struct {
	// Version is the file's: WorkloadV1 or WorkloadV2 (whose systems
	// have a Shape).
	Version int
	// HeadroomPct is the headroom (in %) the file's rates were raised by
	// when observe wrote it (version 2); a rehearsal raises the observed
	// timelines it replays by as much.
	HeadroomPct float64
	Systems     []Need
}

// workloadFile is the YAML form, version 1:
//
//	systems:
//	  - {name: erp, reads: 4000, writes: 1000, block_size: 8k, concurrency: 16, latency: "p99<2ms"}
//
// and version 2, which observe writes, with each system's shape (Shape):
//
//	version: 2
//	systems:
//	  - name: erp
//	    reads: 4000
//	    writes: 1000
//	    block_size: 8k
//	    concurrency: 16
//	    read_share: 0.78
//	    bssplit: 8k/90:16k/10,8k/70:128k/30
//	    durable_writes: 120
//	    timeline: {observation: obs.json, system: erp, series: io}
type workloadFile struct {
	Version int `yaml:"version"`
	// HeadroomPct (version 2) is the headroom observe added to the
	// rates, which a rehearsal adds to the timelines it replays.
	HeadroomPct *float64         `yaml:"headroom_pct"`
	Systems     []workloadSystem `yaml:"systems"`
}

// The workload file's versions: 1 (no version field) and 2.
const (
	WorkloadV1 = 1
	WorkloadV2 = 2
)

// workloadSystem is a system of a workload file, each field its own
// type: a number is a number, the block size a size, the latency a list
// of bounds.
type workloadSystem struct {
	Name      string  `yaml:"name"`
	Reads     float64 `yaml:"reads"`
	Writes    float64 `yaml:"writes"`
	BlockSize string  `yaml:"block_size"`
	// Concurrency is read as a number and held to be whole here: the
	// YAML decoder would cut 1.5 to 1 in an int in silence.
	Concurrency float64 `yaml:"concurrency"`
	Latency     string  `yaml:"latency"`
	// The version 2 fields.
	workloadShape `yaml:",inline"`
}

// ReadWorkload reads the workload file at path (ParseWorkload). Its
// errors are bad input: a file that cannot be read is the workload
// option's, a fault in the file is said after the option's name, with
// its file, line and field.
func ReadWorkload(path string) (Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Workload{}, fault.Input("workload", "%w", err)
	}
	w, err := ParseWorkload(path, data)
	if err != nil {
		return Workload{}, fault.Mentions("", func(n fault.Namer) string { return n("workload") + " " + err.Error() })
	}
	return w, nil
}

// ReadNeed is what a fit asks: the need spec (ParseNeed, whose faults
// are bad input of the option "need"), or when spec is "", the sum of
// the systems of the workload file (ReadWorkload), with the workload.
func ReadNeed(spec, workloadFile string) (Need, *Workload, error) {
	if spec != "" {
		need, err := ParseNeed(spec)
		if err != nil {
			return Need{}, nil, fault.Input("need", "%w", err)
		}
		return need, nil, nil
	}
	w, err := ReadWorkload(workloadFile)
	if err != nil {
		return Need{}, nil, err
	}
	return w.Sum(), &w, nil
}

// ParseWorkload reads a workload file of one YAML document; errors
// name the file, line and field.
func ParseWorkload(file string, data []byte) (Workload, error) {
	root, err := yamldoc.One(data)
	var second *yamldoc.SecondError
	if errors.As(err, &second) {
		return Workload{}, fmt.Errorf("%s:%d: a second YAML document: a workload file holds one (remove the ---)", file, second.Line)
	}
	if err != nil {
		return Workload{}, fmt.Errorf("%s: %w", file, err)
	}
	var wf workloadFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil && !errors.Is(err, io.EOF) {
		return Workload{}, yamlError(file, err)
	}
	version := max(wf.Version, WorkloadV1)
	if wf.Version != 0 && wf.Version != WorkloadV1 && wf.Version != WorkloadV2 {
		return Workload{}, fmt.Errorf("%s: version %d: this iomatrix reads versions 1 and 2", file, wf.Version)
	}
	if len(wf.Systems) == 0 {
		return Workload{}, fmt.Errorf("%s: no systems (systems: [{name, reads, writes, block_size, concurrency, latency}])", file)
	}
	lines := systemLines(root)
	w := Workload{Version: version}
	if h := wf.HeadroomPct; h != nil {
		if version == WorkloadV1 {
			return Workload{}, fmt.Errorf("%s: headroom_pct is a version 2 field: begin the file with \"version: 2\"", file)
		}
		if !(*h >= 0 && *h <= 1000) {
			return Workload{}, fmt.Errorf("%s: headroom_pct=%v: not a percentage from 0 to 1000", file, *h)
		}
		w.HeadroomPct = *h
	}
	names := map[string]bool{}
	for i, s := range wf.Systems {
		at := fmt.Sprintf("%s:%d: system %d", file, lines[i], i+1)
		if err := results.CheckName(s.Name); err != nil {
			return Workload{}, fmt.Errorf("%s: name: %w", at, err)
		}
		if names[s.Name] {
			return Workload{}, fmt.Errorf("%s: name: %q given twice", at, s.Name)
		}
		names[s.Name] = true
		n, err := s.need()
		if err != nil {
			return Workload{}, fmt.Errorf("%s (%s): %w", at, s.Name, err)
		}
		switch {
		case version == WorkloadV1 && s.present():
			return Workload{}, fmt.Errorf("%s (%s): %s is a version 2 field: begin the file with \"version: 2\"", at, s.Name, s.field())
		case version == WorkloadV2:
			if n.Shape, err = s.shape(n); err != nil {
				return Workload{}, fmt.Errorf("%s (%s): %w", at, s.Name, err)
			}
		}
		w.Systems = append(w.Systems, n)
	}
	return w, nil
}

// need is the system's need, each field parsed as its type; a field at
// fault is a NeedError naming it as the file does.
func (s workloadSystem) need() (Need, error) {
	n := Need{Name: s.Name}
	var err error
	if n.ReadIOPS, err = iops("reads", s.Reads); err != nil {
		return Need{}, err
	}
	if n.WriteIOPS, err = iops("writes", s.Writes); err != nil {
		return Need{}, err
	}
	if s.BlockSize != "" {
		if n.BlockSize, err = blockSize("block_size", s.BlockSize); err != nil {
			return Need{}, err
		}
	}
	if s.Concurrency != 0 {
		if s.Concurrency != math.Trunc(s.Concurrency) || s.Concurrency > math.MaxInt32 {
			return Need{}, &NeedError{Field: "concurrency", Value: strconv.FormatFloat(s.Concurrency, 'g', -1, 64), Why: notConcurrency}
		}
		if n.Concurrency, err = concurrency("concurrency", int(s.Concurrency)); err != nil {
			return Need{}, err
		}
	}
	if s.Latency != "" {
		if err := n.addBounds(s.Latency); err != nil {
			return Need{}, err
		}
	}
	return n, n.check("reads", "block_size")
}

// addBounds reads a workload's latency: bounds such as p99<2ms, several
// joined by commas, and nothing else.
func (n *Need) addBounds(latency string) error {
	for _, b := range strings.Split(latency, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(b), "<")
		if !ok {
			return &NeedError{Field: "latency", Value: strings.TrimSpace(b), Why: "not a latency bound: p50, p99, p99.9 or mean below a duration, e.g. p99<2ms"}
		}
		if err := n.addBound(strings.TrimSpace(key), strings.TrimSpace(val)); err != nil {
			var ne *NeedError
			if errors.As(err, &ne) {
				ne.Field = "latency: " + ne.Field
			}
			return err
		}
	}
	return nil
}

// yamlError turns the YAML decoder's message into one line naming the
// file and line: "systems.yaml:3: `lots` is not a number".
func yamlError(file string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return fmt.Errorf("%s: %w", file, err)
	}
	msg := te.Errors[0]
	line, rest, ok := strings.Cut(strings.TrimPrefix(msg, "line "), ": ")
	if !ok {
		return fmt.Errorf("%s: %s", file, msg)
	}
	switch {
	case strings.HasPrefix(rest, "field "):
		name, _, _ := strings.Cut(strings.TrimPrefix(rest, "field "), " ")
		rest = fmt.Sprintf("unknown field %s (name, reads, writes, block_size, concurrency, latency; in version 2 also read_share, bssplit, durable_writes, write_bursts, timeline)", name)
	case strings.HasPrefix(rest, "cannot unmarshal !!str `"):
		v, _, _ := strings.Cut(strings.TrimPrefix(rest, "cannot unmarshal !!str `"), "`")
		rest = fmt.Sprintf("%q is not a number", v)
	}
	return fmt.Errorf("%s:%s: %s", file, line, rest)
}

func systemLines(root *yaml.Node) []int {
	var lines []int
	if len(root.Content) == 0 {
		return lines
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "systems" {
			for _, s := range m.Content[i+1].Content {
				lines = append(lines, s.Line)
			}
		}
	}
	return lines
}

// Sum is what the systems need together on one volume: their IOPS
// added, at the largest block size among them, at the sum of their
// concurrencies (unknown if any is), under each bound's tightest limit.
func (w Workload) Sum() Need {
	sum := Need{Name: "all systems"}
	known := true
	tight := map[report.Metric]time.Duration{}
	for _, s := range w.Systems {
		sum.ReadIOPS += s.ReadIOPS
		sum.WriteIOPS += s.WriteIOPS
		sum.BlockSize = max(sum.BlockSize, s.BlockSize)
		if s.Concurrency == 0 {
			known = false
		}
		sum.Concurrency += s.Concurrency
		for _, b := range s.Bounds {
			if d, ok := tight[b.Metric]; !ok || b.Max < d {
				tight[b.Metric] = b.Max
			}
		}
	}
	if !known {
		sum.Concurrency = 0
	}
	for _, m := range []report.Metric{report.LatP50, report.LatMean, report.LatP99, report.LatP999} {
		if d, ok := tight[m]; ok {
			sum.Bounds = append(sum.Bounds, report.Bound{Metric: m, Max: d})
		}
	}
	return sum
}

// Share is one system's part of the measured capacity: caps that give
// each system its need and an equal part of the room left, rounded down,
// so that the caps add up to no more than the cell measured.
type Share struct {
	System    string
	ReadIOPS  uint64
	WriteIOPS uint64
}

// Shares splits the verdict's IOPS among the systems: each direction of
// each system its need, and the room left over (the verdict's IOPS beyond
// the sum of the needs) in equal parts among all the systems'
// directions. Equal, not in proportion to the needs: a direction a
// system was seen to barely use would otherwise be held to a sliver of
// it, and one whose reads the page cache served while it was observed
// (a database's working set in memory) reads from the disk when the
// cache has gone cold, at the rate its queries need, not the rate
// observed. A verdict below the sum (no room) gives each its need
// scaled down.
func (w Workload) Shares(v Verdict) []Share {
	sum := w.Sum().Total()
	room := v.IOPS - sum
	out := make([]Share, len(w.Systems))
	for i, s := range w.Systems {
		r, wr := s.ReadIOPS, s.WriteIOPS
		if room >= 0 {
			part := room / float64(2*len(w.Systems))
			r, wr = r+part, wr+part
		} else if sum > 0 {
			r, wr = r*v.IOPS/sum, wr*v.IOPS/sum
		}
		out[i] = Share{System: s.Name, ReadIOPS: capOf(r), WriteIOPS: capOf(wr)}
	}
	return out
}

// capOf rounds a share down; a cap of 0 would mean no limit at all, so a
// system that needs none of a direction is held to 1 I/O per second.
func capOf(v float64) uint64 {
	return max(uint64(math.Floor(v)), 1)
}
