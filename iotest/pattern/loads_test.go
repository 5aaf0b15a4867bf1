package pattern

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/results"
)

func TestParseRateSteps(t *testing.T) {
	steps, err := ParseRateSteps("10%, 20%,50 %,100%,1000,2500.5")
	if err != nil {
		t.Fatal(err)
	}
	want := []RateStep{{Share: 10}, {Share: 20}, {Share: 50}, {Share: 100}, {IOPS: 1000}, {IOPS: 2500.5}}
	if !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
	if s := FormatRateSteps(steps); s != "10%,20%,50%,100%,1000,2500.5" {
		t.Errorf("FormatRateSteps = %q", s)
	}
	for _, bad := range []string{"", "10%,", "0%", "101%", "-5%", "x", "0", "0.5", "NaN", "Inf", "10%,10%", "1e3%"} {
		_, err := ParseRateSteps(bad)
		var ie *fault.InputError
		if !errors.As(err, &ie) || ie.Option != "rates" {
			t.Errorf("ParseRateSteps(%q) = %v, want an input error of rates", bad, err)
		}
	}
}

var rateShape = results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 16, Jobs: 1}

func TestRatePatterns(t *testing.T) {
	steps := []RateStep{{Share: 10}, {Share: 33.3}, {IOPS: 1234}, {IOPS: 4000}, {Share: 0.001}}
	pats := RatePatterns(rateShape, steps, results.ArrivalUniform, 12000)
	var names []string
	for _, p := range pats {
		names = append(names, p.Name())
		q := p
		q.Rate = results.Rate{}
		if q != rateShape {
			t.Errorf("%s: not the shape but for its rate", p.Name())
		}
	}
	// 33.3 % of 12,000 rounds to whole IOPS; 10 % is 1,200; 4,000 asked
	// as such twice (33.3 % is 3,996) stays apart; 0.001 % is one I/O a
	// second at the least.
	want := []string{"rand-4k-r70-qd16-rate1200-uniform", "rand-4k-r70-qd16-rate3996-uniform", "rand-4k-r70-qd16-rate1234-uniform",
		"rand-4k-r70-qd16-rate4000-uniform", "rand-4k-r70-qd16-rate1-uniform"}
	if !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	// Two steps that come to one rate are one pattern.
	if n := len(RatePatterns(rateShape, []RateStep{{Share: 50}, {IOPS: 6000}}, results.ArrivalPoisson, 12000)); n != 1 {
		t.Errorf("50%% of 12,000 and 6000: %d patterns, want 1", n)
	}
}

func TestRateShape(t *testing.T) {
	open := rateShape
	open.Rate = results.Rate{IOPS: 100}
	if s, err := RateShape([]results.Pattern{rateShape, open}); err != nil || s != rateShape {
		t.Errorf("one shape at two rates: %v, %v", s, err)
	}
	other := rateShape
	other.QueueDepth = 1
	_, err := RateShape([]results.Pattern{rateShape, other})
	var ie *fault.InputError
	if !errors.Is(err, ErrShapes) || !errors.As(err, &ie) || ie.Option != "rates" || !strings.Contains(err.Error(), "not 2") {
		t.Errorf("two shapes: %v", err)
	}
}
