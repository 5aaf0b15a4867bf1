package units

import (
	"errors"
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
