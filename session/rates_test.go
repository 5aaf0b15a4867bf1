package session

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

var rateShape = results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 16, Jobs: 1}

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
	steps := []pattern.RateStep{{Share: 50}, {Share: 100}, {IOPS: 700}}
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
