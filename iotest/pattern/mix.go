package pattern

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/results"
)

// The two pattern fields that take fio's syntax: the block-size mix
// (results.Pattern.BSSplit) and the offset distribution
// (results.Pattern.Distribution). Both are kept in the pattern as
// canonical strings so that a pattern stays comparable with ==; the
// engine, the importer and the front ends parse them here.

// ErrBadMix marks a block-size mix or a distribution that does not parse.
var ErrBadMix = errors.New("invalid mix")

// MaxSplitSizes is the most sizes a block-size mix may hold, over both
// directions: the engine counts each size's I/Os in a fixed array.
const MaxSplitSizes = 16

// SizeShare is one size of a block-size mix and its share of the I/Os of
// its direction, in whole percent.
type SizeShare struct {
	Size int64
	Pct  int
}

// BSSplit is a parsed block-size mix: the sizes of reads and of writes,
// each sorted by size, shares summing to 100.
type BSSplit struct {
	Read, Write []SizeShare
}

// ParseBSSplit reads fio's bssplit syntax: SIZE/PCT entries joined by ':',
// optionally a second list for writes after a comma (reads,writes). A share
// left empty takes an even part of what the others leave (fio's rule);
// the shares of each direction must sum to exactly 100.
func ParseBSSplit(s string) (BSSplit, error) {
	parts := strings.Split(strings.TrimSpace(s), ",")
	if len(parts) > 2 {
		return BSSplit{}, fmt.Errorf("%w: %q: at most two lists, reads,writes (trims are not measured)", ErrBadMix, s)
	}
	var b BSSplit
	var err error
	if b.Read, err = parseSplitList(parts[0]); err != nil {
		return BSSplit{}, fmt.Errorf("%w: %q: %s", ErrBadMix, s, err.Error())
	}
	b.Write = b.Read
	if len(parts) == 2 {
		if b.Write, err = parseSplitList(parts[1]); err != nil {
			return BSSplit{}, fmt.Errorf("%w: %q: writes: %s", ErrBadMix, s, err.Error())
		}
	}
	if n := len(b.Sizes()); n > MaxSplitSizes {
		return BSSplit{}, fmt.Errorf("%w: %q: %d sizes, at most %d", ErrBadMix, s, n, MaxSplitSizes)
	}
	return b, nil
}

func parseSplitList(s string) ([]SizeShare, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty list, want SIZE/PCT[:SIZE/PCT...], e.g. 4k/60:16k/30:1m/10")
	}
	var list []SizeShare
	sum, missing := 0, 0
	for _, e := range strings.Split(s, ":") {
		size, pct, _ := strings.Cut(strings.TrimSpace(e), "/")
		n, err := parseSplitSize(size)
		if err != nil {
			return nil, err
		}
		share := -1 // the rest
		if pct = strings.TrimSpace(pct); pct != "" {
			share, err = strconv.Atoi(pct)
			if err != nil || share < 0 || share > 100 {
				return nil, fmt.Errorf("share %q of %s is not a whole percentage 0..100", pct, size)
			}
			sum += share
		} else {
			missing++
		}
		if slices.ContainsFunc(list, func(x SizeShare) bool { return x.Size == n }) {
			return nil, fmt.Errorf("size %s is listed twice", size)
		}
		list = append(list, SizeShare{Size: n, Pct: share})
	}
	if missing > 0 {
		rest := 100 - sum
		if rest < 0 || rest%missing != 0 {
			return nil, fmt.Errorf("the %d%% left does not split evenly among the %d sizes without a share", rest, missing)
		}
		for i := range list {
			if list[i].Pct < 0 {
				list[i].Pct = rest / missing
				sum += list[i].Pct
			}
		}
	}
	if sum != 100 {
		return nil, fmt.Errorf("shares sum to %d%%, not 100%%", sum)
	}
	// A size with no share never runs: it is not part of the mix.
	list = slices.DeleteFunc(list, func(x SizeShare) bool { return x.Pct == 0 })
	slices.SortFunc(list, func(a, b SizeShare) int { return cmp.Compare(a.Size, b.Size) })
	return list, nil
}

// parseSplitSize reads a size as fio writes it in bssplit: bytes, or a
// number with k, m or g (powers of 1024; KiB, kb and the like too).
func parseSplitSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	shift := -1
	switch strings.TrimSuffix(strings.TrimSuffix(t[i:], "b"), "i") {
	case "":
		shift = 0
	case "k":
		shift = 10
	case "m":
		shift = 20
	case "g":
		shift = 30
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || shift < 0 || n <= 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q is not a block size (4k, 16k, 1m, or bytes)", s)
	}
	return n << shift, nil
}

