package units

import (
	"errors"
	"testing"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"4096": 4096, "4k": 4096, "4K": 4096, "4KiB": 4096, "4kb": 4096, "16KiB": 16384,
		"1m": 1 << 20, "1MiB": 1 << 20, "16GiB": 16 << 30, "16g": 16 << 30, "1.5g": 3 << 29,
		"512b": 512, "1EiB": 1 << 60, " 8k ": 8192, "0": 0,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "4x", "-4k", "1.3b", "8EiB", "99999999999999999999", "4 k b", "1e3", "NaN"} {
		if _, err := ParseSize(in); !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseSize(%q) error = %v, want ErrBadSize", in, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{512: "512B", 4096: "4KiB", 1 << 30: "1GiB", 3 << 29: "1.5GiB", 1000: "1000B"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
