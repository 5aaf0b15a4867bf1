package profiles

import (
	"embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/internal/yamldoc"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// DefaultName is the profile a sweep runs when none is given.
const DefaultName = "full"

// Errors of the loader.
var (
	ErrUnknownProfile = errors.New("unknown profile")
	ErrBadProfile     = errors.New("invalid profile")
)

// Profile is a named, ordered set of patterns.
type Profile struct {
	Name        string
	Description string
	Defaults    Defaults
	Patterns    []results.Pattern
	// Loads are open-loop runs of some of the patterns, each at shares of
	// the IOPS its closed-loop cell measured in the same sweep (a
	// pattern's loads: key).
	Loads []OpenLoad
	// Nomerges are the patterns that run with the disk's request merging
	// set (a pattern's nomerges: key), their loads with them: the iocost
	// profile's 4K cells, as the kernel's procedure measures them. Not
	// part of a pattern's identity.
	Nomerges []Nomerges
	// Reference is the pattern of the sweep's sentinels (a reference:
	// key), nil for the default (Sentinel).
	Reference *results.Pattern
	// Source is "built-in" or the file the profile was read from.
	Source string
}

// Sentinel is the pattern a sweep of p watches its device with: its
// reference: key, or else its plain random-read pattern (100 % reads,
// one block size, uniform offsets, no sync) of the smallest block size,
// at the deepest queue depth up to 32 (the shallowest where none is that
// shallow), with the fewest jobs: a rate the device sets rather than one
// request's latency, and short to measure. A profile without one is
// watched with its first pattern.
func (p *Profile) Sentinel() results.Pattern {
	if p.Reference != nil {
		return *p.Reference
	}
	best := -1
	better := func(a, b results.Pattern) bool {
		if a.BlockSize != b.BlockSize {
			return a.BlockSize < b.BlockSize
		}
		aIn, bIn := a.QueueDepth <= 32, b.QueueDepth <= 32
		switch {
		case aIn != bIn:
			return aIn
		case a.QueueDepth != b.QueueDepth:
			return aIn == (a.QueueDepth > b.QueueDepth)
		}
		return a.Jobs < b.Jobs
	}
	for i, pat := range p.Patterns {
		if plainRead(pat) && (best < 0 || better(pat, p.Patterns[best])) {
			best = i
		}
	}
	if best < 0 {
		best = 0
	}
	return p.Patterns[best]
}

// plainRead tells whether pat reads at random, one block size, uniform
// offsets, closed-loop.
func plainRead(pat results.Pattern) bool {
	return pat.Access == results.Random && pat.ReadPct == 100 && pat.BSSplit == "" && pat.Distribution == "" &&
		pat.Sync == "" && pat.Rate == (results.Rate{})
}

// Defaults are per-profile run settings; zero means "not set".
type Defaults struct {
	Runtime time.Duration
	Ramp    time.Duration
	RampSet bool // ramp: 0 is a setting of its own
	Size    int64
}

// Estimate is the time a sweep of p takes with the given runtime and
// ramp, layout excluded.
func (p *Profile) Estimate(runtime, ramp time.Duration) time.Duration {
	return time.Duration(p.Cells()) * (runtime + ramp)
}

// OpenLoad is a pattern measured open-loop, after its closed-loop cell, at
// each of Shares (percent) of the IOPS that cell measured: the rate mode's
// 90 %, as the iocost profile's QoS runs are.
type OpenLoad struct {
	Shape  results.Pattern
	Shares []float64
}

// Nomerges is a pattern whose cells run with the disk queue's nomerges
// set to Value: 0 merges requests, 1 only the simple merges, 2 none
// (Documentation/ABI/stable/sysfs-block).
type Nomerges struct {
	Shape results.Pattern
	Value int
}

// MaxNomerges is the largest nomerges value the kernel takes.
const MaxNomerges = 2

// NomergesOf is the nomerges value p's profile asks for its cells, p's
// open-loop loads included, and whether it asks for one.
func (p *Profile) NomergesOf(pat results.Pattern) (value int, ok bool) {
	pat.Rate = results.Rate{}
	for _, n := range p.Nomerges {
		if n.Shape == pat {
			return n.Value, true
		}
	}
	return 0, false
}

// Cells is the number of cells a sweep of the profile measures: its
// patterns and their loads.
func (p *Profile) Cells() int {
	n := len(p.Patterns)
	for _, l := range p.Loads {
		n += len(l.Shares)
	}
	return n
}

// ParseError locates a fault in a profile file.
type ParseError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *ParseError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

func (e *ParseError) Unwrap() error { return ErrBadProfile }

//go:embed builtin/*.yaml
var builtinFiles embed.FS

// builtinOrder is the order `iomatrix profiles` lists them in.
var builtinOrder = []string{"full", "quick", "cdm", "cdm-nvme", "jobs", "iocost", "commit"}

// Names lists the built-in profiles.
func Names() []string { return append([]string(nil), builtinOrder...) }

// Builtin returns the built-in profile called name.
func Builtin(name string) (*Profile, error) {
	data, err := builtinFiles.ReadFile("builtin/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("%w %q (built-in profiles: %s; or give a YAML file)", ErrUnknownProfile, name, strings.Join(builtinOrder, ", "))
	}
	p, err := Parse("builtin/"+name+".yaml", data)
	if err != nil {
		return nil, err
	}
	p.Source = "built-in"
	return p, nil
}

// Load returns a built-in profile by name, or reads a YAML file when
// nameOrPath looks like a path (it has a slash or a .yaml/.yml suffix, or
// names an existing file).
func Load(nameOrPath string) (*Profile, error) {
	if IsPath(nameOrPath) {
		data, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("profile file: %w", err)
		}
		p, err := Parse(nameOrPath, data)
		if err != nil {
			return nil, err
		}
		p.Source = nameOrPath
		return p, nil
	}
	return Builtin(nameOrPath)
}

