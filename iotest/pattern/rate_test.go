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
		{"riops=700,wiops=270,wburst=98,wburst-iops=196", RateSpec{Rate: results.Rate{ReadIOPS: 700, WriteIOPS: 270, BurstSize: 98, BurstIOPS: 196}}},
		{"wiops=200,wburst=50", RateSpec{Rate: results.Rate{WriteIOPS: 200, BurstSize: 50, BurstIOPS: 200}}},
	} {
		got, err := ParseRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "0", "-5", "abc", "1e9", "0%", "120%", "riops=", "riops=1,riops=2", "xiops=4", "NaN", "Inf",
		"wiops=100,wburst=1", "wiops=100,wburst=2.5", "wiops=100,wburst-iops=50", "riops=100,wburst=8", "wiops=100,wburst=8,wburst-iops=101",
		"wiops=100,wburst=8,wburst=9", "5000,wburst=8"} {
		if _, err := ParseRate(in); !IsField(err, "rate") {
			t.Errorf("ParseRate(%q): %v, want a rate field error", in, err)
		}
	}
}

// Write bursts are checked with the pattern: a burst of two writes or
// more, among a rate per direction's writes.
func TestValidateBurst(t *testing.T) {
	base := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 8, Jobs: 1}
	for _, c := range []struct {
		rate results.Rate
		ok   bool
	}{
		{results.Rate{ReadIOPS: 700, WriteIOPS: 300, BurstIOPS: 200, BurstSize: 100}, true},
		{results.Rate{ReadIOPS: 700, WriteIOPS: 300, BurstIOPS: 300, BurstSize: 2}, true},
		{results.Rate{ReadIOPS: 700, WriteIOPS: 300, BurstIOPS: 301, BurstSize: 2}, false},
		{results.Rate{ReadIOPS: 700, WriteIOPS: 300, BurstIOPS: 200, BurstSize: 1}, false},
		{results.Rate{ReadIOPS: 700, WriteIOPS: 300, BurstIOPS: 200}, false},
		{results.Rate{ReadIOPS: 700, WriteIOPS: 300, BurstSize: 8}, false},
		{results.Rate{IOPS: 1000, BurstIOPS: 200, BurstSize: 8}, false},
		{results.Rate{ReadIOPS: 700, WriteIOPS: 300, BurstIOPS: 200, BurstSize: MaxBurst + 1}, false},
	} {
		p := base
		p.Rate = c.rate
		if err := validateRate(p); (err == nil) != c.ok || err != nil && !IsField(err, "rate") {
			t.Errorf("%+v: %v, want ok %v", c.rate, err, c.ok)
		}
	}
}
