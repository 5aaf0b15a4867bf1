package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrBadPercent is returned for strings that are not percentages, or not
// in the range asked for.
var ErrBadPercent = errors.New("not a percentage")

// ParsePercent parses a percentage written "5%", "5 %" or "5" (percent
// either way) as its number of percent. The number is decimal, signed or
// not, without exponent: what ParseFloat would also read as NaN, an
// infinity, hex or "1e1" is refused, as a bare-second duration's is.
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSpace(strings.TrimSuffix(t, "%"))
	if !isDecimal(t) {
		return 0, fmt.Errorf("%w: %q (e.g. 5%% or 5)", ErrBadPercent, s)
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: %q is out of range", ErrBadPercent, s)
	}
	return v, nil
}

// ParseFraction parses a percentage strictly between 0 and 100 % (a share
// of something, neither none nor all of it: a margin, a threshold) and
// returns it as a fraction: "10%" is 0.1.
func ParseFraction(s string) (float64, error) {
	v, err := ParsePercent(s)
	if err != nil {
		return 0, err
	}
	if v <= 0 || v >= 100 {
		return 0, fmt.Errorf("%w between 0 and 100: %q", ErrBadPercent, s)
	}
	return v / 100, nil
}

// FormatPercent writes a percentage as ParsePercent reads it back:
// 2.5 is "2.5%".
func FormatPercent(pct float64) string { return strconv.FormatFloat(pct, 'f', -1, 64) + "%" }
