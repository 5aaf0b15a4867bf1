package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Need is what a workload asks of a volume: read and write IOPS at a
// block size, optionally at a concurrency (queue depth × jobs) and under
// latency bounds.
type Need struct {
	Name        string
	ReadIOPS    float64
	WriteIOPS   float64
	BlockSize   int64
	Concurrency int // 0: not given
	Bounds      []Bound
}

// Bound is a latency limit on one metric: p99 < 2ms.
type Bound struct {
	Metric Metric // LatP50, LatP99, LatP999 or LatMean
	Max    time.Duration
}

func (b Bound) String() string {
	return strings.TrimPrefix(string(b.Metric), "lat-") + "<" + b.Max.String()
}

// Total is the need's IOPS.
func (n Need) Total() float64 { return n.ReadIOPS + n.WriteIOPS }

// ReadPct is the need's read share in %.
func (n Need) ReadPct() float64 { return 100 * n.ReadIOPS / n.Total() }

// NeedError names the field of a need that is wrong.
type NeedError struct {
	Field, Value, Why string
}

func (e *NeedError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Why)
	}
	return fmt.Sprintf("%s=%s: %s", e.Field, e.Value, e.Why)
}

var boundMetrics = map[string]Metric{"p50": LatP50, "p99": LatP99, "p99.9": LatP999, "mean": LatMean}

// ParseNeed reads "read=8000,write=2000,bs=16k,qd=32,p99<2ms": read and
// write IOPS (either may be left out for 0, not both), the block size,
// and optionally the concurrency (qd: queue depth × jobs) and latency
// bounds (p50, p99, p99.9 or mean below a duration).
func ParseNeed(s string) (Need, error) {
	var n Need
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if key, val, ok := strings.Cut(part, "<"); ok {
			if err := n.addBound(strings.TrimSpace(key), strings.TrimSpace(val)); err != nil {
				return Need{}, err
			}
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok {
			return Need{}, &NeedError{Field: part, Why: "not key=value (read, write, bs, qd) or a bound such as p99<2ms"}
		}
		if seen[key] {
			return Need{}, &NeedError{Field: key, Value: val, Why: "given twice"}
		}
		seen[key] = true
		if err := n.set(key, val); err != nil {
			return Need{}, err
		}
	}
	return n, n.check()
}

func (n *Need) set(key, val string) error {
	switch key {
	case "read", "write":
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return &NeedError{Field: key, Value: val, Why: "not a number of IOPS"}
		}
		if key == "read" {
			n.ReadIOPS = v
		} else {
			n.WriteIOPS = v
		}
	case "bs":
		b, err := units.ParseSize(val)
		if err != nil || b < 512 || b%512 != 0 {
			return &NeedError{Field: key, Value: val, Why: "not a block size (a multiple of 512 bytes, e.g. 8k)"}
		}
		n.BlockSize = b
	case "qd":
		q, err := strconv.Atoi(val)
		if err != nil || q < 1 {
			return &NeedError{Field: key, Value: val, Why: "not a concurrency (I/Os in flight: queue depth × jobs, 1 or more)"}
		}
		n.Concurrency = q
	default:
		return &NeedError{Field: key, Value: val, Why: "unknown (read, write, bs, qd, or a bound such as p99<2ms)"}
	}
	return nil
}

func (n *Need) addBound(key, val string) error {
	m, ok := boundMetrics[key]
	if !ok {
		return &NeedError{Field: key + "<" + val, Why: "not a latency bound: p50, p99, p99.9 or mean, e.g. p99<2ms"}
	}
	d, err := time.ParseDuration(strings.ReplaceAll(val, "µs", "us"))
	if err != nil || d <= 0 {
		return &NeedError{Field: key + "<" + val, Why: "not a duration (e.g. 2ms, 500us)"}
	}
	n.Bounds = append(n.Bounds, Bound{Metric: m, Max: d})
	return nil
}

func (n *Need) check() error {
	if n.Total() <= 0 {
		return &NeedError{Field: "read", Why: "give read=N and/or write=N IOPS above 0"}
	}
	if n.BlockSize == 0 {
		return &NeedError{Field: "bs", Why: "missing: the workload's block size (e.g. bs=8k; databases: their page size)"}
	}
	return nil
}

// ErrCannotJudge is returned when a results document holds no cell that
// can answer a need without assuming more than was measured.
var ErrCannotJudge = errors.New("cannot be judged from these results")

// Verdict is the answer to a need.
type Verdict struct {
	Need Need
	Fits bool
	// Cell is the measured result the verdict rests on; Member names it in
	// a fleet (the worst member's).
	Cell   results.Result
	Member string
	// IOPS is the cell's, Headroom its excess over the need (IOPS/need − 1).
	IOPS     float64
	Headroom float64
	// Latency holds the cell's figure (µs) and flags for each bound.
	Latency []BoundCheck
	// Why says what does not hold, when it does not fit.
	Why string
	// Notes are caveats on the cell (an unsettled window).
	Notes []string
}

