package units

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4k", "16KiB", "1.5g", "0", "8EiB", "-1", "1e3", "  2 m ", "99999999999999999999k", ".", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if !errors.Is(err, ErrBadSize) {
				t.Fatalf("ParseSize(%q): error %v is not ErrBadSize", s, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		// FormatSize rounds for display; a size that is a whole number below
		// 1024 of its unit prints exactly and parses back.
		m, k := n, 0
		for m >= 1024 && m%1024 == 0 && k < 6 {
			m, k = m/1024, k+1
		}
		if m < 1024 {
			f := FormatSize(n)
			if back, err := ParseSize(f); err != nil || back != n {
				t.Fatalf("FormatSize(%d) = %q parses to %d, %v", n, f, back, err)
			}
		}
	})
}

func FuzzParsePercent(f *testing.F) {
	for _, s := range []string{"5%", " 5 % ", "0.5", "-3%", "NaN", "1e1", "100", "0", ".", "%", "99999999999999999999999%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParsePercent(s)
		if err != nil {
			if !errors.Is(err, ErrBadPercent) {
				t.Fatalf("ParsePercent(%q): error %v is not ErrBadPercent", s, err)
			}
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("ParsePercent(%q) = %v", s, v)
		}
		// A value written back as a percentage reads the same.
		w := strconv.FormatFloat(v, 'f', -1, 64) + "%"
		if back, err := ParsePercent(w); err != nil || back != v {
			t.Fatalf("ParsePercent(%q) = %v; %q reads back as %v, %v", s, v, w, back, err)
		}
		if frac, err := ParseFraction(s); err == nil && (frac <= 0 || frac >= 1 || frac != v/100) {
			t.Fatalf("ParseFraction(%q) = %v for %v %%", s, frac, v)
		} else if err != nil && v > 0 && v < 100 {
			t.Fatalf("ParseFraction(%q): %v for %v %%", s, err, v)
		}
	})
}
