package rehearse

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// A system of a version 2 workload file has a shape (fit.Shape), which a
// rehearsal replays unless told to keep to flat rates:
//   - its size mix: the pattern's block-size mix;
//   - its durable writes: an fdatasync after every N data writes, N the
//     data writes per durable write to two decimals; the sync is queued
//     once the write completes, as a database calls fdatasync after its
//     log's write. The workload's writes count each durable write's cache
//     flush, an empty write to the kernel (the cgroup's counters and a
//     cap's budget count it so), so that the data writes are the writes
//     less the durable writes, and the flushes the syncs' own: replaying
//     the writes whole as data and syncing besides would issue each
//     flush twice, once as a data write that takes the volume's time.
//     Where the durable writes are not fewer than the writes, the writes
//     are replayed whole, a sync after each;
//   - its write bursts: that many of its data writes a second arrive in
//     bursts of the given size at one moment, as a background writer
//     (InnoDB's page cleaner) queues a batch of pages at once, the
//     other writes one by one (their share of the data writes kept step
//     by step along the timeline); a burst waits for the system's free
//     slots (its concurrency), so that its writes' response times count
//     the queue a batch makes;
//   - its timeline: each direction's observed rate, step by step, raised
//     by the file's headroom, the steps shortened by the speed (an hour
//     at speed 10 replays in six minutes at the observed rates), every
//     system's from the same moment of the observation.

// ShapeOptions are how a rehearsal replays the systems' shapes.
type ShapeOptions struct {
	// Flat keeps every system to its flat rates, block size and no
	// syncs, as for a version 1 file.
	Flat bool
	// Speed divides the timelines' steps (1: as observed).
	Speed float64
	// Series finds the series a timeline names, reading its observation
	// (the workload file's path resolves a relative one).
	Series func(ref fit.TimelineRef) (*results.ObservedSeries, error)
}

// MinSpeed and MaxSpeed bound ShapeOptions.Speed: a step of a second at
// most 1000 times faster is still a millisecond.
const (
	MinSpeed = 0.01
	MaxSpeed = 1000
)

// Shaped is one system's shape as the rehearsal replays it.
type Shaped struct {
	Pattern results.Pattern
	// Profile, when set, is its timeline's rates (Options.Profile).
	Profile *iotest.RateProfile
	// Replayed records it (results.ReplayedShape); nil for a flat
	// system.
	Replayed *results.ReplayedShape
}

