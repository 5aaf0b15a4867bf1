package testenv

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// flatOut serves requests of size bytes on turn back to back from at,
// each arriving when the one before it is served, until one waits more
// than slow for its turn (the fast stretch is over): it returns the
// bytes served before that one, when the last of them was served, and
// the rate in bytes a second over the middle of the stretch, from a
// tenth of its bytes to nine tenths (a full bucket serves its peak's own
// burst at once at the start).
func flatOut(turn func(at time.Time, size int) time.Time, at time.Time, size int, slow time.Duration) (bytes int64, end time.Time, rate float64) {
	var times []time.Time
	for {
		next := turn(at, size)
		if next.Sub(at) > slow {
			break
		}
		times = append(times, next)
		bytes += int64(size)
		at = next
	}
	if n := len(times); n >= 10 {
		rate = float64((n*9/10-n/10)*size) / times[n*9/10].Sub(times[n/10]).Seconds()
	}
	return bytes, at, rate
}

// steady serves requests of size bytes back to back from at for d and
// returns the rate in bytes a second, from the first turn to the last,
// and the time the last was served.
func steady(turn func(at time.Time, size int) time.Time, at time.Time, size int, d time.Duration) (rate float64, end time.Time) {
	first := turn(at, size)
	var bytes int64
	for at = first; at.Sub(first) < d; bytes += int64(size) {
		at = turn(at, size)
	}
	return float64(bytes) / at.Sub(first).Seconds(), at
}

// peakStart is the time a full bucket of l ends its fast stretch before
// l.FastTime(): its peak's own burst, 10 ms of the peak, is served at
// once (see CreditLimit.FastStretch).
func peakStart(l CreditLimit) time.Duration {
	return time.Duration(float64(10*time.Millisecond) * float64(l.Peak) / float64(l.Peak-l.Baseline))
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	dev := got/want - 1
	t.Logf("%s: %.6g, %+.3f %% off %.6g", what, got, 100*dev, want)
	if math.Abs(dev) > tol {
		t.Errorf("%s: %.6g, more than %.2g %% off %.6g", what, got, 100*tol, want)
	}
}

const mib = 1 << 20

// A disk with a bandwidth bucket of 20 MiB/s, 200 MiB of credits and a
// peak of 100 MiB/s, read and written flat out with 64 KiB requests on a
// simulated clock: 250 MiB at 100 MiB/s for 2.5 s (200 MiB above the
// baseline), then 20 MiB/s, whatever the requests' size; idle for 5 s,
// it earns 100 MiB back: 125 MiB at the peak, in 1.25 s.
func TestBandwidthBucketCredits(t *testing.T) {
	l := CreditLimit{Baseline: 20 * mib, Credits: 200 * mib, Peak: 100 * mib}
	d, err := NewCapacityDisk(nil, CapacityOptions{Size: 1 << 30, Bandwidth: l})
	Must(t, err)
	if got := d.Bandwidth().CreditLimit(); got != l || d.Bandwidth().Unit() != Bytes {
		t.Fatalf("the disk's bandwidth: %+v of %s, want %+v of bytes", got, d.Bandwidth().Unit(), l)
	}
	// Reads and writes in turn: both draw on the bucket.
	var n int
	mixed := func(at time.Time, size int) time.Time {
		n++
		return d.turn(at, size, n%2 == 0)
	}
	const size = 64 << 10
	atPeak := time.Duration(size) * time.Second / time.Duration(l.Peak)
	start := time.Unix(1000, 0)
	bytes, end, rate := flatOut(mixed, start, size, 2*atPeak)
	secs := end.Sub(start).Seconds()
	within(t, "full: bytes at the peak", float64(bytes), l.FastStretch(), 0.01)
	within(t, "full: seconds at the peak", secs, (l.FastTime() - peakStart(l)).Seconds(), 0.001)
	within(t, "full: the peak, bytes/s", rate, float64(l.Peak), 0.001)
	within(t, "full: bytes above the baseline", float64(bytes)-float64(l.Baseline)*secs, float64(l.Credits), 0.001)
	within(t, "FastStretch, MiB", l.FastStretch()/mib, 250, 1e-9)
	within(t, "FastTime, s", l.FastTime().Seconds(), 2.5, 1e-9)

	// Spent: the baseline, for large requests and small alike, reads
	// alone too.
	rate, at := steady(mixed, end, size, 2*time.Second)
	within(t, "spent: 64 KiB requests, bytes/s", rate, float64(l.Baseline), 0.001)
	rate, at = steady(mixed, at, 4<<10, time.Second)
	within(t, "spent: 4 KiB requests, bytes/s", rate, float64(l.Baseline), 0.001)
	reads := func(at time.Time, size int) time.Time { return d.turn(at, size, false) }
	rate, at = steady(reads, at, size, time.Second)
	within(t, "spent: reads alone, bytes/s", rate, float64(l.Baseline), 0.001)

	// Idle for 5 s: 100 MiB back.
	idle := at.Add(5 * time.Second)
	within(t, "after 5 s idle: credits held, MiB", d.Bandwidth().heldAt(idle)/mib, 100, 0.001)
	bytes, end, _ = flatOut(mixed, idle, size, 2*atPeak)
	back := CreditLimit{Baseline: l.Baseline, Credits: 100 * mib, Peak: l.Peak}
	within(t, "after 5 s idle: bytes at the peak", float64(bytes), back.FastStretch(), 0.01)
	within(t, "after 5 s idle: seconds at the peak", end.Sub(idle).Seconds(), (back.FastTime() - peakStart(back)).Seconds(), 0.001)
}

