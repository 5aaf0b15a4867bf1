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
		// What FormatSize prints parses back to within its rounding.
		back, err := ParseSize(FormatSize(n))
		if err != nil && n%1024 == 0 {
			t.Fatalf("FormatSize(%d) = %q does not parse: %v", n, FormatSize(n), err)
		}
		_ = back
	})
}
