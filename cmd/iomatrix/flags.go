package main

import (
	"errors"
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
