package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/iotest"
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

// fakeRunner measures every pattern at a fixed closed-loop rate, and an
// open-loop one at its rate; it records what it ran.
type fakeRunner struct {
	ran []string
	max float64
}

func (f *fakeRunner) Run(_ context.Context, p results.Pattern, _ iotest.Options) (results.Result, error) {
	f.ran = append(f.ran, p.Name())
	iops := f.max
	r := results.Result{Name: p.Name(), Pattern: p}
	if p.Rate.Open() {
		iops = p.Rate.Total()
		r.Rate = &results.RateStats{TargetIOPS: iops, AchievedIOPS: iops, Sustained: true}
	}
	r.Total = results.Total{IOs: uint64(iops), IOPS: iops}
	return r, nil
}

type nullDisplay struct{ closed int }

func (*nullDisplay) Start(results.Pattern)   {}
func (*nullDisplay) Live(iotest.Progress)    {}
func (*nullDisplay) Finished(results.Result) {}
func (d *nullDisplay) Close()                { d.closed++ }

func TestRateSweepRun(t *testing.T) {
	steps := []RateStep{{Share: 50}, {Share: 100}, {IOPS: 700}}
	run := func(doc *results.Document) (*fakeRunner, *nullDisplay, error) {
		f, d := &fakeRunner{max: 2000}, &nullDisplay{}
		s := &RateSweep{Loop: &Loop{Runner: f, Display: d, Doc: doc}, Shape: rateShape, Steps: steps, Arrival: results.ArrivalPoisson}
		_, err := s.Run(context.Background())
		return f, d, err
	}
	doc := &results.Document{}
	f, d, err := run(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rand-4k-r70-qd16", "rand-4k-r70-qd16-rate1000", "rand-4k-r70-qd16-rate2000", "rand-4k-r70-qd16-rate700"}
	if !slices.Equal(f.ran, want) || len(doc.Results) != 4 || d.closed != 1 {
		t.Errorf("ran %v (%d results, display closed %d times), want %v", f.ran, len(doc.Results), d.closed, want)
	}
	// Resumed after the maximum and one load: the shares are those of
	// the maximum measured then, whatever the device does now.
	doc.Results = doc.Results[:2]
	doc.Results[0].Total.IOPS = 3000
	s := &RateSweep{Shape: rateShape, Steps: steps, Arrival: results.ArrivalPoisson}
	if n := s.Todo(doc); n != 3 {
		t.Errorf("Todo after the maximum of 3,000 and the load of 1,000: %d, want 3 (1,500, 3,000 and 700)", n)
	}
	if n := s.Todo(nil); n != 4 {
		t.Errorf("Todo of a new sweep: %d, want 4", n)
	}
	f, _, err = run(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rand-4k-r70-qd16-rate1500", "rand-4k-r70-qd16-rate3000", "rand-4k-r70-qd16-rate700"}; !slices.Equal(f.ran, want) {
		t.Errorf("resumed: ran %v, want %v", f.ran, want)
	}
	// A maximum that did no I/O has no shares.
	doc = &results.Document{Results: []results.Result{{Name: rateShape.Name(), Pattern: rateShape}}}
	if _, _, err := run(doc); !errors.Is(err, ErrNoMaximum) {
		t.Errorf("maximum of 0 IOPS: %v, want ErrNoMaximum", err)
	}
}

// A resumed load–latency sweep keeps its loads, arrivals and shape; a
// sweep of a profile is none.
func TestResumeRates(t *testing.T) {
	file := &results.RateSweepSettings{Shape: rateShape, Rates: "10%,50%", Arrival: results.ArrivalPoisson}
	other := rateShape
	other.BlockSize = 8192
	for _, tc := range []struct {
		name    string
		file    *results.RateSweepSettings
		asked   *results.RateSweepSettings
		setting string
	}{
		{"nothing asked", file, nil, ""},
		{"the same", file, &results.RateSweepSettings{Rates: "10%,50%", Arrival: results.ArrivalPoisson, Shape: rateShape}, ""},
		{"other rates", file, &results.RateSweepSettings{Rates: "10%,20%"}, "rates"},
		{"other arrival", file, &results.RateSweepSettings{Arrival: results.ArrivalUniform}, "arrival"},
		{"other shape", file, &results.RateSweepSettings{Shape: other}, "pattern"},
		{"rates of a profile sweep", nil, &results.RateSweepSettings{Rates: "10%"}, "rates"},
		{"arrival of a profile sweep", nil, &results.RateSweepSettings{Arrival: results.ArrivalUniform}, "arrival"},
	} {
		d := &results.Document{Settings: results.Settings{Profile: "rates", RateSweep: tc.file}}
		r, err := Resume(d, Asked{RateSweep: tc.asked})
		var c *Conflict
		switch {
		case tc.setting == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.setting == "" && (r.RateSweep != tc.file || r.Profile.Name != "rates" || len(r.Profile.Patterns) != 1):
			t.Errorf("%s: resumed %+v, profile %+v", tc.name, r.RateSweep, r.Profile)
		case tc.setting != "" && (!errors.As(err, &c) || c.Setting != tc.setting):
			t.Errorf("%s: %v, want a conflict of %s", tc.name, err, tc.setting)
		}
	}
}
