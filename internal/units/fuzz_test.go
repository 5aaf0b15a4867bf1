package units

import (
	"errors"
	"strings"
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
		// FormatSize rounds for display; where it prints a whole number of
		// its unit, that parses back to the same size.
		f := FormatSize(n)
		if !strings.Contains(f, ".") {
			if back, err := ParseSize(f); err != nil || back != n {
				t.Fatalf("FormatSize(%d) = %q parses to %d, %v", n, f, back, err)
			}
		}
	})
}
