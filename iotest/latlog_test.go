package iotest

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// parseLatLog reads a log in fio's layout with log_offset=1: six
// integer fields a line.
func parseLatLog(t *testing.T, text string) [][6]int64 {
	t.Helper()
	var lines [][6]int64
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		fields := strings.Split(line, ", ")
		if len(fields) != 6 {
			t.Fatalf("line %d: %q: %d fields, want 6", i+1, line, len(fields))
		}
		var v [6]int64
		for k, f := range fields {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("line %d: %q: %v", i+1, line, err)
			}
			v[k] = n
		}
		lines = append(lines, v)
	}
	return lines
}

// testLatWriter is a writer over one stream with records a buffer,
// whose window starts at 0.
func testLatWriter(l LatLog, records int) (*latWriter, *latStream) {
	var c clock
	s := newLatStream(&c, records, l.Avg)
	lw := &latWriter{log: l, streams: []*latStream{s}, line: make([]byte, 0, 64<<10), wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go lw.loop()
	return lw, s
}

// Each I/O is one line: completion time in ms, latency in ns, direction,
// size and offset; the response log has the response times.
func TestLatLogLines(t *testing.T) {
	var comp, resp bytes.Buffer
	lw, s := testLatWriter(LatLog{Completion: &comp, Response: &resp}, 4)
	// start, now, intended (ns since the window's start)
	s.add(false, 8192, 4096, 1_000_000, 1_250_000, 900_000)
	s.add(true, 4096, 16384, 2_000_000, 3_500_000, 1_000_000)
	st, err := lw.finish()
	if err != nil {
		t.Fatal(err)
	}
	want := "1, 250000, 0, 4096, 8192, 0\n3, 1500000, 1, 16384, 4096, 0\n"
	if comp.String() != want {
		t.Errorf("completion log:\n%s\nwant\n%s", comp.String(), want)
	}
	if want := "1, 350000, 0, 4096, 8192, 0\n3, 2500000, 1, 16384, 4096, 0\n"; resp.String() != want {
		t.Errorf("response log:\n%s\nwant\n%s", resp.String(), want)
	}
	if st.Lines != 2 || st.Dropped != 0 {
		t.Errorf("stats %+v, want 2 lines, none dropped", *st)
	}
}

// A period's line is the mean of its I/Os of one direction, at the
// period's end, with size and offset 0.
func TestLatLogAverages(t *testing.T) {
	var comp bytes.Buffer
	lw, s := testLatWriter(LatLog{Completion: &comp, Avg: 10 * time.Millisecond}, 16)
	ms := int64(time.Millisecond)
	// Period [0,10): reads of 100, 200, 400 µs; a write of 1 ms.
	// Period [20,30): reads of 3 and 4 µs (mean 3.5 µs).
	// None in [10,20).
	for _, io := range []struct {
		write    bool
		now, lat int64
	}{{false, 1 * ms, 100_000}, {true, 2 * ms, 1_000_000}, {false, 5 * ms, 200_000}, {false, 9 * ms, 400_000},
		{false, 21 * ms, 3_000}, {false, 29 * ms, 4_000}} {
		s.add(io.write, 4096, 4096, io.now-io.lat, io.now, 0)
	}
	st, err := lw.finish()
	if err != nil {
		t.Fatal(err)
	}
	got := parseLatLog(t, comp.String())
	// The read period [0,10) ends when the next read falls in a later
	// one: it is written first; the write's is written at the end.
	want := [][6]int64{{10, 233_333, 0, 0, 0, 0}, {30, 3_500, 0, 0, 0, 0}, {10, 1_000_000, 1, 0, 0, 0}}
	if len(got) != len(want) {
		t.Fatalf("lines %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %v, want %v", i+1, got[i], want[i])
		}
	}
	if st.Lines != 3 {
		t.Errorf("%d lines counted, want 3", st.Lines)
	}
}

