package main

import (
	"testing"

	"github.com/iomatrix/iomatrix/iotest"
)

func TestCountersMatch(t *testing.T) {
	res := func(ours, kernel iotest.Completed) iotest.Result {
		return iotest.Result{Completed: ours, CgroupIOs: &kernel}
	}
	c := func(r, w uint64) iotest.Completed { return iotest.Completed{Reads: r, Writes: w} }
	for _, tc := range []struct {
		name   string
		r      iotest.Result
		split  int
		expect bool
	}{
		{"exact", res(c(4000, 400), c(4000, 400)), 1, true},
		{"within 0.5 %", res(c(4000, 400), c(3981, 401)), 1, true},
		{"kernel 1 % low", res(c(4000, 400), c(3960, 400)), 1, false},
		{"a few foreign reads on a small direction", res(c(467, 4060), c(482, 4060)), 1, true},
		{"32 foreign requests beyond 0.5 %", res(c(1000, 0), c(1037, 0)), 1, true},
		{"too many foreign requests", res(c(1000, 0), c(1038, 0)), 1, false},
		{"writes lost", res(c(1000, 1000), c(1000, 900)), 1, false},
		{"split requests", res(c(1000, 500), c(4000, 2000)), 4, true},
		{"split ignored", res(c(1000, 500), c(1000, 500)), 4, false},
		{"no kernel counters", iotest.Result{Completed: c(1, 1)}, 1, false},
	} {
		if got := countersMatch(tc.r, tc.split); got != tc.expect {
			t.Errorf("%s: countersMatch = %v, want %v", tc.name, got, tc.expect)
		}
	}
}