// IsPath tells whether Load reads s as a profile file rather than a
// built-in profile's name: a path with a directory, a name ending .yaml
// or .yml, or a regular file that exists.
func IsPath(s string) bool {
	if strings.ContainsRune(s, filepath.Separator) || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml") {
		return true
	}
	fi, err := os.Stat(s)
	return err == nil && fi.Mode().IsRegular()
}

// Parse reads a profile document. file names the source in errors.
//
// The form:
//
//	name: mine                      # required
//	description: what it is for     # optional
//	defaults: {runtime: 30s, ramp: 2s, size: 8GiB}  # a bare number is seconds
//	patterns:                       # explicit patterns, run first
//	  - {access: sequential, block_size: 1m, read_pct: 100, queue_depth: 8, jobs: 1}
//	  - {bssplit: 4k/60:16k/30:1m/10, random_distribution: zipf:1.2, read_pct: 90, queue_depth: 32}
//	  - {access: sequential, block_size: 128k, read_pct: 0, queue_depth: 8, compress_pct: 50, dedupe_pct: 20}
//	  - {access: sequential, block_size: 8k, read_pct: 0, queue_depth: 1, sync: "fdatasync:1"}  # or dsync, fsync:N
//	  - {access: random, block_size: 4k, read_pct: 100, queue_depth: 64, loads: 90%, nomerges: 1}
//	matrix:                         # cartesian products, run after, in order
//	  - access: random
//	    block_sizes: [4k, 16k]
//	    read_pcts: [100, 70, 0]
//	    queue_depths: [1, 32]
//	    jobs: [1]                   # optional, default [1]
//	reference: randread:4k:32       # optional: the pattern of a sweep's sentinels (Sentinel)
func Parse(file string, data []byte) (*Profile, error) {
	doc, err := yamldoc.One(data)
	var second *yamldoc.SecondError
	if errors.As(err, &second) {
		return nil, &ParseError{File: file, Line: second.Line, Msg: "a second YAML document: a profile file holds one profile (remove the ---)"}
	}
	if err != nil {
		return nil, &ParseError{File: file, Line: yamlErrorLine(err), Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &ParseError{File: file, Msg: "empty profile"}
	}
	p := &parser{file: file}
	prof := &Profile{}
	root := doc.Content[0]
	if err := p.mapping(root, "profile", map[string]func(*yaml.Node) error{
		"name":        func(n *yaml.Node) error { return p.str(n, "name", &prof.Name) },
		"description": func(n *yaml.Node) error { return p.str(n, "description", &prof.Description) },
		"defaults":    func(n *yaml.Node) error { return p.defaults(n, &prof.Defaults) },
		"patterns":    func(n *yaml.Node) error { return p.patterns(n, prof) },
		"matrix":      func(n *yaml.Node) error { return p.matrices(n, prof) },
		"reference":   func(n *yaml.Node) error { return p.reference(n, prof) },
	}); err != nil {
		return nil, err
	}
	if prof.Name == "" {
		return nil, p.errf(root, "name", "missing: every profile needs a name")
	}
	if len(prof.Patterns) == 0 {
		return nil, p.errf(root, "patterns", "the profile has no patterns (give patterns: or matrix:)")
	}
	seen := map[string]int{}
	for i, pat := range prof.Patterns {
		n := pat.Name()
		if first, dup := seen[n]; dup {
			return nil, &ParseError{File: file, Line: p.lines[i], Field: "patterns",
				Msg: fmt.Sprintf("duplicate pattern %s (first at line %d)", n, p.lines[first])}
		}
		seen[n] = i
	}
	return prof, nil
}

type parser struct {
	file  string
	lines []int // source line of each expanded pattern
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	return &ParseError{File: p.file, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// mapping walks a mapping node, rejecting unknown and repeated keys.
func (p *parser) mapping(n *yaml.Node, what string, fields map[string]func(*yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, what, "want a mapping of keys to values")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, ok := fields[k.Value]
		if !ok {
			return p.errf(k, k.Value, "unknown key in %s (known: %s)", what, strings.Join(sortedKeys(fields), ", "))
		}
		if seen[k.Value] {
			return p.errf(k, k.Value, "given twice")
		}
		seen[k.Value] = true
		if err := f(v); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys(m map[string]func(*yaml.Node) error) []string {
	return slices.Sorted(maps.Keys(m))
}

// requireAll reports the first missing field, in a fixed order.
func (p *parser) requireAll(n *yaml.Node, what string, fields []string, have []bool) error {
	for i, f := range fields {
		if !have[i] {
			return p.errf(n, f, "missing in %s", what)
		}
	}
	return nil
}

func (p *parser) scalar(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, field, "want a single value")
	}
	return n.Value, nil
}

func (p *parser) str(n *yaml.Node, field string, dst *string) error {
	v, err := p.scalar(n, field)
	*dst = v
	return err
}

func (p *parser) size(n *yaml.Node, field string) (int64, error) {
	v, err := p.scalar(n, field)
	if err != nil {
		return 0, err
	}
	s, err := units.ParseSize(v)
	if err != nil {
		return 0, p.errf(n, field, "%q is not a size (e.g. 4k, 16KiB, 1m)", v)
	}
	return s, nil
}

func (p *parser) integer(n *yaml.Node, field string, lo, hi int) (int, error) {
	v, err := p.scalar(n, field)
	if err != nil {
		return 0, err
	}
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, p.errf(n, field, "%q is not a whole number", v)
	}
	if i < lo || i > hi {
		return 0, p.errf(n, field, "%d is outside %d..%d", i, lo, hi)
	}
	return i, nil
}

// duration reads a duration as the flags do: a bare number is seconds
// (runtime: 30), anything else Go's syntax (1m30s, 500ms).
func (p *parser) duration(n *yaml.Node, field string) (time.Duration, error) {
	v, err := p.scalar(n, field)
	if err != nil {
		return 0, err
	}
	d, err := units.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, p.errf(n, field, "%q is not a duration (e.g. 60s, 2m)", v)
	}
	return d, nil
}

