package iotest

import (
	"math"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// countSteps runs a schedule to the end of cycles of prof and counts each
// step's reads and writes.
func countSteps(s schedule, prof *RateProfile, cycles int) (reads, writes []int) {
	n := len(prof.Reads)
	reads, writes = make([]int, n*cycles), make([]int, n*cycles)
	end := int64(n*cycles) * prof.StepNS
	for {
		at, write := s.due()
		if at >= end {
			return reads, writes
		}
		i := int(at / prof.StepNS)
		if write {
			writes[i]++
		} else {
			reads[i]++
		}
		s.take()
	}
}

// A profile's uniform arrivals: each step holds exactly its rate's
// count, evenly spaced, a step of rate 0 none, and the profile starts
// again when it ends; jobs share it.
func TestProfileUniform(t *testing.T) {
	prof := &RateProfile{StepNS: 1e9, Reads: []float64{100, 0, 300, 50}, Writes: []float64{10, 20, 0, 0}}
	s := newSchedule(results.Rate{ReadIOPS: 112.5, WriteIOPS: 7.5, Arrival: results.ArrivalUniform}, 1, 0, 1, prof)
	reads, writes := countSteps(s, prof, 2)
	for i := range reads {
		if reads[i] != int(prof.Reads[i%4]) || writes[i] != int(prof.Writes[i%4]) {
			t.Errorf("step %d: %d reads, %d writes; want %v and %v", i, reads[i], writes[i], prof.Reads[i%4], prof.Writes[i%4])
		}
	}
	// Evenly spaced within a step: the third step's reads every 1/300 s.
	s = newSchedule(results.Rate{ReadIOPS: 112.5, WriteIOPS: 7.5, Arrival: results.ArrivalUniform}, 1, 0, 1, prof)
	for {
		at, write := s.due()
		if at >= 2e9 && !write {
			for k := range 300 {
				at, _ := s.due()
				if want := 2e9 + float64(k)*1e9/300; math.Abs(float64(at)-want) > 1 {
					t.Fatalf("read %d of the third step at %d ns, want %.0f", k, at, want)
				}
				s.take()
			}
			break
		}
		s.take()
	}
	// Two jobs: each half of every step.
	half, _ := countSteps(newSchedule(results.Rate{ReadIOPS: 112.5, WriteIOPS: 7.5, Arrival: results.ArrivalUniform}, 2, 1, 1, prof), prof, 1)
	if half[0] != 50 || half[2] != 150 || half[3] != 25 {
		t.Errorf("one of two jobs: %v reads", half)
	}
}

// A profile's poisson arrivals: each step's count within five standard
// deviations of its rate's, none in a step of rate 0.
func TestProfilePoisson(t *testing.T) {
	prof := &RateProfile{StepNS: 1e8, Reads: []float64{20000, 0, 5000, 100000}, Writes: []float64{0, 40000, 0, 1000}}
	r, w := prof.MeanRates()
	s := newSchedule(results.Rate{ReadIOPS: r, WriteIOPS: w}, 1, 0, 3, prof)
	reads, writes := countSteps(s, prof, 3)
	for i := range reads {
		for _, c := range []struct {
			got  int
			rate float64
		}{{reads[i], prof.Reads[i%4]}, {writes[i], prof.Writes[i%4]}} {
			want := c.rate * 0.1
			if math.Abs(float64(c.got)-want) > 5*math.Sqrt(want)+0.5 {
				t.Errorf("step %d: %d arrivals, want %.0f", i, c.got, want)
			}
		}
	}
}

// A profile is checked against its pattern before any I/O.
func TestProfileCheck(t *testing.T) {
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 50, QueueDepth: 4, Jobs: 1, Rate: results.Rate{ReadIOPS: 150, WriteIOPS: 5}}
	good := RateProfile{StepNS: 1e9, Reads: []float64{100, 200}, Writes: []float64{0, 10}}
	if err := good.Check(p); err != nil {
		t.Errorf("a good profile: %v", err)
	}
	for _, c := range []struct {
		prof RateProfile
		p    results.Pattern
		want string
	}{
		{RateProfile{StepNS: 1e5, Reads: good.Reads, Writes: good.Writes}, p, "a step of 100µs: at least 1ms"},
		{RateProfile{StepNS: 1e9, Reads: good.Reads, Writes: []float64{1}}, p, "2 read and 1 write steps"},
		{RateProfile{StepNS: 1e9}, p, "0 read and 0 write steps"},
		{RateProfile{StepNS: 1e9, Reads: []float64{100, math.NaN()}, Writes: good.Writes}, p, "step 1: NaN is not a rate"},
		{RateProfile{StepNS: 1e9, Reads: []float64{100, -1}, Writes: good.Writes}, p, "step 1: -1 is not a rate"},
		{good, results.Pattern{Rate: results.Rate{IOPS: 155}}, "a rate per direction"},
		{RateProfile{StepNS: 1e9, Reads: []float64{100, 100}, Writes: good.Writes}, p, "its means 100 r/s and 5 w/s are not the pattern's rates 150 and 5"},
	} {
		if err := c.prof.Check(c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.prof, err, c.want)
		}
	}
}
