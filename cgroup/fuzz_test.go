package cgroup

import (
	"errors"
	"strings"
	"testing"
)

func FuzzParseCap(f *testing.F) {
	for _, s := range []string{"riops=3000,wiops=3000", "rbps=100MiB", "riops=-1", "iops=5", "riops=1,riops=2", "", ",", "wbps=1.5g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseCap(s)
		if err != nil {
			if !errors.Is(err, ErrBadCap) {
				t.Fatalf("ParseCap(%q): %v is not ErrBadCap", s, err)
			}
			return
		}
		if l.Empty() {
			t.Fatalf("ParseCap(%q) accepted a cap that limits nothing", s)
		}
	})
}

func FuzzParseIOMax(f *testing.F) {
	for _, s := range []string{"8:16 rbps=max wbps=max riops=max wiops=120\n", "254:0 riops=3000\n", "x", "1:2 riops", "3:4 wiops=99999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseIOMax(strings.NewReader(s))
		if err != nil {
			return
		}
		for d, l := range m {
			if l.Device != d {
				t.Fatalf("limit of %s filed under %s", l.Device, d)
			}
		}
	})
}