func (p *parser) defaults(n *yaml.Node, d *Defaults) error {
	return p.mapping(n, "defaults", map[string]func(*yaml.Node) error{
		"runtime": func(v *yaml.Node) (err error) {
			if d.Runtime, err = p.duration(v, "runtime"); err == nil && d.Runtime == 0 {
				err = p.errf(v, "runtime", "must be positive")
			}
			return err
		},
		"ramp": func(v *yaml.Node) (err error) {
			d.Ramp, err = p.duration(v, "ramp")
			d.RampSet = true
			return err
		},
		"size": func(v *yaml.Node) (err error) {
			if d.Size, err = p.size(v, "size"); err == nil && d.Size <= 0 {
				err = p.errf(v, "size", "must be positive")
			}
			return err
		},
	})
}

func (p *parser) access(n *yaml.Node) (results.Access, error) {
	v, err := p.scalar(n, "access")
	if err != nil {
		return "", err
	}
	switch a := results.Access(v); a {
	case results.Random, results.Sequential:
		return a, nil
	}
	return "", p.errf(n, "access", "%q is not random or sequential", v)
}

// check validates pat, or reports err when it is already known.
func (p *parser) check(n *yaml.Node, pat results.Pattern, err error) error {
	if err == nil {
		err = pattern.Validate(pat)
	}
	if err != nil {
		var fe *pattern.FieldError
		if errors.As(err, &fe) {
			return p.errf(n, fe.Field, "%s", fe.Msg)
		}
		return p.errf(n, "", "%v", err)
	}
	return nil
}