// shapeSystems applies each system's shape to its flat pattern.
func shapeSystems(w fit.Workload, flat []results.Pattern, o ShapeOptions) ([]Shaped, error) {
	out := make([]Shaped, len(flat))
	for i := range flat {
		out[i].Pattern = flat[i]
	}
	if o.Flat || w.Version < fit.WorkloadV2 {
		return out, nil
	}
	if !(o.Speed >= MinSpeed && o.Speed <= MaxSpeed) {
		return nil, pattern.Fieldf("speed", "%v is not a speed from %v to %v (1: as observed, 10: ten times faster)", o.Speed, MinSpeed, MaxSpeed)
	}
	timelines := make([]*results.Timeline, len(flat))
	// dataShare is the share of each system's writes replayed as data
	// writes, the rest being its syncs' flushes.
	dataShare := make([]float64, len(flat))
	for i := range dataShare {
		dataShare[i] = 1
	}
	// burstShare is the share of each system's data writes in bursts.
	burstShare := make([]float64, len(flat))
	for i, s := range w.Systems {
		sh := s.Shape
		if sh == nil {
			continue
		}
		rec := &results.ReplayedShape{}
		p := flat[i]
		// The durable writes first: they move the read share, which the
		// size mix's canonical form follows.
		if sh.DurableKnown && sh.DurableWrites > 0 && s.WriteIOPS > 0 {
			data := s.WriteIOPS
			if sh.DurableWrites < s.WriteIOPS {
				data = s.WriteIOPS - sh.DurableWrites
				dataShare[i] = data / s.WriteIOPS
				rec.FlushIOPS = round1(sh.DurableWrites)
				p.Rate.WriteIOPS = data
				p.ReadPct = shareOf(p.Rate.ReadIOPS, data)
			}
			n := max(1, math.Round(100*data/sh.DurableWrites)/100)
			p.Sync = "fdatasync:" + strconv.FormatFloat(n, 'f', -1, 64) + ":after"
			if _, err := pattern.ParseSync(p.Sync); err != nil {
				return nil, fmt.Errorf("system %s: durable writes: %w", s.Name, err)
			}
			rec.Sync = p.Sync
		}
		if sh.BurstSize > 1 && sh.BurstWrites > 0 && p.Rate.WriteIOPS > 0 {
			// Some of the data writes in bursts: a background writer's
			// batches, which queue together.
			p.Rate.BurstSize, p.Rate.BurstIOPS = sh.BurstSize, min(sh.BurstWrites, p.Rate.WriteIOPS)
			burstShare[i] = p.Rate.BurstIOPS / p.Rate.WriteIOPS
			rec.BurstSize, rec.BurstIOPS = p.Rate.BurstSize, round1(p.Rate.BurstIOPS)
		}
		if sh.SizeMix != "" {
			var err error
			if p, err = pattern.WithBSSplit(p, sh.SizeMix); err != nil {
				return nil, fmt.Errorf("system %s: bssplit: %w", s.Name, err)
			}
			rec.BSSplit = p.BSSplit
		}
		if t := sh.Timeline; t != nil && o.Series != nil {
			ser, err := o.Series(*t)
			if err != nil {
				return nil, fmt.Errorf("system %s: timeline: %w", s.Name, err)
			}
			tl := &ser.Seconds
			if tl.Len() == 0 {
				tl = &ser.Minutes
			}
			if tl.Len() == 0 {
				return nil, fmt.Errorf("system %s: timeline: its series in %s holds no interval", s.Name, t.Observation)
			}
			_, r := tl.Counters["rios"]
			_, w := tl.Counters["wios"]
			if t.Series != fit.SeriesIO || !r || !w {
				return nil, fmt.Errorf("system %s: timeline: only a cgroup's series (io) can be replayed, not %s", s.Name, t.Series)
			}
			timelines[i] = tl
			rec.Timeline = fmt.Sprintf("%s: %s %s", t.Observation, t.System, t.Series)
		}
		out[i].Pattern, out[i].Replayed = p, rec
	}
	if err := profiles(w, timelines, dataShare, burstShare, out, o.Speed); err != nil {
		return nil, err
	}
	return out, nil
}

