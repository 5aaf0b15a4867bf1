package iotest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// PatternSpec is a pattern written in one word, RW:BS:QD[:RWMIX[:JOBS]],
// optionally followed by bssplit=MIX (BS then left empty) and
// random_distribution=DIST, fio's options, separated by spaces:
// RW is randread, randwrite, randrw, read or write, BS a block size (4k =
// 4096), QD the queue depth per job, RWMIX the read percentage of randrw
// (default 50, may be left empty) and JOBS the number of jobs (default 1):
// the fields of run's --rw, --bs, --qd, --rwmix and --jobs, and fio's
// words for them.
type PatternSpec struct {
	Spec    string // as written
	RW      string // fio's --rw, which is run's too
	Pattern results.Pattern
}

// SpecError is a pattern spec that does not parse, or whose pattern cannot
// run. Its message names the spec's fields (RW, BS, QD, RWMIX, JOBS).
type SpecError struct {
	Spec string
	Msg  string
}

func (e *SpecError) Error() string { return strconv.Quote(e.Spec) + ": " + e.Msg }
func (e *SpecError) Unwrap() error { return ErrBadPattern }

// rwWords are the RW words with the access and read share they stand for;
// randrw's share is RWMIX.
var rwWords = map[string]struct {
	access  results.Access
	readPct int
}{
	"randread": {results.Random, 100}, "randwrite": {results.Random, 0}, "randrw": {results.Random, 50},
	"read": {results.Sequential, 100}, "write": {results.Sequential, 0},
}

// specFields are a spec's names for the fields FieldError names.
var specFields = map[string]string{"access": "RW", "block_size": "BS", "read_pct": "RWMIX", "queue_depth": "QD", "jobs": "JOBS",
	"bssplit": "bssplit", "random_distribution": "random_distribution"}

// ParsePatternSpec reads RW:BS:QD[:RWMIX[:JOBS]] and checks the pattern on
// its own (ValidatePattern); errors are SpecErrors.
func ParsePatternSpec(spec string) (PatternSpec, error) {
	bad := func(format string, args ...any) (PatternSpec, error) {
		return PatternSpec{}, &SpecError{Spec: spec, Msg: fmt.Sprintf(format, args...)}
	}
	words := strings.Fields(spec)
	if len(words) == 0 {
		return bad("want RW:BS:QD[:RWMIX[:JOBS]], e.g. randread:4k:32 or randrw:16k:8:70")
	}
	var bssplit, dist string
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "bssplit":
			bssplit = v
		case "random_distribution":
			dist = v
		default:
			return bad("%q: after the pattern, want bssplit=MIX or random_distribution=DIST", w)
		}
	}
	f := strings.Split(words[0], ":")
	if len(f) < 3 || len(f) > 5 {
		return bad("want RW:BS:QD[:RWMIX[:JOBS]], e.g. randread:4k:32 or randrw:16k:8:70")
	}
	f = append(f, "", "")[:5]
	if f[2] == "" {
		return bad("QD is missing")
	}
	p := results.Pattern{Jobs: 1}
	readMix := 50
	for _, fd := range []struct {
		name, text string
		into       *int
	}{{"QD", f[2], &p.QueueDepth}, {"RWMIX", f[3], &readMix}, {"JOBS", f[4], &p.Jobs}} {
		if fd.text == "" {
			continue // the default
		}
		n, err := strconv.Atoi(fd.text)
		if err != nil {
			return bad("%s %q is not a whole number", fd.name, fd.text)
		}
		*fd.into = n
	}
	if bssplit != "" && f[1] != "" {
		return bad("BS: leave it empty with bssplit, whose largest size is the pattern's block size")
	}
	bs := f[1]
	if bssplit != "" {
		bs = strconv.Itoa(MinBlockSize) // the mix replaces it
	}
	p, err := BuildPattern(f[0], bs, readMix, p.QueueDepth, p.Jobs)
	if f[0] != "randrw" && f[3] != "" && !IsField(err, "access") {
		return bad("RWMIX: only applies to RW randrw (got RW %s)", f[0])
	}
	if err == nil {
		p, err = ApplyMix(p, bssplit, dist)
	}
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return bad("%s: %s", specFields[fe.Field], fe.Msg)
		}
		return bad("%v", err)
	}
	return PatternSpec{Spec: spec, RW: f[0], Pattern: p}, nil
}

// BuildPattern is the pattern written as fio's RW word (randread,
// randwrite, randrw, read or write), a block size, the read percentage
// of randrw (ignored for the others), the queue depth and the jobs,
// checked on its own (ValidatePattern): the field at fault is a
// FieldError, which each front end names in its own terms.
func BuildPattern(rw, blockSize string, readMix, queueDepth, jobs int) (results.Pattern, error) {
	p := results.Pattern{QueueDepth: queueDepth, Jobs: jobs}
	w, ok := rwWords[rw]
	if !ok {
		return p, &FieldError{"access", fmt.Sprintf("%q is not one of randread, randwrite, randrw, read, write", rw)}
	}
	p.Access, p.ReadPct = w.access, w.readPct
	if rw == "randrw" {
		p.ReadPct = readMix
	}
	bs, err := units.ParseSize(blockSize)
	if err != nil {
		return p, &FieldError{"block_size", err.Error()}
	}
	p.BlockSize = bs
	return p, ValidatePattern(p)
}