// list checks that n is a non-empty YAML list under key, of what.
func (p *parser) list(n *yaml.Node, key, what string) error {
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, key, "want a list of %s", what)
	}
	if len(n.Content) == 0 {
		return p.errf(n, key, "empty list")
	}
	return nil
}

func (p *parser) patterns(n *yaml.Node, prof *Profile) error {
	if err := p.list(n, "patterns", "patterns"); err != nil {
		return err
	}
	for _, item := range n.Content {
		pat := results.Pattern{Access: results.Random, Jobs: 1}
		var haveBS, haveRead, haveQD bool
		var bssplit, dist, loads, sync string
		nomerges := -1
		err := p.mapping(item, "pattern", map[string]func(*yaml.Node) error{
			"nomerges":            func(v *yaml.Node) (err error) { nomerges, err = p.integer(v, "nomerges", 0, MaxNomerges); return err },
			"loads":               func(v *yaml.Node) error { return p.str(v, "loads", &loads) },
			"sync":                func(v *yaml.Node) error { return p.str(v, "sync", &sync) },
			"bssplit":             func(v *yaml.Node) error { return p.str(v, "bssplit", &bssplit) },
			"random_distribution": func(v *yaml.Node) error { return p.str(v, "random_distribution", &dist) },
			"compress_pct": func(v *yaml.Node) (err error) {
				pat.Compress, err = p.integer(v, "compress_pct", 0, 100)
				return err
			},
			"dedupe_pct": func(v *yaml.Node) (err error) { pat.Dedupe, err = p.integer(v, "dedupe_pct", 0, 100); return err },
			"access":     func(v *yaml.Node) (err error) { pat.Access, err = p.access(v); return err },
			"block_size": func(v *yaml.Node) (err error) {
				haveBS = true
				pat.BlockSize, err = p.size(v, "block_size")
				return err
			},
			"read_pct": func(v *yaml.Node) (err error) {
				haveRead = true
				pat.ReadPct, err = p.integer(v, "read_pct", 0, 100)
				return err
			},
			"queue_depth": func(v *yaml.Node) (err error) {
				haveQD = true
				pat.QueueDepth, err = p.integer(v, "queue_depth", 1, pattern.MaxQueueDepth)
				return err
			},
			"jobs": func(v *yaml.Node) (err error) { pat.Jobs, err = p.integer(v, "jobs", 1, pattern.MaxJobs); return err },
		})
		if err != nil {
			return err
		}
		// A mix sets the block size: its largest.
		if bssplit != "" && haveBS {
			return p.errf(item, "block_size", "not with bssplit, whose largest size is the pattern's block size")
		}
		haveBS = haveBS || bssplit != ""
		if err := p.requireAll(item, "pattern", []string{"block_size", "read_pct", "queue_depth"}, []bool{haveBS, haveRead, haveQD}); err != nil {
			return err
		}
		if bssplit != "" || dist != "" {
			var err error
			if pat, err = pattern.ApplyMix(pat, bssplit, dist); err != nil {
				return p.check(item, results.Pattern{}, err)
			}
		}
		if sync != "" {
			var err error
			if pat, err = pattern.WithSync(pat, sync); err != nil {
				return p.check(item, results.Pattern{}, err)
			}
		}
		if err := p.check(item, pat, nil); err != nil {
			return err
		}
		if err := p.add(prof, item, pat, loads, nomerges); err != nil {
			return err
		}
	}
	return nil
}

// add appends pat, read at item, to prof, with its loads and its
// nomerges (-1: none asked).
func (p *parser) add(prof *Profile, item *yaml.Node, pat results.Pattern, loads string, nomerges int) error {
	prof.Patterns = append(prof.Patterns, pat)
	p.lines = append(p.lines, item.Line)
	if nomerges >= 0 {
		prof.Nomerges = append(prof.Nomerges, Nomerges{Shape: pat, Value: nomerges})
	}
	if loads != "" {
		shares, err := pattern.ParseShares(loads)
		if err != nil {
			return p.errf(item, "loads", "%v", err)
		}
		prof.Loads = append(prof.Loads, OpenLoad{Shape: pat, Shares: shares})
	}
	return nil
}

// reference reads the sentinels' pattern, written as a pattern spec
// (randread:4k:32, as sweep's sentinel option takes it).
func (p *parser) reference(n *yaml.Node, prof *Profile) error {
	v, err := p.scalar(n, "reference")
	if err != nil {
		return err
	}
	spec, err := pattern.ParseSpec(v)
	if err != nil {
		return p.errf(n, "reference", "%v", err)
	}
	prof.Reference = &spec.Pattern
	return nil
}