// BoundCheck is one latency bound against the cell.
type BoundCheck struct {
	Bound Bound
	Value float64 // µs
	Flags Flags
	Holds bool
}

// Fit answers a need from measured random-I/O cells, conservatively: it
// never interpolates and never takes a cell more favourable than the
// need. The block size is the need's or the next larger measured one;
// the read share the nearest measured at or below the need's (writes
// cost more); the concurrency the highest measured at or below the
// need's, or, when the need gives none, the measured one with the most
// IOPS that meets the bounds. A fleet is judged on each member, and the
// verdict is the worst member's.
func Fit(doc *results.Document, need Need) (Verdict, error) {
	if len(doc.Members) == 0 {
		return fitOne(doc.Results, need)
	}
	var worst *Verdict
	for _, m := range doc.Members {
		v, err := fitOne(m.Results, need)
		if err != nil {
			return Verdict{}, fmt.Errorf("member %s: %w", m.Label, err)
		}
		v.Member = m.Label
		if worst == nil || worseVerdict(v, *worst) {
			worst = &v
		}
	}
	return *worst, nil
}

func worseVerdict(a, b Verdict) bool {
	if a.Fits != b.Fits {
		return !a.Fits
	}
	return a.Headroom < b.Headroom
}

func fitOne(rs []results.Result, need Need) (Verdict, error) {
	random := slices.DeleteFunc(slices.Clone(rs), func(r results.Result) bool {
		return r.Pattern.Access != results.Random || r.Error != nil || r.Total.IOs == 0
	})
	bs := int64(0)
	for _, r := range random {
		if b := r.Pattern.BlockSize; b >= need.BlockSize && (bs == 0 || b < bs) {
			bs = b
		}
	}
	if bs == 0 {
		return Verdict{}, fmt.Errorf("%w: no random cell at a block size of %s or larger", ErrCannotJudge, results.ShortSize(need.BlockSize))
	}
	readPct := -1
	for _, r := range random {
		if p := r.Pattern.ReadPct; r.Pattern.BlockSize == bs && float64(p) <= need.ReadPct()+1e-9 && p > readPct {
			readPct = p
		}
	}
	if readPct < 0 {
		return Verdict{}, fmt.Errorf("%w: no %s cell with %.0f %% reads or fewer", ErrCannotJudge, results.ShortSize(bs), need.ReadPct())
	}
	var cells []results.Result
	for _, r := range random {
		if r.Pattern.BlockSize == bs && r.Pattern.ReadPct == readPct {
			cells = append(cells, r)
		}
	}
	inFlight := func(r results.Result) int { return r.Pattern.QueueDepth * max(r.Pattern.Jobs, 1) }
	if need.Concurrency > 0 {
		best := -1
		for i, r := range cells {
			if c := inFlight(r); c <= need.Concurrency && (best < 0 || c > inFlight(cells[best])) {
				best = i
			}
		}
		if best < 0 {
			return Verdict{}, fmt.Errorf("%w: no %s cell with %d %% reads at %d I/Os in flight or fewer", ErrCannotJudge, results.ShortSize(bs), readPct, need.Concurrency)
		}
		return judge(cells[best], need), nil
	}
	var pick *Verdict
	for _, r := range cells {
		v := judge(r, need)
		if pick == nil || betterCell(v, *pick) {
			pick = &v
		}
	}
	return *pick, nil
}

// betterCell prefers a cell that meets the bounds, then more IOPS.
func betterCell(a, b Verdict) bool {
	ab, bb := boundsHold(a.Latency), boundsHold(b.Latency)
	if ab != bb {
		return ab
	}
	return a.IOPS > b.IOPS
}

func boundsHold(cs []BoundCheck) bool {
	for _, c := range cs {
		if !c.Holds {
			return false
		}
	}
	return true
}

func judge(r results.Result, need Need) Verdict {
	iops, flags := IOPS.Measure(r)
	v := Verdict{Need: need, Cell: r, IOPS: iops, Headroom: iops/need.Total() - 1}
	if flags&FlagUnsettled != 0 {
		v.Notes = append(v.Notes, "the cell's window did not converge (--runtime auto): its IOPS are not known within the precision asked")
	}
	var why []string
	if iops < need.Total() {
		why = append(why, fmt.Sprintf("%s IOPS measured, %s needed", units.Thousands(iops, 0), units.Thousands(need.Total(), 0)))
	}
	for _, b := range need.Bounds {
		val, f := b.Metric.Measure(r)
		c := BoundCheck{Bound: b, Value: val, Flags: f}
		limit := float64(b.Max) / float64(time.Microsecond)
		switch {
		case f&FlagFewIOs != 0:
			why = append(why, fmt.Sprintf("its %s rests on too few I/Os to prove %s", strings.TrimPrefix(string(b.Metric), "lat-"), b))
		case f&FlagApprox != 0:
			why = append(why, fmt.Sprintf("its %s is not a percentile (a file without the total's latency): %s cannot be proved", strings.TrimPrefix(string(b.Metric), "lat-"), b))
		case val >= limit:
			why = append(why, fmt.Sprintf("%s %s µs, not below %s", strings.TrimPrefix(string(b.Metric), "lat-"), units.Thousands(val, 0), b.Max))
		default:
			c.Holds = true
		}
		v.Latency = append(v.Latency, c)
	}
	v.Fits = len(why) == 0
	v.Why = strings.Join(why, "; ")
	return v
}

