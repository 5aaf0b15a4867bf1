package pattern

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Fields are a pattern as a user writes it, field by field: run's flags,
// or the words of a spec (ParseSpec). Build reads them.
type Fields struct {
	// RW is fio's --rw word: randread, randwrite, randrw, read or write.
	RW string
	// BlockSize is a size (4k = 4096). With BSSplit it is not read, and
	// BlockSizeGiven refuses it: the mix's largest size is the pattern's.
	BlockSize      string
	BlockSizeGiven bool
	// ReadMix is the read percentage of randrw; ReadMixGiven refuses it
	// for another RW, or beside a rate per direction (which sets it).
	ReadMix      int
	ReadMixGiven bool
	QueueDepth   int
	Jobs         int
	// BSSplit and Distribution take fio's bssplit and random_distribution
	// syntax; "" for none.
	BSSplit, Distribution string
	// Rate makes the pattern open-loop (ParseRate's syntax; "" for a
	// closed loop), its I/Os arriving as Arrival says ("" is poisson);
	// ArrivalGiven refuses an arrival without a rate.
	Rate         string
	Arrival      string
	ArrivalGiven bool
	// Compress and Dedupe are the written data's content (see
	// results.Pattern): percentages, 0 for random, unique data.
	Compress, Dedupe int
	// Sync is the durable-write mode (ParseSync's syntax; "" is none).
	Sync string
}

// rwWords are the RW words with the access and read share they stand for;
// randrw's share is RWMIX.
var rwWords = map[string]struct {
	access  results.Access
	readPct int
}{
	"randread": {results.Random, 100}, "randwrite": {results.Random, 0}, "randrw": {results.Random, 50},
	"read": {results.Sequential, 100}, "write": {results.Sequential, 0},
}

// Build is the pattern the fields write, checked on its own (Validate):
// parsed and checked here once, for every front end. SharePct is the
// share of the pattern's closed-loop maximum (in percent) its rate asks
// for, which is measured first: the pattern is then returned closed-loop,
// its rate set once the maximum is known (0: the rate, if any, is set).
// The field at fault is a FieldError whose message names other fields
// through Text.
func Build(f Fields) (p results.Pattern, sharePct float64, err error) {
	w, ok := rwWords[f.RW]
	if !ok {
		return p, 0, Fieldf("access", "%q is not one of randread, randwrite, randrw, read, write", f.RW)
	}
	p = results.Pattern{Access: w.access, ReadPct: w.readPct, QueueDepth: f.QueueDepth, Jobs: f.Jobs,
		Compress: f.Compress, Dedupe: f.Dedupe}
	if f.RW == "randrw" {
		p.ReadPct = f.ReadMix
	} else if f.ReadMixGiven {
		return p, 0, Mention("read_pct", func(n fault.Namer) string {
			return fmt.Sprintf("only applies to %s randrw (got %s %s)", n("access"), n("access"), f.RW)
		})
	}
	if f.BSSplit != "" && f.BlockSizeGiven {
		return p, 0, Mention("block_size", func(n fault.Namer) string {
			return "not with " + n("bssplit") + ", whose largest size is the pattern's block size"
		})
	}
	if f.BSSplit == "" {
		if p.BlockSize, err = units.ParseSize(f.BlockSize); err != nil {
			return p, 0, Fieldf("block_size", "%s", err.Error())
		}
	}
	if f.Rate == "" && f.ArrivalGiven {
		return p, 0, Mention("arrival", func(n fault.Namer) string { return "only applies with " + n("rate") })
	}
	if f.Rate != "" {
		if p, sharePct, err = withRate(p, f); err != nil {
			return p, 0, err
		}
	}
	if p, err = withMix(p, f.BSSplit, f.Distribution); err != nil {
		return p, 0, err
	}
	if p, err = WithSync(p, f.Sync); err != nil {
		return p, 0, err
	}
	if err := validateMixed(p, f.BSSplit); err != nil {
		return p, 0, err
	}
	if sharePct > 0 {
		p.Rate = results.Rate{} // set once the maximum is known
	}
	return p, sharePct, nil
}