// A cache-like volume with a fast stretch of 64 MiB at 200 MiB/s, then
// 20 MiB/s (a cache of 57.6 MiB): written flat out it takes 64 MiB at
// 200 MiB/s, then 20 MiB/s; reads go at once all the while and take no
// room in the cache; idle for 2 s, it has drained 40 MiB and takes 44.4
// MiB fast again, idle for long the whole stretch.
func TestWriteCache(t *testing.T) {
	const stretch, fast, slow = 64 * mib, 200 * mib, 20 * mib
	l := WriteCache(stretch, fast, slow)
	if math.Abs(l.FastStretch()-stretch) > 1 || l.Baseline != slow || l.Peak != fast {
		t.Fatalf("WriteCache(64 MiB, 200 MiB/s, 20 MiB/s) = %+v, fast stretch %.1f", l, l.FastStretch())
	}
	within(t, "the cache, MiB", float64(l.Credits)/mib, 57.6, 1e-6)
	d, err := NewCapacityDisk(nil, CapacityOptions{Size: 1 << 30, WriteBandwidth: l})
	Must(t, err)
	writes := func(at time.Time, size int) time.Time { return d.turn(at, size, true) }
	const size = 64 << 10
	atFast := time.Duration(size) * time.Second / fast
	// readsAtOnce reads a GiB back to back from at and fails unless
	// every read is served at once and the cache holds what it held.
	readsAtOnce := func(when string, at time.Time) {
		t.Helper()
		held := d.WriteBandwidth().heldAt(at)
		for range 1 << 30 / size {
			if turn := d.turn(at, size, false); !turn.Equal(at) {
				t.Fatalf("%s: a read waited %v", when, turn.Sub(at))
			}
		}
		if got := d.WriteBandwidth().heldAt(at); got != held {
			t.Errorf("%s: the reads changed the cache's room from %.0f to %.0f", when, held, got)
		}
	}

	start := time.Unix(1000, 0)
	readsAtOnce("before the writes", start)
	bytes, end, rate := flatOut(writes, start, size, 2*atFast)
	secs := end.Sub(start).Seconds()
	within(t, "empty cache: the fast stretch, bytes", float64(bytes), stretch, 0.01)
	within(t, "empty cache: its time, s", secs, (l.FastTime() - peakStart(l)).Seconds(), 0.001)
	within(t, "empty cache: the fast rate, bytes/s", rate, fast, 0.001)
	readsAtOnce("the cache full", end)
	rate, at := steady(writes, end, size, 2*time.Second)
	within(t, "full cache: the slow rate, bytes/s", rate, slow, 0.001)
	readsAtOnce("the cache full, after the slow writes", at)

	// Idle for 2 s: 40 MiB drained.
	idle := at.Add(2 * time.Second)
	bytes, _, _ = flatOut(writes, idle, size, 2*atFast)
	within(t, "after 2 s idle: the fast stretch, bytes", float64(bytes), float64(fast)*40*mib/(fast-slow), 0.01)
	// Idle for as long as the cache takes to drain: the whole stretch.
	idle = idle.Add(l.FastTime() + time.Duration(l.Credits)*time.Second/slow)
	bytes, _, _ = flatOut(writes, idle, size, 2*atFast)
	within(t, "drained: the fast stretch, bytes", float64(bytes), stretch, 0.01)
}

