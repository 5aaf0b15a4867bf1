package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/units"
)

// durationValue is a time.Duration flag that also reads a bare number as
// seconds ("--runtime 30"), as fio does, so that habit carries over; Go's
// forms ("1m30s", "500ms") keep working.
type durationValue struct{ d *time.Duration }

func durationVar(f *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	f.Var(durationValue{p}, name, usage)
}

func (v durationValue) Set(s string) error {
	d, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// String gives "0" for zero, which pflag takes for "no default worth
// showing" in --help.
func (v durationValue) String() string {
	if *v.d == 0 {
		return "0"
	}
	return v.d.String()
}

func (durationValue) Type() string { return "duration" }

// flagParseError turns pflag's parse errors into one line in the user's
// terms: a bad value names the flag and what it takes, never strconv's
// internals; a fio option iomatrix lacks says what to do instead.
func flagParseError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) {
		if hint := fioHint(cmd, unknown.GetSpecifiedName()); hint != "" {
			return usagef("--%s: %s", unknown.GetSpecifiedName(), hint)
		}
	}
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		return usagef("--%s: %s", bad.GetFlag().Name, invalidValue(bad))
	}
	return fault.AsInput(err)
}

// invalidValue says why a flag's value was refused.
func invalidValue(e *pflag.InvalidValueError) string {
	var num *strconv.NumError
	if !errors.As(e, &num) {
		return errors.Unwrap(e).Error() // iomatrix's own Value types word it
	}
	kind := e.GetFlag().Value.Type()
	switch {
	case kind == "bool":
		return strconv.Quote(e.GetValue()) + " must be true or false"
	case errors.Is(num.Err, strconv.ErrRange):
		return strconv.Quote(e.GetValue()) + " is out of range"
	case strings.HasPrefix(kind, "uint"):
		return strconv.Quote(e.GetValue()) + " must be a non-negative integer"
	case strings.HasPrefix(kind, "int"):
		return strconv.Quote(e.GetValue()) + " must be an integer"
	}
	return strconv.Quote(e.GetValue()) + " must be a number"
}

// choiceValue is a string flag that takes one of a few words, refused as
// the flag is parsed, the words listed; alias words stand for one of
// them (fio's "normal" for text), refused ones say why.
type choiceValue struct {
	p       *string
	choices []string
	alias   map[string]string
	refused map[string]string
}

// choiceVar defines a flag that takes one of choices, value by default.
func choiceVar(f *pflag.FlagSet, p *string, name, value string, choices []string, usage string) *choiceValue {
	*p = value
	v := &choiceValue{p: p, choices: choices}
	f.Var(v, name, usage)
	return v
}

func (v *choiceValue) Set(s string) error {
	if why, ok := v.refused[s]; ok {
		return errors.New(why)
	}
	if a, ok := v.alias[s]; ok {
		s = a
	}
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("%q is not one of %s", s, strings.Join(v.choices, ", "))
	}
	*v.p = s
	return nil
}

func (v *choiceValue) String() string { return *v.p }

// Type is a string's: --help shows the flag as it would a plain string.
func (v *choiceValue) Type() string { return "string" }

// formatVar defines --format: one of choices, text by default; fio's
// names of its output formats are understood.
func formatVar(f *pflag.FlagSet, p *string, choices []string, usage string) {
	v := choiceVar(f, p, "format", "text", choices, usage)
	v.alias = map[string]string{"normal": "text"} // fio's name of its text output
	v.refused = map[string]string{"json+": "json+ is fio's; iomatrix's json already holds the latency percentiles: use --format json"}
}

// fractionValue is a percentage flag strictly between 0 and 100 %
// ("10%" or "10"), held as a fraction (units.ParseFraction) beside the
// text given, which --help shows as the default.
type fractionValue struct {
	text string
	p    *float64
}

// fractionVar defines a percentage flag, value ("10%") by default.
func fractionVar(f *pflag.FlagSet, p *float64, name, value, usage string) {
	v := &fractionValue{p: p}
	if err := v.Set(value); err != nil {
		panic(err) // a default that does not parse is a defect of the build
	}
	f.Var(v, name, usage)
}

func (v *fractionValue) Set(s string) error {
	x, err := units.ParseFraction(s)
	if err != nil {
		return fmt.Errorf("%q is not a percentage between 0 and 100 (e.g. 10%%)", s)
	}
	v.text, *v.p = s, x
	return nil
}

func (v *fractionValue) String() string { return v.text }
func (v *fractionValue) Type() string   { return "string" }
