package units

import "testing"

func TestThousands(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		dec  int
		want string
	}{
		{0, 0, "0"}, {999, 0, "999"}, {1000, 0, "1,000"}, {999999.6, 0, "1,000,000"},
		{1234567.891, 1, "1,234,567.9"}, {-1234.5, 2, "-1,234.50"}, {12, 3, "12.000"}, {-999, 0, "-999"},
	} {
		if got := Thousands(tc.v, tc.dec); got != tc.want {
			t.Errorf("Thousands(%v, %d) = %q, want %q", tc.v, tc.dec, got, tc.want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 patterns", 1: "1 pattern", 2: "2 patterns", 1000: "1,000 patterns"} {
		if got := Count(n, "pattern"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