// profiles builds the timelines' rate profiles on one grid: the step of
// the coarsest timeline, from the latest first interval's start to the
// earliest last interval's end, so that every system replays the same
// moments. A step no interval of a timeline ended in (the source could
// not be read then) keeps the rate of the step before it. Each system's
// writes are scaled by its dataShare: the share of them that are data,
// not its syncs' flushes, and its write bursts hold burstShare of
// the data writes, step by step.
func profiles(w fit.Workload, timelines []*results.Timeline, dataShare, burstShare []float64, out []Shaped, speed float64) error {
	var step, from, to int64 // ms
	first := true
	for _, tl := range timelines {
		if tl == nil {
			continue
		}
		s := tl.StepNS / 1e6
		start := tl.EndMS[0] - tl.ElapsedUS[0]/1000
		end := tl.EndMS[tl.Len()-1]
		if first {
			step, from, to, first = s, start, end, false
			continue
		}
		step, from, to = max(step, s), max(from, start), min(to, end)
	}
	if first {
		return nil
	}
	steps := (to - from) / step
	if step <= 0 || steps < 1 {
		return fmt.Errorf("timelines: the systems' timelines share no whole step (%d ms from %d ms to %d ms of the observation)", step, from, to)
	}
	if steps > iotest.MaxProfileSteps {
		steps = iotest.MaxProfileSteps
	}
	k := 1 + w.HeadroomPct/100
	for i, tl := range timelines {
		if tl == nil {
			continue
		}
		reads, writes := make([]float64, steps), make([]float64, steps)
		// Per step: the reads, writes and seconds of the intervals that
		// ended in it, and how many did.
		rSum, wSum, sec, n := make([]float64, steps), make([]float64, steps), make([]float64, steps), make([]int, steps)
		for j := range tl.Len() {
			el := float64(tl.ElapsedUS[j]) / 1e6
			if el <= 0 || tl.EndMS[j] <= from {
				continue
			}
			at := (tl.EndMS[j] - from - 1) / step
			if at >= steps {
				continue
			}
			rSum[at] += float64(tl.Counters["rios"][j])
			wSum[at] += float64(tl.Counters["wios"][j])
			sec[at] += el
			n[at]++
		}
		missing := 0
		for j := range steps {
			if n[j] == 0 {
				missing++
				if j > 0 {
					reads[j], writes[j] = reads[j-1], writes[j-1]
				}
				continue
			}
			reads[j], writes[j] = k*rSum[j]/sec[j], k*dataShare[i]*wSum[j]/sec[j]
		}
		stepNS := int64(float64(step) * 1e6 / speed)
		prof := &iotest.RateProfile{StepNS: stepNS, Reads: reads, Writes: writes}
		if stepNS < int64(iotest.MinProfileStep) {
			return pattern.Fieldf("speed", "%v makes the timeline's %d ms steps shorter than %s", speed, step, iotest.MinProfileStep)
		}
		r, wr := prof.MeanRates()
		if r+wr == 0 {
			return fmt.Errorf("system %s: timeline: no I/O in the %d steps the systems share", w.Systems[i].Name, steps)
		}
		p := &out[i].Pattern
		// The pattern schedules each direction the profile has; its rates
		// are the profile's means.
		p.Rate.IOPS, p.Rate.ReadIOPS, p.Rate.WriteIOPS = 0, r, wr
		p.Rate.BurstIOPS = wr * burstShare[i]
		switch {
		case wr == 0:
			p.ReadPct, p.Sync = 100, ""
			p.Rate.BurstIOPS, p.Rate.BurstSize = 0, 0
		case r == 0:
			p.ReadPct = 0
		default:
			p.ReadPct = shareOf(r, wr)
		}
		if p.BSSplit != "" {
			bs, err := pattern.ParseBSSplit(p.BSSplit)
			if err == nil {
				p.BSSplit, p.BlockSize = bs.Canonical(p.ReadPct)
			}
		}
		out[i].Profile = prof
		rec := out[i].Replayed
		rec.Steps, rec.StepNS, rec.Speed, rec.MissingSteps = int(steps), stepNS, speed, missing
		rec.FromMS, rec.ToMS = from, from+steps*step
		rec.MeanReadIOPS, rec.MeanWriteIOPS = round1(r), round1(wr)
		if sh := dataShare[i]; sh < 1 {
			rec.FlushIOPS = round1(wr * (1 - sh) / sh)
		}
		if p.Rate.Bursty() {
			rec.BurstIOPS = round1(p.Rate.BurstIOPS)
		} else {
			rec.BurstIOPS, rec.BurstSize = 0, 0
		}
	}
	return nil
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// shareOf is the read share of r reads and w writes a second as a
// pattern's whole percent: 0 or 100 only when one of them is 0.
func shareOf(r, w float64) int {
	switch {
	case w == 0:
		return 100
	case r == 0:
		return 0
	}
	return min(max(int(math.Round(100*r/(r+w))), 1), 99)
}

// describe says in a line what the rehearsal replays of a system: the
// report's words (report.ReplayedLine), and of its timeline the moments
// observed, its mean rates and the steps without a reading.
func describe(name string, r *results.ReplayedShape) string {
	line := report.ReplayedLine(r)
	if line == "" {
		return name + ": no shape beyond its rates"
	}
	if r.Timeline != "" {
		line += fmt.Sprintf("; its timeline observed %s–%s, mean %s r/s %s w/s", time.Duration(r.FromMS)*time.Millisecond,
			time.Duration(r.ToMS)*time.Millisecond, results.FormatRate(r.MeanReadIOPS), results.FormatRate(r.MeanWriteIOPS))
		if r.MissingSteps > 0 {
			line += fmt.Sprintf(", %d steps unobserved, each replayed at the step before's rate", r.MissingSteps)
		}
	}
	return name + ": " + line
}

// ObservationSeries finds a timeline's series in its observation, read
// once per file: a relative path is resolved from workloadFile's
// directory. Files lists the observations read, for the command's rule
// that no output replaces an input.
type ObservationSeries struct {
	WorkloadFile string
	docs         map[string]*results.Observation
	Files        []string
}

// Find is ShapeOptions.Series.
func (s *ObservationSeries) Find(ref fit.TimelineRef) (*results.ObservedSeries, error) {
	path := ref.Resolve(s.WorkloadFile)
	doc, ok := s.docs[path]
	if !ok {
		var err error
		if doc, err = results.ReadObservationFile(path); err != nil {
			return nil, err
		}
		if s.docs == nil {
			s.docs = map[string]*results.Observation{}
		}
		s.docs[path] = doc
		s.Files = append(s.Files, path)
	}
	ser, err := ref.Find(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ser, nil
}