// withRate is p with the fields' rate, and its read share set by a rate
// per direction; a share of the maximum gets a stand-in rate, so that
// Validate checks the rest.
func withRate(p results.Pattern, f Fields) (results.Pattern, float64, error) {
	spec, err := ParseRate(f.Rate)
	if err != nil {
		return p, 0, err
	}
	p.Rate = spec.Rate
	p.Rate.Arrival = f.Arrival
	if share := readShare(p.Rate); share >= 0 {
		got := func(n fault.Namer) string { return fmt.Sprintf("(got %s %s)", n("access"), f.RW) }
		switch {
		case f.ReadMixGiven:
			return p, 0, Mention("read_pct", func(n fault.Namer) string {
				return fmt.Sprintf("a rate per direction (%s %s) sets the mix", n("rate"), f.Rate)
			})
		case share == 100 && p.ReadPct != 100:
			return p, 0, Mention("rate", func(n fault.Namer) string { return "riops alone needs a read pattern " + got(n) })
		case share == 0 && p.ReadPct != 0:
			return p, 0, Mention("rate", func(n fault.Namer) string { return "wiops alone needs a write pattern " + got(n) })
		case share != 100 && share != 0 && f.RW != "randrw":
			return p, 0, Mention("rate", func(n fault.Namer) string {
				return "riops and wiops together need " + n("access") + " randrw " + got(n)
			})
		}
		p.ReadPct = share
	}
	if spec.SharePct > 0 {
		p.Rate.IOPS = 1 // checked with a stand-in rate; the real one is measured
	}
	return p, spec.SharePct, nil
}

// Spec is a pattern written in one word, RW:BS:QD[:RWMIX[:JOBS]],
// optionally followed by bssplit=MIX (BS then left empty),
// random_distribution=DIST, buffer_compress_percentage=PCT and
// dedupe_percentage=PCT, fio's options, and sync=MODE (run's --sync),
// separated by spaces:
// RW is randread, randwrite, randrw, read or write, BS a block size (4k =
// 4096), QD the queue depth per job, RWMIX the read percentage of randrw
// (default 50, may be left empty) and JOBS the number of jobs (default 1):
// the fields of run's --rw, --bs, --qd, --rwmix and --jobs, and fio's
// words for them.
type Spec struct {
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

// specFields are a spec's names for the fields FieldError names.
var specFields = map[string]string{"access": "RW", "block_size": "BS", "read_pct": "RWMIX", "queue_depth": "QD", "jobs": "JOBS",
	"bssplit": "bssplit", "random_distribution": "random_distribution",
	"compress_pct": "buffer_compress_percentage", "dedupe_pct": "dedupe_percentage", "sync": "sync"}

// specName spells a field as a spec does.
func specName(field string) string {
	if n, ok := specFields[field]; ok {
		return n
	}
	return field
}

// ParseSpec reads RW:BS:QD[:RWMIX[:JOBS]] and its options, and builds the
// pattern (Build); errors are SpecErrors.
func ParseSpec(spec string) (Spec, error) {
	bad := func(format string, args ...any) (Spec, error) {
		return Spec{}, &SpecError{Spec: spec, Msg: fmt.Sprintf(format, args...)}
	}
	words := strings.Fields(spec)
	if len(words) == 0 {
		return bad("want RW:BS:QD[:RWMIX[:JOBS]], e.g. randread:4k:32 or randrw:16k:8:70")
	}
	var bssplit, dist, sync string
	var compress, dedupe int
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "bssplit":
			bssplit = v
		case "random_distribution":
			dist = v
		case "buffer_compress_percentage", "dedupe_percentage":
			n, err := strconv.Atoi(v)
			if err != nil {
				return bad("%s %q is not a whole number", k, v)
			}
			if k == "dedupe_percentage" {
				dedupe = n
			} else {
				compress = n
			}
		case "sync":
			sync = v
		default:
			return bad("%q: after the pattern, want bssplit=MIX, random_distribution=DIST, buffer_compress_percentage=PCT, dedupe_percentage=PCT or sync=MODE", w)
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
	fields := Fields{RW: f[0], BlockSize: f[1], ReadMix: 50, ReadMixGiven: f[3] != "", Jobs: 1, BSSplit: bssplit, Distribution: dist,
		Compress: compress, Dedupe: dedupe, Sync: sync}
	for _, fd := range []struct {
		name, text string
		into       *int
	}{{"QD", f[2], &fields.QueueDepth}, {"RWMIX", f[3], &fields.ReadMix}, {"JOBS", f[4], &fields.Jobs}} {
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
	p, _, err := Build(fields)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return bad("%s: %s", specName(fe.Field), fe.Text(specName))
		}
		return bad("%v", err)
	}
	return Spec{Spec: spec, RW: f[0], Pattern: p}, nil
}
