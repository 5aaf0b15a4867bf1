package units

import (
	"errors"
	"testing"
	"time"
)

// fio reads a bare number as seconds; Go's syntax keeps working.
func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"2", 2 * time.Second},
		{" 30 ", 30 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"0", 0},
		{"-1", -time.Second},
		{"1m30s", 90 * time.Second},
		{"500ms", 500 * time.Millisecond},
		{"2h", 2 * time.Hour},
		{"-1s", -time.Second},
	} {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "abc", "1e3", "inf", "0x10", "1..2", "--5", "2 s x", "99999999999"} {
		if d, err := ParseDuration(in); !errors.Is(err, ErrBadDuration) {
			t.Errorf("ParseDuration(%q) = %v, %v; want ErrBadDuration", in, d, err)
		}
	}
}