// Workload is several systems to consolidate on one volume.
type Workload struct {
	Systems []Need
}

// workloadFile is the YAML form:
//
//	systems:
//	  - {name: erp, reads: 4000, writes: 1000, block_size: 8k, concurrency: 16, latency: "p99<2ms"}
type workloadFile struct {
	Systems []struct {
		Name        string  `yaml:"name"`
		Reads       float64 `yaml:"reads"`
		Writes      float64 `yaml:"writes"`
		BlockSize   string  `yaml:"block_size"`
		Concurrency int     `yaml:"concurrency"`
		Latency     string  `yaml:"latency"`
	} `yaml:"systems"`
}

// ParseWorkload reads a workload file; errors name the file, line and
// field.
func ParseWorkload(file string, data []byte) (Workload, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Workload{}, fmt.Errorf("%s: %w", file, err)
	}
	var wf workloadFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil {
		return Workload{}, yamlError(file, err)
	}
	if len(wf.Systems) == 0 {
		return Workload{}, fmt.Errorf("%s: no systems (systems: [{name, reads, writes, block_size, concurrency, latency}])", file)
	}
	lines := systemLines(&root)
	var w Workload
	names := map[string]bool{}
	for i, s := range wf.Systems {
		at := fmt.Sprintf("%s:%d: system %d", file, lines[i], i+1)
		if s.Name == "" {
			return Workload{}, fmt.Errorf("%s: name: missing", at)
		}
		if names[s.Name] {
			return Workload{}, fmt.Errorf("%s: name: %q given twice", at, s.Name)
		}
		names[s.Name] = true
		spec := fmt.Sprintf("read=%s,write=%s", strconv.FormatFloat(s.Reads, 'f', -1, 64), strconv.FormatFloat(s.Writes, 'f', -1, 64))
		if s.BlockSize != "" {
			spec += ",bs=" + s.BlockSize
		}
		if s.Concurrency != 0 {
			spec += ",qd=" + strconv.Itoa(s.Concurrency)
		}
		if s.Latency != "" {
			spec += "," + s.Latency
		}
		n, err := ParseNeed(spec)
		if err != nil {
			var ne *NeedError
			if errors.As(err, &ne) {
				ne.Field = map[string]string{"read": "reads", "write": "writes", "bs": "block_size", "qd": "concurrency"}[ne.Field] + orField(ne.Field)
			}
			return Workload{}, fmt.Errorf("%s (%s): %w", at, s.Name, err)
		}
		n.Name = s.Name
		w.Systems = append(w.Systems, n)
	}
	return w, nil
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
		rest = fmt.Sprintf("unknown field %s (name, reads, writes, block_size, concurrency, latency)", name)
	case strings.HasPrefix(rest, "cannot unmarshal !!str `"):
		v, _, _ := strings.Cut(strings.TrimPrefix(rest, "cannot unmarshal !!str `"), "`")
		rest = fmt.Sprintf("%q is not a number", v)
	}
	return fmt.Errorf("%s:%s: %s", file, line, rest)
}

// orField keeps a latency field's own name where the map has none.
func orField(f string) string {
	if _, ok := map[string]bool{"read": true, "write": true, "bs": true, "qd": true}[f]; ok {
		return ""
	}
	return "latency: " + f
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
	tight := map[Metric]time.Duration{}
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
	for _, m := range []Metric{LatP50, LatMean, LatP99, LatP999} {
		if d, ok := tight[m]; ok {
			sum.Bounds = append(sum.Bounds, Bound{Metric: m, Max: d})
		}
	}
	return sum
}

// Share is one system's part of the measured capacity: caps that give
// each system its need scaled by the headroom, rounded down, so that the
// caps add up to no more than the cell measured.
type Share struct {
	System    string
	ReadIOPS  uint64
	WriteIOPS uint64
}

// Shares splits the verdict's IOPS among the systems in proportion to
// their needs.
func (w Workload) Shares(v Verdict) []Share {
	k := v.IOPS / w.Sum().Total()
	out := make([]Share, len(w.Systems))
	for i, s := range w.Systems {
		out[i] = Share{System: s.Name, ReadIOPS: capOf(s.ReadIOPS * k), WriteIOPS: capOf(s.WriteIOPS * k)}
	}
	return out
}

// capOf rounds a share down; a cap of 0 would mean no limit at all, so a
// system that needs none of a direction is held to 1 I/O per second.
func capOf(v float64) uint64 {
	return max(uint64(math.Floor(v)), 1)
}