// A stream whose writer still holds its spare buffer drops what it
// cannot hold, counts it, and never waits.
func TestLatLogDropsWhenBehind(t *testing.T) {
	var comp bytes.Buffer
	lw, s := testLatWriter(LatLog{Completion: &comp}, 2)
	for i := int64(0); i < 7; i++ {
		// The writer is never woken: the first buffer is handed over
		// when full, the second fills, the rest is dropped.
		s.add(false, 0, 4096, i*1000, i*1000+500, 0)
	}
	st, err := lw.finish()
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines != 4 || st.Dropped != 3 {
		t.Errorf("stats %+v, want 4 lines and 3 dropped", *st)
	}
	if n := len(parseLatLog(t, comp.String())); n != 4 {
		t.Errorf("%d lines written, want 4", n)
	}
}

// The options refuse a log they could not write whole.
func TestLatLogChecks(t *testing.T) {
	var b bytes.Buffer
	for _, c := range []struct {
		o     Options
		field string
	}{
		{Options{Runtime: time.Second, LatLog: LatLog{Avg: time.Second}}, "lat_log_avg"},
		{Options{Runtime: time.Second, LatLog: LatLog{Completion: &b, Avg: 1500 * time.Microsecond}}, "lat_log_avg"},
		{Options{Auto: &Auto{MinRuntime: time.Second, MaxRuntime: 10 * time.Second, Precision: 0.02}, LatLog: LatLog{Completion: &b}}, "lat_log"},
	} {
		err := c.o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want an error of %s", c.o.LatLog, err, c.field)
		}
	}
	if err := (Options{Runtime: time.Second, LatLog: LatLog{Completion: &b, Avg: time.Millisecond}}).Validate(); err != nil {
		t.Errorf("a log averaged over 1ms: %v", err)
	}
}

// A run's log has a line for each I/O the result counts, closed loop and
// open, on each engine; an open loop's response log as many, each
// response no shorter than the completion it ends with.
func TestLatLogHoldsEveryIO(t *testing.T) {
	testenv.Root(t)
	path := filepath.Join(testenv.DirectIODir(t), "latlog.dat")
	tg := openPlan(t, path, target.Options{Size: 16 << 20, Writes: true})
	for _, eng := range append(engines(t), "uring-rate") {
		var comp, resp bytes.Buffer
		p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 70, QueueDepth: 4, Jobs: 2}
		o := Options{Runtime: 1500 * time.Millisecond, Ramp: 200 * time.Millisecond, Seed: 5, Engine: eng,
			LatLog: LatLog{Completion: &comp}}
		if eng == "uring-rate" {
			o.Engine, p.Rate = EngineUring, results.Rate{IOPS: 2000, Arrival: results.ArrivalUniform}
			o.LatLog.Response = &resp
		}
		r, err := Run(context.Background(), tg, p, o)
		if err != nil {
			t.Fatal(err)
		}
		lines := parseLatLog(t, comp.String())
		if uint64(len(lines)) != r.Total.IOs || r.LatLog == nil || r.LatLog.Lines != r.Total.IOs || r.LatLog.Dropped != 0 {
			t.Errorf("%s: %d lines for %d I/Os (%+v)", eng, len(lines), r.Total.IOs, r.LatLog)
		}
		var reads uint64
		for _, l := range lines {
			if l[0] < 0 || l[0] > 1500 || l[1] <= 0 || l[3] != 4096 || l[4]%4096 != 0 || l[4] >= 16<<20 {
				t.Fatalf("%s: line %v out of the window or the target", eng, l)
			}
			if l[2] == 0 {
				reads++
			}
		}
		if reads != r.Read.IOs {
			t.Errorf("%s: %d reads logged, the result has %d", eng, reads, r.Read.IOs)
		}
		if eng != "uring-rate" {
			continue
		}
		rl := parseLatLog(t, resp.String())
		if len(rl) != len(lines) {
			t.Fatalf("response log: %d lines, completion log %d", len(rl), len(lines))
		}
		for i := range rl {
			if rl[i][1] < lines[i][1] || rl[i][4] != lines[i][4] {
				t.Fatalf("line %d: response %v, completion %v", i+1, rl[i], lines[i])
			}
		}
	}
}
