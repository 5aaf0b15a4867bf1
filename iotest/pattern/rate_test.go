package pattern

import (
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want RateSpec
	}{
		{"5000", RateSpec{Rate: results.Rate{IOPS: 5000}}},
		{"1234.5", RateSpec{Rate: results.Rate{IOPS: 1234.5}}},
		{"riops=3000,wiops=1000", RateSpec{Rate: results.Rate{ReadIOPS: 3000, WriteIOPS: 1000}}},
		{"wiops=10", RateSpec{Rate: results.Rate{WriteIOPS: 10}}},
		{"80%", RateSpec{SharePct: 80}},
		{"100%", RateSpec{SharePct: 100}},
	} {
		got, err := ParseRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "0", "-5", "abc", "1e9", "0%", "120%", "riops=", "riops=1,riops=2", "xiops=4", "NaN", "Inf"} {
		if _, err := ParseRate(in); !IsField(err, "rate") {
			t.Errorf("ParseRate(%q): %v, want a rate field error", in, err)
		}
	}
}