func (p *parser) matrices(n *yaml.Node, prof *Profile) error {
	if err := p.list(n, "matrix", "matrices"); err != nil {
		return err
	}
	for _, m := range n.Content {
		if err := p.matrix(m, prof); err != nil {
			return err
		}
	}
	return nil
}

// axis parses a non-empty list with parse applied to each element.
func (p *parser) axis(n *yaml.Node, field string, parse func(*yaml.Node) error) error {
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, field, "want a list, e.g. [1, 32]")
	}
	if len(n.Content) == 0 {
		return p.errf(n, field, "empty axis: give at least one value")
	}
	for _, v := range n.Content {
		if err := parse(v); err != nil {
			return err
		}
	}
	return nil
}

// intAxis parses a matrix axis of integers between lo and hi into vals,
// noting in seen (when given) that the axis was there.
func (p *parser) intAxis(key string, lo, hi int, vals *[]int, seen *bool) func(*yaml.Node) error {
	return func(v *yaml.Node) error {
		if seen != nil {
			*seen = true
		}
		return p.axis(v, key, func(e *yaml.Node) error {
			x, err := p.integer(e, key, lo, hi)
			*vals = append(*vals, x)
			return err
		})
	}
}

func (p *parser) matrix(n *yaml.Node, prof *Profile) error {
	access := results.Random
	var bss []int64
	var reads, qds []int
	jobs := []int{1}
	var haveBS, haveRead, haveQD bool
	err := p.mapping(n, "matrix", map[string]func(*yaml.Node) error{
		"access": func(v *yaml.Node) (err error) { access, err = p.access(v); return err },
		"block_sizes": func(v *yaml.Node) error {
			haveBS = true
			return p.axis(v, "block_sizes", func(e *yaml.Node) error {
				s, err := p.size(e, "block_sizes")
				bss = append(bss, s)
				return err
			})
		},
		"read_pcts":    p.intAxis("read_pcts", 0, 100, &reads, &haveRead),
		"queue_depths": p.intAxis("queue_depths", 1, pattern.MaxQueueDepth, &qds, &haveQD),
		"jobs": func(v *yaml.Node) error {
			jobs = nil
			return p.intAxis("jobs", 1, pattern.MaxJobs, &jobs, nil)(v)
		},
	})
	if err != nil {
		return err
	}
	if err := p.requireAll(n, "matrix", []string{"block_sizes", "read_pcts", "queue_depths"}, []bool{haveBS, haveRead, haveQD}); err != nil {
		return err
	}
	for _, bs := range bss {
		for _, r := range reads {
			for _, q := range qds {
				for _, j := range jobs {
					pat := results.Pattern{Access: access, BlockSize: bs, ReadPct: r, QueueDepth: q, Jobs: j}
					if err := p.check(n, pat, nil); err != nil {
						return err
					}
					prof.Patterns = append(prof.Patterns, pat)
					p.lines = append(p.lines, n.Line)
				}
			}
		}
	}
	return nil
}

// yamlErrorLine digs the line number out of a yaml syntax error.
func yamlErrorLine(err error) int {
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		rest := s[i+5:]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(rest[:j]); err == nil {
			return n
		}
	}
	return 0
}

// File is the absolute path of the file p was read from, "" for a
// built-in profile.
func (p *Profile) File() string {
	if p.Source == "built-in" {
		return ""
	}
	abs, _ := filepath.Abs(p.Source)
	return abs
}

// WithContent is a copy of p whose writing patterns (and loads) carry
// the data content given, compress and dedupe percentages (see
// results.Pattern), in place of their own: a sweep's --compress and
// --dedupe. Patterns that only read are left alone. A bad percentage
// is a pattern.FieldError.
func (p *Profile) WithContent(compress, dedupe int) (*Profile, error) {
	q := *p
	set := func(pat results.Pattern) (results.Pattern, error) {
		if !pat.Writes() {
			return pat, nil
		}
		pat.Compress, pat.Dedupe = compress, dedupe
		return pat, pattern.Validate(pat)
	}
	q.Patterns = make([]results.Pattern, len(p.Patterns))
	for i, pat := range p.Patterns {
		var err error
		if q.Patterns[i], err = set(pat); err != nil {
			return nil, err
		}
	}
	q.Loads = make([]OpenLoad, len(p.Loads))
	for i, l := range p.Loads {
		var err error
		if l.Shape, err = set(l.Shape); err != nil {
			return nil, err
		}
		q.Loads[i] = l
	}
	return &q, nil
}
