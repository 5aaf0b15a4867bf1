package rehearse

import (
	"errors"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/answers/fit"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// timeline is a series whose intervals of a second end at the offsets
// ends (ms), with the reads and writes of each.
func timeline(ends []int64, reads, writes []uint64) *results.ObservedSeries {
	el := make([]int64, len(ends))
	for i := range el {
		el[i] = 1e6
	}
	return &results.ObservedSeries{Kind: "cgroup", Seconds: results.Timeline{StepNS: 1e9, EndMS: ends, ElapsedUS: el,
		Counters: map[string][]uint64{"rios": reads, "wios": writes}}}
}

// A version 2 system replays its shape: its size mix, its durable writes
// as syncs (the writes less the durable writes as data, the rest the
// syncs' flushes, an fdatasync after every data writes/durable_writes),
// and its timeline on the grid
// every system shares (the latest start to the earliest end), raised by
// the headroom, its steps shortened by the speed, a step without a
// reading at the rate before; a version 1 file, or Flat, stays flat.
func TestShapeSystems(t *testing.T) {
	w := workload(t, `version: 2
headroom_pct: 50
systems:
  - {name: a, reads: 100, writes: 40, block_size: 16k, read_share: 0.7, bssplit: "8k/50:16k/50,16k/100", durable_writes: 10,
     write_bursts: {size: 4, writes: 15}, timeline: {observation: obs.json, system: a, series: io}}
  - {name: b, reads: 50, block_size: 4k, timeline: {observation: obs.json, system: b, series: io}}
  - {name: c, reads: 10, writes: 10, block_size: 4k, durable_writes: unknown}
  - {name: d, reads: 10, writes: 10, block_size: 4k, durable_writes: 10}
  - {name: e, reads: 10, writes: 35, block_size: 4k, durable_writes: 10}
  - {name: f, reads: 10, writes: 51.4, block_size: 4k, durable_writes: 10}
  - {name: g, reads: 10, writes: 35, block_size: 4k, durable_writes: 10, write_bursts: {size: 5, writes: 20}}
`)
	series := map[string]*results.ObservedSeries{
		// a from 0 to 5 s, its fourth second unread; b from 1 s to 6 s.
		"a": timeline([]int64{1000, 2000, 3000, 5000}, []uint64{10, 20, 30, 50}, []uint64{4, 0, 8, 2}),
		"b": timeline([]int64{2000, 3000, 4000, 5000, 6000}, []uint64{1, 2, 3, 4, 5}, []uint64{0, 0, 0, 0, 0}),
	}
	find := func(ref fit.TimelineRef) (*results.ObservedSeries, error) {
		if s, ok := series[ref.System]; ok {
			return s, nil
		}
		return nil, errors.New("none")
	}
	flat := Patterns(w, results.ArrivalUniform)
	sh, err := shapeSystems(w, flat, ShapeOptions{Speed: 2, Series: find})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := sh[0], sh[1], sh[2]
	// The shared grid: 1 s to 5 s, four steps of 500 ms at speed 2.
	if a.Profile == nil || a.Profile.StepNS != 5e8 || len(a.Profile.Reads) != 4 {
		t.Fatalf("a's profile %+v", a.Profile)
	}
	// ×1.5, the writes ×0.75 (30 of 40 are data, 10 the flushes of its
	// 10 durable writes); the 4th second's step holds the 3rd's rate.
	wantR, wantW := []float64{30, 45, 45, 75}, []float64{0, 9, 9, 2.25}
	for i := range wantR {
		if a.Profile.Reads[i] != wantR[i] || a.Profile.Writes[i] != wantW[i] {
			t.Errorf("a's step %d: %v r/s %v w/s, want %v %v", i, a.Profile.Reads[i], a.Profile.Writes[i], wantR[i], wantW[i])
		}
	}
	if r := a.Replayed; r == nil || r.Steps != 4 || r.MissingSteps != 1 || r.FromMS != 1000 || r.ToMS != 5000 || r.Speed != 2 ||
		r.MeanReadIOPS != 48.8 || r.MeanWriteIOPS != 5.1 || r.FlushIOPS != 1.7 || r.Sync != "fdatasync:3:after" || r.BSSplit != "8k/50:16k/50,16k/100" {
		t.Errorf("a replayed %+v", a.Replayed)
	}
	if p := a.Pattern; p.Rate.ReadIOPS != 48.75 || p.Rate.WriteIOPS != 5.0625 || p.ReadPct != 91 || p.BlockSize != 16384 || p.Sync != "fdatasync:3:after" {
		t.Errorf("a's pattern %+v", p)
	}
	// Half of its 30 data writes in bursts of 4: half of each step's.
	if p := a.Pattern; p.Rate.BurstIOPS != 2.53125 || p.Rate.BurstSize != 4 || a.Replayed.BurstIOPS != 2.5 || a.Replayed.BurstSize != 4 {
		t.Errorf("a's bursts: %+v, replayed %+v", p.Rate, a.Replayed)
	}
	// Flat: 20 of its 25 data writes a second in bursts of 5.
	if g := sh[6]; g.Pattern.Rate.BurstIOPS != 20 || g.Pattern.Rate.BurstSize != 5 || g.Pattern.Rate.WriteIOPS != 25 ||
		!strings.Contains(g.Pattern.Name(), "-rate10r25w-wburst5x20") || !strings.Contains(describe("g", g.Replayed), "20 of its data writes a second in bursts of 5") {
		t.Errorf("g: %+v %s %+v", g.Pattern.Rate, g.Pattern.Name(), g.Replayed)
	}
	if err := a.Profile.Check(a.Pattern); err != nil {
		t.Errorf("a's profile against its pattern: %v", err)
	}
	if b.Profile == nil || b.Profile.Reads[0] != 1.5 || b.Profile.Reads[3] != 6 || b.Pattern.ReadPct != 100 || b.Pattern.Rate.WriteIOPS != 0 {
		t.Errorf("b: %+v %+v", b.Profile, b.Pattern)
	}
	if c.Profile != nil || c.Pattern.Sync != "" || c.Replayed == nil || describe("c", c.Replayed) != "c: no shape beyond its rates" {
		t.Errorf("c: %+v %+v", c.Profile, c.Pattern)
	}
	// As many durable writes as writes: the writes replayed whole, a
	// sync after each.
	if d := sh[3]; d.Pattern.Sync != "fdatasync:1:after" || d.Pattern.Rate.WriteIOPS != 10 || d.Pattern.ReadPct != 50 || d.Replayed.FlushIOPS != 0 {
		t.Errorf("d: %+v %+v", d.Pattern, d.Replayed)
	}
	// 4.14 data writes per durable write: 413.99999999999994 hundredths
	// hundredths, still two decimals.
	if f := sh[5]; f.Pattern.Sync != "fdatasync:4.14:after" {
		t.Errorf("f: %+v", f.Pattern)
	}
	// Flat, with fewer durable writes than writes: 25 data writes, 10
	// flushes, a sync after every 2.5 data writes.
	if e := sh[4]; e.Pattern.Sync != "fdatasync:2.5:after" || e.Pattern.Rate.WriteIOPS != 25 || e.Pattern.ReadPct != 29 || e.Replayed.FlushIOPS != 10 {
		t.Errorf("e: %+v %+v", e.Pattern, e.Replayed)
	}
	if d := describe("a", a.Replayed); !strings.Contains(d, "4 steps of 500ms") || !strings.Contains(d, "1 steps unobserved") ||
		!strings.Contains(d, "fdatasync:3:after (1.7 of its writes a second their flushes, not data writes)") {
		t.Errorf("a described %q", d)
	}
	// Flat, and version 1: the flat patterns.
	for _, o := range []ShapeOptions{{Flat: true, Speed: 1, Series: find}} {
		sh, err := shapeSystems(w, flat, o)
		if err != nil || sh[0].Profile != nil || sh[0].Pattern != flat[0] || sh[0].Replayed != nil {
			t.Errorf("flat: %+v, %v", sh[0], err)
		}
	}
	v1 := workload(t, "systems:\n  - {name: a, reads: 100, block_size: 4k}\n")
	if sh, err := shapeSystems(v1, Patterns(v1, results.ArrivalUniform), ShapeOptions{Speed: 1}); err != nil || sh[0].Replayed != nil {
		t.Errorf("version 1: %+v, %v", sh, err)
	}
	// Refused: a speed out of range, or one that makes steps under a
	// millisecond; a timeline that cannot be found.
	if _, err := shapeSystems(w, flat, ShapeOptions{Speed: 0, Series: find}); !pattern.IsField(err, "speed") {
		t.Errorf("speed 0: %v", err)
	}
	if _, err := shapeSystems(w, flat, ShapeOptions{Speed: 1000, Series: find}); err != nil {
		t.Errorf("speed 1000 (1 ms steps): %v", err)
	}
	delete(series, "b")
	if _, err := shapeSystems(w, flat, ShapeOptions{Speed: 1, Series: find}); err == nil || !strings.Contains(err.Error(), "system b: timeline: none") {
		t.Errorf("a missing timeline: %v", err)
	}
}
