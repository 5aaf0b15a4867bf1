package pattern

import (
	"errors"
	"fmt"
	"strings"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Limits of a pattern. They are part of the user interface: --help quotes them.
const (
	MinBlockSize  = 512
	MaxBlockSize  = 64 << 20
	MaxQueueDepth = 256
	MaxJobs       = 64
	// MaxBufferBytes caps jobs × queue depth × block size: the I/O memory
	// one run may pin.
	MaxBufferBytes = 4 << 30
)

// ErrBadPattern marks a pattern that cannot run; the message names the field.
var ErrBadPattern = errors.New("invalid pattern")

// FieldError names the field at fault, of a pattern or of the settings a
// run takes, so that each front end can name it in its own terms: a
// flag, a spec's field, a profile's key.
type FieldError struct {
	// Field is the pattern's name for it: "block_size", "read_pct",
	// "queue_depth", "jobs", "access", "bssplit", "random_distribution",
	// "rate", "arrival", "compress_pct", "dedupe_pct", "sync"; or a run
	// setting's ("runtime", "engine", …).
	Field string
	// Msg says what is wrong, naming any other field by its own name.
	Msg string
	// mention, set when Msg names another field, spells the message
	// with the fields named as a front end names them (see Text).
	mention *fault.Mention
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }
func (e *FieldError) Unwrap() error { return ErrBadPattern }

// Text is Msg with the other fields it names spelled by name.
func (e *FieldError) Text(name fault.Namer) string {
	if e.mention == nil {
		return e.Msg
	}
	return e.mention.Text(name)
}

// Mention is a FieldError of field whose message names other fields:
// text spells each as the reader's front end does.
func Mention(field string, text func(name fault.Namer) string) *FieldError {
	m := fault.NewMention(text)
	return &FieldError{Field: field, Msg: m.Error(), mention: m}
}

// Fieldf is a FieldError of field, its message formatted as by fmt.Sprintf.
func Fieldf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// IsField tells whether err is a FieldError about field.
func IsField(err error, field string) bool {
	var fe *FieldError
	return errors.As(err, &fe) && fe.Field == field
}

// Validate checks a pattern on its own: what the engine can run.
// CheckTarget adds a target's facts. A field at fault is a FieldError.
func Validate(p results.Pattern) error {
	switch p.Access {
	case results.Random, results.Sequential:
	default:
		return Fieldf("access", "%q is not random or sequential", p.Access)
	}
	// A mix's sizes are its own to check: its largest is the block size.
	if err := validateBSSplit(p); err != nil {
		return err
	}
	if p.BlockSize < MinBlockSize || p.BlockSize > MaxBlockSize {
		return Fieldf("block_size", "%d bytes is outside %s..%s", p.BlockSize, units.FormatSize(MinBlockSize), units.FormatSize(MaxBlockSize))
	}
	if p.BlockSize%MinBlockSize != 0 {
		return Fieldf("block_size", "%d bytes is not a multiple of 512", p.BlockSize)
	}
	if p.ReadPct < 0 || p.ReadPct > 100 {
		return Fieldf("read_pct", "%d is outside 0..100", p.ReadPct)
	}
	if p.QueueDepth < 1 || p.QueueDepth > MaxQueueDepth {
		return Fieldf("queue_depth", "%d is outside 1..%d", p.QueueDepth, MaxQueueDepth)
	}
	if p.Jobs < 1 || p.Jobs > MaxJobs {
		return Fieldf("jobs", "%d is outside 1..%d", p.Jobs, MaxJobs)
	}
	if buf := int64(p.Jobs) * int64(p.QueueDepth) * p.BlockSize; buf > MaxBufferBytes {
		return Fieldf(sizeField(p), "jobs × queue depth × block size = %s of I/O buffers, more than %s", units.FormatSize(buf), units.FormatSize(MaxBufferBytes))
	}
	if err := validateRate(p); err != nil {
		return err
	}
	if err := validateContent(p); err != nil {
		return err
	}
	if err := validateSync(p); err != nil {
		return err
	}
	return validateDistribution(p)
}

// validateContent checks the written data's content: percentages, of a
// pattern that writes.
func validateContent(p results.Pattern) error {
	for _, c := range []struct {
		field string
		pct   int
	}{{"compress_pct", p.Compress}, {"dedupe_pct", p.Dedupe}} {
		if c.pct < 0 || c.pct > 100 {
			return Fieldf(c.field, "%d is outside 0..100", c.pct)
		}
		if c.pct > 0 && !p.Writes() {
			return Fieldf(c.field, "sets what writes carry, and the pattern only reads")
		}
	}
	return nil
}

// sizeField is the field that sets a pattern's block size: its mix's,
// when it has one.
func sizeField(p results.Pattern) string {
	if p.BSSplit != "" {
		return "bssplit"
	}
	return "block_size"
}

// validateBSSplit checks a pattern's block-size mix: it parses, is in
// the canonical form that makes equal patterns ==, and its sizes are
// sizes the engine can run.
func validateBSSplit(p results.Pattern) error {
	if p.BSSplit == "" {
		return nil
	}
	b, err := ParseBSSplit(p.BSSplit)
	if err != nil {
		return Fieldf("bssplit", "%s", mixMsg(err))
	}
	for _, s := range b.Sizes() {
		if s < MinBlockSize || s > MaxBlockSize || s%MinBlockSize != 0 {
			return Fieldf("bssplit", "size %s is not a multiple of 512 from %s to %s", units.FormatSize(s), units.FormatSize(MinBlockSize), units.FormatSize(MaxBlockSize))
		}
	}
	canonical, largest := b.Canonical(p.ReadPct)
	if canonical != p.BSSplit {
		return Fieldf("bssplit", "%q is not in canonical form %q", p.BSSplit, canonical)
	}
	if largest != p.BlockSize {
		return Fieldf("block_size", "%d bytes is not the mix's largest size, %d", p.BlockSize, largest)
	}
	return nil
}

// validateDistribution checks a pattern's offset distribution: it
// parses, is in canonical form, and applies to its access.
func validateDistribution(p results.Pattern) error {
	if p.Distribution != "" {
		d, err := ParseDistribution(p.Distribution)
		if err != nil {
			return Fieldf("random_distribution", "%s", mixMsg(err))
		}
		if d.String() != p.Distribution {
			return Fieldf("random_distribution", "%q is not in canonical form %q", p.Distribution, d.String())
		}
		if p.Access != results.Random {
			return Fieldf("random_distribution", "a skewed distribution applies to random offsets only")
		}
	}
	return nil
}

// Sizes are the sizes a pattern issues: its mix's, or its block size.
func Sizes(p results.Pattern) []int64 {
	if b, err := ParseBSSplit(p.BSSplit); p.BSSplit != "" && err == nil {
		return b.Sizes()
	}
	return []int64{p.BlockSize}
}

// CheckTarget checks a pattern that Validate passed against the facts of
// the target it is to run on: its direct-I/O alignment (0: none known)
// and the bytes it addresses (0: unknown). It checks nothing else: the
// pattern's own fields were checked where it was written.
func CheckTarget(p results.Pattern, align int64, size int64) error {
	for _, s := range Sizes(p) {
		if align > 0 && s%align != 0 {
			return Fieldf(sizeField(p), "%d bytes is not a multiple of the target's direct-I/O alignment %d", s, align)
		}
	}
	if size > 0 {
		need := p.BlockSize
		if p.Access == results.Sequential {
			need *= int64(p.Jobs)
		}
		if size < need {
			return Fieldf(sizeField(p), "target of %s is smaller than %s needed", units.FormatSize(size), units.FormatSize(need))
		}
	}
	return nil
}

// ApplyMix is p with a block-size mix (fio's bssplit syntax) and an
// offset distribution (fio's random_distribution syntax), each "" for
// none, in canonical form and checked on its own (Validate). With a mix,
// p's BlockSize becomes the mix's largest size. A field at fault is a
// FieldError, "bssplit" or "random_distribution".
func ApplyMix(p results.Pattern, bssplit, distribution string) (results.Pattern, error) {
	p, err := withMix(p, bssplit, distribution)
	if err != nil {
		return p, err
	}
	return p, validateMixed(p, bssplit)
}

// validateMixed is Validate of a pattern given the block-size mix
// bssplit ("" for none): the block size is then the mix's largest, so a
// fault of the block size is the mix's, even where the mix is a single
// size that the pattern keeps as its block size alone.
func validateMixed(p results.Pattern, bssplit string) error {
	err := Validate(p)
	var fe *FieldError
	if strings.TrimSpace(bssplit) != "" && errors.As(err, &fe) && fe.Field == "block_size" {
		named := *fe
		named.Field = "bssplit"
		return &named
	}
	return err
}

// withMix is p with its mix and distribution, each parsed, unchecked.
func withMix(p results.Pattern, bssplit, distribution string) (results.Pattern, error) {
	p, err := WithBSSplit(p, bssplit)
	if err != nil {
		return p, Fieldf("bssplit", "%s", mixMsg(err))
	}
	if p, err = WithDistribution(p, distribution); err != nil {
		return p, Fieldf("random_distribution", "%s", mixMsg(err))
	}
	return p, nil
}

// mixMsg is a mix's parse error without the sentinel's words: the
// FieldError names the field instead.
func mixMsg(err error) string {
	return strings.TrimPrefix(err.Error(), ErrBadMix.Error()+": ")
}