// closedLoop serves clients that each issue a request of size bytes as
// soon as the one before is served, on a simulated clock, from start
// to end; at change it calls set. It returns the turns in order, and
// the latest turn handed out when set was called.
func closedLoop(turn func(at time.Time, size int) time.Time, clients, size int, start, change, end time.Time, set func(now time.Time)) (turns []time.Time, last time.Time) {
	next := make([]time.Time, clients)
	for i := range next {
		next[i] = start
	}
	changed := false
	for {
		i := 0
		for j := range next {
			if next[j].Before(next[i]) {
				i = j
			}
		}
		if !next[i].Before(end) {
			return turns, last
		}
		if !changed && !next[i].Before(change) {
			changed = true
			last = slices.MaxFunc(turns, func(a, b time.Time) int { return a.Compare(b) })
			set(change)
		}
		next[i] = turn(next[i], size)
		turns = append(turns, next[i])
	}
}

// A bucket's limit changed while 8 clients keep it busy: the turns
// already handed out stand, and the next comes one new interval after
// the last of them, then every new interval: no run of turns from
// credits the change made up, no stall. Halving a volume's rate midway
// halves it at once; doubling it doubles it; halving a credit bucket's
// baseline once its credits are spent gives no credits back, and halving
// it during its burst leaves the credits it holds.
func TestCapacityBucketSetLimit(t *testing.T) {
	start := time.Unix(1000, 0)
	change, end := start.Add(time.Second), start.Add(2*time.Second)
	for _, c := range []struct {
		name                 string
		iops, burst, to      int
		peak                 int
		before, after        time.Duration // the gaps between turns
		beforeFrom, afterTil time.Duration // from start, till end: spans the test holds
	}{
		{name: "halved", iops: 1000, burst: 100, to: 500, before: time.Millisecond, after: 2 * time.Millisecond},
		{name: "doubled", iops: 1000, burst: 100, to: 2000, before: time.Millisecond, after: time.Second / 2000},
		{name: "default burst halved", iops: 1000, to: 500, before: time.Millisecond, after: 2 * time.Millisecond},
		// 3,000 credits at a net 2,700 a second are spent after 1.11 s.
		{name: "spent credits, baseline halved", iops: 300, burst: 3000, peak: 3000, to: 150,
			before: time.Second / 300, after: time.Second / 150, beforeFrom: 1200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewCreditBucket(Requests, CreditLimit{Baseline: int64(c.iops), Credits: int64(c.burst), Peak: int64(c.peak)})
			turn := func(at time.Time, size int) time.Time { return b.turn(at, size) }
			// The bucket's first burst is served at once: the gaps are
			// held from 200 ms on.
			from := start.Add(max(c.beforeFrom, 200*time.Millisecond))
			turns, last := closedLoop(turn, 8, 4096, start, change, end,
				func(now time.Time) { b.setLimit(now, c.to, c.burst) })
			if queued := last.Sub(change); queued < 0 || queued > 8*c.before {
				t.Fatalf("at the change, turns were handed out %v ahead, want up to 8 of the old", queued)
			}
			var bad int
			for i := 1; i < len(turns); i++ {
				if turns[i].Before(from) {
					continue
				}
				want := c.before
				if turns[i].After(last) {
					want = c.after
				}
				if gap := turns[i].Sub(turns[i-1]); gap < want-2 || gap > want+2 {
					if bad++; bad <= 5 {
						t.Errorf("turn %d at %v: %v after the one before, want %v (the change at %v, the last turn then at %v)",
							i, turns[i].Sub(start), gap, want, change.Sub(start), last.Sub(start))
					}
				}
			}
			if iops, _ := b.Limit(); iops != c.to {
				t.Errorf("Limit() = %d IOPS, want %d", iops, c.to)
			}
		})
	}
	// During a burst of 3,000 a second on 30,000 credits and a baseline
	// of 300, the baseline halved after 5 s (16,500 credits left): the
	// peak lasts the credits held over the new net rate, 16,500/2,850 s.
	b := NewCreditBucket(Requests, CreditLimit{Baseline: 300, Credits: 30000, Peak: 3000})
	turn := func(at time.Time, size int) time.Time { return b.turn(at, size) }
	_, at := steady(turn, start, 4096, 5*time.Second)
	within(t, "5 s into the burst: credits held", b.heldAt(at), 30000-5*2700, 0.005)
	held := b.heldAt(at)
	b.setLimit(at, 150, 30000)
	if got := b.heldAt(at); math.Abs(got-held) > 1 {
		t.Errorf("halving the baseline changed the credits held from %.1f to %.1f", held, got)
	}
	n, end, _ := flatOut(turn, at, 1, 2*time.Second/3000)
	within(t, "the rest of the burst, s", end.Sub(at).Seconds(), held/2850, 0.01)
	within(t, "the rest of the burst, requests", float64(n), 3000*held/2850, 0.01)
	rate, _ := steady(turn, end, 1, time.Second)
	within(t, "after the burst: requests a second", rate, 150, 0.001)
}

