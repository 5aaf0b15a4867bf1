package units

import (
	"errors"
	"math"
	"testing"
)

// A percentage is written "5%", "5 %" or "5", percent each way; a
// fraction is one strictly between none and all (0: refused as one).
func TestParsePercent(t *testing.T) {
	for _, c := range []struct {
		in       string
		pct      float64
		fraction float64
	}{
		{"5%", 5, 0.05},
		{"5", 5, 0.05},
		{" 5 % ", 5, 0.05},
		{"0.5%", 0.5, 0.005},
		{".5", 0.5, 0.005},
		{"99.9", 99.9, 0.999},
		{"+2", 2, 0.02},
		{"0", 0, 0},
		{"100%", 100, 0},
		{"150", 150, 0},
		{"-3%", -3, 0},
	} {
		if got, err := ParsePercent(c.in); err != nil || got != c.pct {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", c.in, got, err, c.pct)
		}
		got, err := ParseFraction(c.in)
		if c.fraction == 0 {
			if !errors.Is(err, ErrBadPercent) {
				t.Errorf("ParseFraction(%q) = %v, %v; want ErrBadPercent", c.in, got, err)
			}
		} else if err != nil || math.Abs(got-c.fraction) > 1e-15 {
			t.Errorf("ParseFraction(%q) = %v, %v; want %v", c.in, got, err, c.fraction)
		}
	}
	for _, in := range []string{"", "%", "tight", "NaN", "inf", "-Inf%", "1e1", "0x10", "5%%", "% 5", "1..2", "5 5", "5‰"} {
		if v, err := ParsePercent(in); !errors.Is(err, ErrBadPercent) {
			t.Errorf("ParsePercent(%q) = %v, %v; want ErrBadPercent", in, v, err)
		}
		if v, err := ParseFraction(in); !errors.Is(err, ErrBadPercent) {
			t.Errorf("ParseFraction(%q) = %v, %v; want ErrBadPercent", in, v, err)
		}
	}
}

// FormatPercent writes what ParsePercent reads back.
func TestFormatPercentRoundTrip(t *testing.T) {
	for _, v := range []float64{2, 2.5, 0.1, 33.333} {
		if got, err := ParsePercent(FormatPercent(v)); err != nil || got != v {
			t.Errorf("%v: %q read back as %v, %v", v, FormatPercent(v), got, err)
		}
	}
}
