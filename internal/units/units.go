// Package units parses and formats byte sizes and durations the way storage
// people write them: powers of two, "4k" = 4096; a bare number of seconds,
// "30", as fio reads it.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrBadSize is returned for strings that are not sizes.
var ErrBadSize = errors.New("not a size")

// sizeUnits maps suffixes to their power-of-two multiplier. Storage people
// write "4k" and mean 4096; decimal units would silently misalign blocks.
var sizeUnits = map[string]uint{
	"": 0, "b": 0,
	"k": 10, "kb": 10, "kib": 10,
	"m": 20, "mb": 20, "mib": 20,
	"g": 30, "gb": 30, "gib": 30,
	"t": 40, "tb": 40, "tib": 40,
	"p": 50, "pb": 50, "pib": 50,
	"e": 60, "eb": 60, "eib": 60,
}

// ParseSize parses sizes such as "4096", "4k", "16KiB", "1m", "16GiB" and
// "1.5g" as powers of two. The result must be a whole number of bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadSize)
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("%w: %q has no number", ErrBadSize, s)
	}
	shift, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("%w: %q has unknown unit %q (use k, m, g, t, KiB, MiB, GiB, TiB)", ErrBadSize, s, t[i:])
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q", ErrBadSize, s)
		}
		if n > uint64(math.MaxInt64)>>shift {
			return 0, fmt.Errorf("%w: %q is too large", ErrBadSize, s)
		}
		return int64(n << shift), nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: %q", ErrBadSize, s)
	}
	v := f * math.Ldexp(1, int(shift))
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%w: %q is too large", ErrBadSize, s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%w: %q is not a whole number of bytes", ErrBadSize, s)
	}
	return int64(v), nil
}

// FormatSize renders n bytes compactly with binary units ("4KiB", "1.5GiB").
func FormatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n)
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + units[u]
}

// ErrBadDuration is returned for strings that are not durations.
var ErrBadDuration = errors.New("not a duration")

// ParseDuration parses "30" and "1.5" as seconds, as fio reads its runtime
// and ramp_time, and everything else with Go's syntax ("1m30s", "500ms",
// "-1s"), so both habits give the same duration.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if isDecimal(t) {
		sec, err := strconv.ParseFloat(t, 64)
		if err != nil || math.Abs(sec) >= float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("%w: %q is out of range", ErrBadDuration, s)
		}
		return time.Duration(math.Round(sec * float64(time.Second))), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%w: %q (give seconds, e.g. 30, or a duration such as 1m30s or 500ms)", ErrBadDuration, s)
	}
	return d, nil
}

// isDecimal reports whether s is an optionally signed decimal number
// without exponent: what ParseFloat would also read as hex, "inf" or
// "1e3" is left to time.ParseDuration to refuse.
func isDecimal(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	digits, dots := 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}