// written is a writer's progress: the bytes written by each write's end,
// seconds from the writer's start.
type written struct {
	secs  []float64
	bytes []float64
}

// line fits bytes = rate·secs + at0 by least squares to the writes
// that keep returns true for.
func (w *written) line(keep func(secs, bytes float64) bool) (rate, at0 float64, n int) {
	var sx, sy, sxx, sxy float64
	for i, x := range w.secs {
		if y := w.bytes[i]; keep(x, y) {
			n++
			sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		}
	}
	if n < 2 {
		return 0, 0, n
	}
	rate = (float64(n)*sxy - sx*sy) / (float64(n)*sxx - sx*sx)
	return rate, (sy - rate*sx) / float64(n), n
}

// knee is where a fast line and a slow one meet: the bytes written at
// the fast rate before the writes slowed.
func knee(fast, fast0, slow, slow0 float64) float64 {
	secs := (slow0 - fast0) / (fast - slow)
	return fast*secs + fast0
}

// A cache-like loop device of a 20 MiB fast stretch at 20 MiB/s, then
// 2 MiB/s, written flat out with 64 KiB O_DIRECT writes one at a time:
// the stretch and its two rates are the parameters'. Read for 2 s with
// the cache full, the device serves the reads far faster than the
// writes' slow rate and drains the cache meanwhile: written again, it
// takes the 4-odd MiB it drained at the fast rate.
//
// The rates are well within the stand-in's reach: a CapacityLoop with
// no limit took 64 KiB writes one at a time at 800 MiB/s here, 52 to
// 100 MiB/s under the race detector (its FUSE server runs in the test's
// process). The machine is shared, though: a writer held off the CPU
// for longer than the peak's own burst (10 ms) loses that time, and the
// fast rate with it, so that a run whose figures miss is run again,
// once.
func TestCapacityLoopWriteCache(t *testing.T) {
	const stretch, fast, slow = 20 * mib, 20 * mib, 2 * mib
	const size, span = 64 << 10, 256 * mib
	l := WriteCache(stretch, fast, slow)
	disk, dev := CapacityLoop(t, CapacityOptions{Size: span, WriteBandwidth: l})
	f, err := os.OpenFile(dev, os.O_RDWR|unix.O_DIRECT, 0)
	Must(t, err)
	defer f.Close()
	buf, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	Must(t, err)
	defer func() { _ = unix.Munmap(buf) }() // a test's buffer: nothing to lose
	var off int64
	// write writes flat out for d; it returns when the first write began
	// and the last ended.
	write := func(d time.Duration) (w written, began, ended time.Time) {
		began = time.Now()
		for time.Since(began) < d {
			if _, err := f.WriteAt(buf, off); err != nil {
				t.Fatalf("write %s at %d: %v", dev, off, err)
			}
			off = (off + size) % span
			w.secs = append(w.secs, time.Since(began).Seconds())
			w.bytes = append(w.bytes, float64(len(w.secs)*size))
		}
		return w, began, began.Add(time.Duration(w.secs[len(w.secs)-1] * float64(time.Second)))
	}
	// attempt runs it all from an empty cache and returns the figures
	// that missed.
	attempt := func() (missed []string) {
		check := func(what string, got, want, tol float64) {
			t.Helper()
			dev := got/want - 1
			t.Logf("%s: %.6g, %+.3f %% off %.6g", what, got, 100*dev, want)
			if math.Abs(dev) > tol {
				missed = append(missed, fmt.Sprintf("%s: %.6g, more than %.2g %% off %.6g", what, got, 100*tol, want))
			}
		}
		disk.WriteBandwidth().Fill()
		disk.Reset()
		busy := MachineTimes(t)
		w, _, lastWrite := write(l.FastTime() + 2*time.Second)
		fastRate, fast0, _ := w.line(func(_, b float64) bool { return b >= stretch/8 && b <= stretch*7/8 })
		end := w.secs[len(w.secs)-1]
		slowRate, slow0, _ := w.line(func(s, _ float64) bool { return s >= end-1.5 })
		t.Logf("%d writes of 64 KiB in %.2f s; the disk: %s", len(w.secs), end, disk.Counts())
		check("the fast rate, bytes/s", fastRate, fast, 0.05)
		check("the slow rate, bytes/s", slowRate, slow, 0.05)
		check("the fast stretch, bytes", knee(fastRate, fast0, slowRate, slow0), stretch, 0.03)

		// Reads with the cache full.
		var read int64
		began := time.Now()
		for time.Since(began) < 2*time.Second {
			if _, err := f.ReadAt(buf, read%span); err != nil {
				t.Fatalf("read %s: %v", dev, err)
			}
			read += size
		}
		readRate := float64(read) / time.Since(began).Seconds()
		t.Logf("reads with the cache full: %.0f MiB/s", readRate/mib)
		if readRate < 4*slow {
			missed = append(missed, fmt.Sprintf("reads with the cache full went at %.0f MiB/s, not 4 times the writes' slow rate, %d MiB/s",
				readRate/mib, slow/mib))
		}

		// Written again: what drained since the last write, at the fast
		// rate (held above).
		w, again, _ := write(time.Second + 300*time.Millisecond)
		idle := again.Sub(lastWrite).Seconds()
		drained := CreditLimit{Baseline: slow, Credits: int64(idle * slow), Peak: fast}
		fastRate, fast0, _ = w.line(func(_, b float64) bool { return b >= drained.FastStretch()/8 && b <= drained.FastStretch()*3/4 })
		end = w.secs[len(w.secs)-1]
		slowRate, slow0, _ = w.line(func(s, _ float64) bool { return s >= end-0.7 })
		after := MachineTimes(t)
		t.Logf("idle for writes %.3f s: %.2f MiB drained; fast again at %.4g bytes/s; the CPUs %.0f %% busy",
			idle, float64(drained.Credits)/mib, fastRate, 100*float64(after.Busy-busy.Busy)/float64(max(after.Total()-busy.Total(), 1)))
		check("after the reads: the fast stretch, bytes", knee(fastRate, fast0, slowRate, slow0), drained.FastStretch(), 0.05)
		return missed
	}
	missed := attempt()
	if len(missed) > 0 {
		t.Logf("run again; the first run missed:\n%s", strings.Join(missed, "\n"))
		missed = attempt()
	}
	for _, m := range missed {
		t.Error(m)
	}
}