// Sizes are the distinct sizes of both directions, smallest first.
func (b BSSplit) Sizes() []int64 {
	var s []int64
	for _, e := range append(slices.Clip(b.Read), b.Write...) {
		s = append(s, e.Size)
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// Canonical is the mix as Pattern.BSSplit holds it, for a pattern with
// readPct percent reads: the lists in fio's syntax, sizes ascending, the
// direction the pattern never issues dropped, one list when both
// directions are the same, and "" when the mix is a single size (the
// pattern's BlockSize then says it all). Largest is the largest size the
// pattern issues: its BlockSize, which sizes the I/O buffers.
func (b BSSplit) Canonical(readPct int) (canonical string, largest int64) {
	r, w := b.Read, b.Write
	switch readPct {
	case 100:
		w = r
	case 0:
		r = w
	}
	for _, e := range append(slices.Clip(r), w...) {
		largest = max(largest, e.Size)
	}
	if slices.Equal(r, w) {
		if len(r) == 1 {
			return "", largest
		}
		return formatSplitList(r), largest
	}
	return formatSplitList(r) + "," + formatSplitList(w), largest
}

func formatSplitList(l []SizeShare) string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = results.ShortSize(e.Size) + "/" + strconv.Itoa(e.Pct)
	}
	return strings.Join(parts, ":")
}

// Distribution is a parsed offset distribution of a random pattern, in
// fio's terms (random_distribution).
type Distribution struct {
	// Kind is DistUniform, DistZipf, DistPareto or DistNormal.
	Kind string
	// Param is zipf's theta, pareto's h, or normal's deviation in percent
	// of the target.
	Param float64
	// Center, in 0..1, places the hottest block at that fraction of the
	// target; -1 (no center given) is fio's default: a rotation drawn
	// from the seed for zipf and pareto, the middle for normal.
	Center float64
}

// The offset distributions (Distribution.Kind).
const (
	DistUniform = "uniform"
	DistZipf    = "zipf"
	DistPareto  = "pareto"
	DistNormal  = "normal"
)

// ParseDistribution reads fio's random_distribution syntax: uniform (fio's
// "random" too), zipf:THETA, pareto:H or normal:DEV, each optionally
// followed by :CENTER. THETA is positive and not 1, H in (0,1), DEV a
// percentage in [0,100), CENTER in [0,1].
func ParseDistribution(s string) (Distribution, error) {
	bad := func(format string, args ...any) (Distribution, error) {
		return Distribution{}, fmt.Errorf("%w: %q: %s", ErrBadMix, s, fmt.Sprintf(format, args...))
	}
	f := strings.Split(strings.ToLower(strings.TrimSpace(s)), ":")
	d := Distribution{Kind: f[0], Center: -1}
	switch d.Kind {
	case "", "uniform", "random":
		if len(f) > 1 {
			return bad("uniform takes no value")
		}
		return Distribution{Kind: DistUniform, Center: -1}, nil
	case DistZipf, DistPareto, DistNormal:
	default:
		return bad("want uniform, zipf:THETA, pareto:H or normal:DEV[%%], each with an optional :CENTER")
	}
	if len(f) < 2 || len(f) > 3 || f[1] == "" {
		return bad("want %s:VALUE[:CENTER]", d.Kind)
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(f[1], "%"), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return bad("%q is not a number", f[1])
	}
	d.Param = v
	switch d.Kind {
	case DistZipf:
		if v <= 0 || v == 1 {
			return bad("theta must be positive and not 1")
		}
	case DistPareto:
		if v <= 0 || v >= 1 {
			return bad("h must be between 0 and 1, both excluded")
		}
	case DistNormal:
		if v < 0 || v >= 100 {
			return bad("the deviation must be a percentage from 0 to under 100")
		}
	}
	if len(f) == 3 {
		c, err := strconv.ParseFloat(f[2], 64)
		if err != nil || !(c >= 0 && c <= 1) {
			return bad("center %q is not a fraction from 0 to 1", f[2])
		}
		d.Center = c
	}
	return d, nil
}

// Skewed tells whether the distribution is other than uniform.
func (d Distribution) Skewed() bool { return d.Kind != "" && d.Kind != DistUniform }

// String is the distribution as Pattern.Distribution holds it: fio's
// syntax with the shortest numbers, "" for uniform.
func (d Distribution) String() string {
	if !d.Skewed() {
		return ""
	}
	s := d.Kind + ":" + strconv.FormatFloat(d.Param, 'f', -1, 64)
	if d.Center >= 0 {
		s += ":" + strconv.FormatFloat(d.Center, 'f', -1, 64)
	}
	return s
}

// WithBSSplit is p with the block-size mix s (fio's bssplit syntax) in
// canonical form, and its BlockSize the mix's largest size; "" leaves p as
// it is. Set p's ReadPct first: the canonical form drops the direction p
// never issues.
func WithBSSplit(p results.Pattern, s string) (results.Pattern, error) {
	if strings.TrimSpace(s) == "" {
		return p, nil
	}
	b, err := ParseBSSplit(s)
	if err != nil {
		return p, err
	}
	p.BSSplit, p.BlockSize = b.Canonical(p.ReadPct)
	return p, nil
}

// WithDistribution is p with the offset distribution s (fio's
// random_distribution syntax) in canonical form; "" and uniform leave p
// uniform.
func WithDistribution(p results.Pattern, s string) (results.Pattern, error) {
	d, err := ParseDistribution(s)
	if err != nil {
		return p, err
	}
	p.Distribution = d.String()
	return p, nil
}
