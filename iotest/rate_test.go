package iotest

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// The poisson schedule is a Poisson process at the target rate, by the
// one-sample Kolmogorov–Smirnov test of its gaps against the exponential
// distribution of that rate (not of the gaps' own mean: a schedule at the
// wrong rate fails too), at the 1 % level; and its counts in windows of
// 100 expected arrivals are Poisson-dispersed (variance over mean within
// the 99 % range of the dispersion index's chi-square distribution).
func TestPoissonSchedule(t *testing.T) {
	const rate, n = 20000.0, 100000
	for _, jobs := range []int{1, 4} {
		s := newSchedule(results.Rate{IOPS: rate}, jobs, jobs-1, 7, nil)
		perJob := rate / float64(jobs)
		gaps := make([]float64, n)
		last := int64(0)
		for i := range gaps {
			at, write := s.due()
			if write {
				t.Fatal("a total rate drew a direction")
			}
			gaps[i] = float64(at - last)
			last = at
			s.take()
		}
		slices.Sort(gaps)
		d := 0.0
		for i, g := range gaps {
			cdf := 1 - math.Exp(-g*perJob/1e9)
			d = max(d, math.Abs(cdf-float64(i)/n), math.Abs(cdf-float64(i+1)/n))
		}
		// The gaps are whole nanoseconds: at 50 µs a rounding of 1/50,000.
		if crit := 1.628 / math.Sqrt(n); d > crit+2e-5 {
			t.Errorf("jobs %d: KS distance %.5f of the gaps from Exp(%g/s) above the 1 %% critical value %.5f", jobs, d, perJob, crit)
		}
		// Counts in windows of 100 expected arrivals.
		s = newSchedule(results.Rate{IOPS: rate}, jobs, 0, 11, nil)
		window := int64(100 * 1e9 / perJob)
		const windows = 1000
		counts := make([]float64, windows)
		for {
			at, _ := s.due()
			if at >= window*windows {
				break
			}
			counts[at/window]++
			s.take()
		}
		mean, ss := 0.0, 0.0
		for _, c := range counts {
			mean += c / windows
		}
		for _, c := range counts {
			ss += (c - mean) * (c - mean)
		}
		// (windows-1)·var/mean is chi-square with windows-1 degrees of
		// freedom; its 0.5 % and 99.5 % points at 999 are about 886 and 1118.
		if idx := ss / mean; idx < 886 || idx > 1118 || math.Abs(mean-100) > 3 {
			t.Errorf("jobs %d: windows of 100 expected arrivals held %.2f on average with dispersion statistic %.0f (want 886..1118)", jobs, mean, idx)
		}
	}
}

// Uniform arrivals come exactly every 1/rate, without drift, and a rate
// per direction interleaves both directions at their own rates.
func TestUniformSchedule(t *testing.T) {
	s := newSchedule(results.Rate{IOPS: 3000, Arrival: results.ArrivalUniform}, 1, 0, 1, nil)
	for i := 0; i < 3_000_000; i++ {
		at, _ := s.due()
		if want := int64(float64(i) * 1e9 / 3000); at != want {
			t.Fatalf("arrival %d at %d ns, want %d", i, at, want)
		}
		s.take()
	}
	s = newSchedule(results.Rate{ReadIOPS: 3000, WriteIOPS: 1000, Arrival: results.ArrivalUniform}, 1, 0, 1, nil)
	var reads, writes int
	for {
		at, write := s.due()
		if at >= 1e9 {
			break
		}
		if write {
			writes++
		} else {
			reads++
		}
		s.take()
	}
	if reads != 3000 || writes != 1000 {
		t.Errorf("one second of riops=3000,wiops=1000: %d reads, %d writes", reads, writes)
	}
}

// Write bursts: a rate per direction whose writes come partly in bursts
// keeps every direction's count, each burst's writes at one moment, the
// bursts at their own rate, and the other writes one by one; poisson
// bursts too, over a longer stretch, within their counts' spread; and a
// profile's writes split the same way.
func TestBurstSchedule(t *testing.T) {
	rate := results.Rate{ReadIOPS: 700, WriteIOPS: 270, BurstIOPS: 196, BurstSize: 98, Arrival: results.ArrivalUniform}
	count := func(s schedule, end int64) (reads, writes, bursts, inBursts int) {
		var last int64 = -1
		run := 0
		for {
			at, write := s.due()
			if at >= end {
				break
			}
			burst := s.next() == 2
			s.take()
			switch {
			case !write:
				reads++
				continue
			case !burst:
				writes++
				continue
			}
			writes++
			inBursts++
			if at != last {
				if run != 0 && run != 98 {
					t.Fatalf("a burst of %d writes at %d ns, want 98", run, last)
				}
				bursts++
				run = 0
			}
			run++
			last = at
		}
		return
	}
	r, w, b, in := count(newSchedule(rate, 1, 0, 1, nil), 10e9)
	if r != 7000 || w != 2700 || b != 20 || in != 1960 {
		t.Errorf("10 s of %+v: %d reads, %d writes, %d bursts holding %d; want 7000, 2700, 20, 1960", rate, r, w, b, in)
	}
	rate.Arrival = ""
	r, w, b, in = count(newSchedule(rate, 1, 0, 3, nil), 200e9)
	// 400 bursts expected, a Poisson count: within 4 standard deviations.
	if math.Abs(float64(b)-400) > 80 || in != 98*b || math.Abs(float64(w-in)-74*200) > 4*math.Sqrt(74*200) ||
		math.Abs(float64(r)-700*200) > 4*math.Sqrt(700*200) {
		t.Errorf("200 s of poisson %+v: %d reads, %d writes, %d bursts holding %d", rate, r, w, b, in)
	}
	rate.Arrival = results.ArrivalUniform
	prof := &RateProfile{StepNS: 1e9, Reads: []float64{700, 700}, Writes: []float64{270, 540}}
	rate.WriteIOPS, rate.BurstIOPS = 405, 294 // the profile's mean, its share in bursts as above
	r, w, b, in = count(newSchedule(rate, 1, 0, 1, prof), 2e9)
	if r != 1400 || w != 810 || in != 588 || b != 6 {
		t.Errorf("2 s of %+v on the profile %+v: %d reads, %d writes, %d bursts holding %d; want 1400, 810, 6, 588", rate, prof, r, w, b, in)
	}
}

// simulateOpen runs a schedule against a device on a simulated clock: the
// issuing rule of runRate (an I/O starts at its intended time, or when a
// slot frees if every slot is busy), with its accounting. service(at)
// is when an I/O submitted at at completes.
func simulateOpen(rate results.Rate, qd int, window int64, complete func(at int64) int64) *stats {
	clk := newTestClock(0, window)
	st := newStats(int(window/1e9) + 1)
	st.open = new(openStats)
	sc := newSchedule(rate, 1, 0, 1, nil)
	first := sc
	busy := make([]slot, 0, qd) // in flight, with their completion in start's place
	now := int64(0)
	for {
		at, write := sc.due()
		// The engine's rule: I/Os due inside the window are issued
		// until lateGrace after it.
		issuing := at < window && now < window+int64(lateGrace)
		if !issuing && len(busy) == 0 {
			break
		}
		// The next event: a completion, or the next start if a slot is free.
		next, done := int64(math.MaxInt64), -1
		for i, b := range busy {
			if b.off < next {
				next, done = b.off, i
			}
		}
		if issuing && len(busy) < qd && max(at, now) <= next {
			now = max(at, now)
			sl := slot{write: write, intended: at, start: now, waited: now > at, size: 4096}
			sl.off = complete(now) // the completion time, carried in off
			busy = append(busy, sl)
			st.submitted(write)
			sc.take()
			continue
		}
		now = next
		sl := busy[done]
		busy = slices.Delete(busy, done, done+1)
		st.accountOpen(clk, &sl, now)
	}
	st.open.settle(first, sc, 0, window)
	return st
}

// Coordinated omission, on a simulated clock: a device that answers in
// 50 µs but stalls for 100 ms once a second, at 500 IOPS with one I/O in
// flight. The I/Os due during a stall wait for it: their response times
// reach 100 ms and put the p99 there, while service time, which starts at
// submission, sees the stall once a second and keeps its p99 at 50 µs.
func TestOpenLoopAccountingSimulated(t *testing.T) {
	const window = 10 * int64(time.Second)
	stall := func(at int64) int64 {
		if phase := at % 1e9; phase < 100e6 {
			return at - phase + 100e6 // held until the stall ends
		}
		return at + 50e3
	}
	st := simulateOpen(results.Rate{IOPS: 500, Arrival: results.ArrivalUniform}, 1, window, stall)
	o := st.open
	resp := results.Summarize(&o.readResp)
	service := results.Summarize(&st.readHist)
	if resp.P99 < 50e6 || resp.P99 > 100e6 {
		t.Errorf("response p99 %d ns, want the stall's 50..100 ms", resp.P99)
	}
	if service.P99 > 100e3 {
		t.Errorf("service p99 %d ns, want the device's 50 µs: a stall once a second is 1 I/O in 500", service.P99)
	}
	// 50 I/Os are due in each 100 ms stall; the first is in flight
	// (it waits in service), 49 find the slot busy, and so do the one or
	// two due while those drain at 50 µs each.
	if o.slotWaits < 10*49 || o.slotWaits > 10*52 || o.scheduled != 5000 || st.readIOs != 5000 || o.backlogAtEnd != 0 {
		t.Errorf("slot waits %d (want 490..520), scheduled %d, completed %d (want 5000), backlog at end %d",
			o.slotWaits, o.scheduled, st.readIOs, o.backlogAtEnd)
	}
	if late := results.Summarize(&o.lateness); late.P99 < 50e6 || o.late < 10*49 || o.late > 10*51 {
		t.Errorf("lateness p99 %d ns, %d late (want 490..510)", late.P99, o.late)
	}

	// A rate the device cannot carry: 2,000 IOPS at QD1 on a device of
	// 1 ms. The backlog grows by a thousand a second and is reported:
	// 4,000 due in 2 s, 2,000 issued then and 100 in the 100 ms after.
	slow := func(at int64) int64 { return at + 1e6 }
	st = simulateOpen(results.Rate{IOPS: 2000, Arrival: results.ArrivalUniform}, 1, 2e9, slow)
	if o := st.open; o.backlogAtEnd < 1890 || o.backlogAtEnd > 1910 || Sustained(o.backlogAtEnd, o.scheduled, 1) {
		t.Errorf("2,000 IOPS on a 1,000 IOPS device: backlog at the end %d of %d scheduled, want about 1,900 and not sustained", o.backlogAtEnd, o.scheduled)
	}
}

// stallDisk is a FUSE file whose reads stall for stall once every period:
// a read that arrives then is answered when the stall ends.
type stallDisk struct {
	testenv.DiskFile
	once          sync.Once
	t0            time.Time
	period, stall time.Duration
}

var _ = (fs.NodeReader)((*stallDisk)(nil))

func (d *stallDisk) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	d.once.Do(func() { d.t0 = time.Now() })
	if phase := time.Since(d.t0) % d.period; phase < d.stall {
		// sleep: the device's stall is what the test measures.
		time.Sleep(d.stall - phase)
	}
	end := min(off+int64(len(dest)), d.Size)
	clear(dest[:end-off])
	return fuse.ReadResultData(dest[:end-off]), 0
}

// Coordinated omission, shown on a real device: a FUSE file that stalls
// 100 ms once a second, at 500 IOPS with at most one I/O in flight. The
// response-time p99 shows the stall; the service-time p99 of the same
// I/Os and a closed-loop run's p99 do not.
func TestOpenLoopShowsStall(t *testing.T) {
	testenv.Integration(t)
	disk := &stallDisk{DiskFile: testenv.DiskFile{Size: 64 << 20}, period: time.Second, stall: 100 * time.Millisecond}
	dev := testenv.FUSELoop(t, disk)
	tg := openPlan(t, dev, target.Options{})
	testenv.Require(t, ProbeUring() == nil, "io_uring unavailable")
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 1, Jobs: 1,
		Rate: results.Rate{IOPS: 500, Arrival: results.ArrivalUniform}}
	r, err := Run(context.Background(), tg, p, Options{Runtime: 2 * time.Second, Seed: 1, Engine: EngineUring})
	if err != nil {
		t.Fatal(err)
	}
	resp, service := r.Read.ResponseLatNS, r.Read.ServiceLatNS
	t.Logf("open loop at 500 IOPS: response p50 %d p99 %d µs; service p50 %d p99 %d µs; %d I/Os, %d slot waits, lateness p99 %d µs",
		resp.P50/1000, resp.P99/1000, service.P50/1000, service.P99/1000, r.Read.IOs, r.Rate.SlotWaits, r.Rate.LatenessNS.P99/1000)
	if resp.P99 < 50e6 {
		t.Errorf("response p99 %d µs: the 100 ms stalls do not show", resp.P99/1000)
	}
	if service.P99 >= 50e6 {
		t.Errorf("service p99 %d µs: want below 50 ms (the stall delays one I/O a second)", service.P99/1000)
	}
	// The response times keep their whole distribution; the service
	// times' is lat_ns's, kept there once.
	if h, err := resp.Histogram(); err != nil || h == nil || h.Count() != r.Read.IOs || h.Percentile(99) != resp.P99 {
		t.Errorf("response histogram %v for %d I/Os, p99 %d (%v)", h, r.Read.IOs, resp.P99, err)
	}
	if service.Hist != nil || r.Read.LatNS.Hist == nil || r.Rate.LatenessNS.Hist != nil || r.Total.ResponseLatNS.Hist != nil {
		t.Error("a histogram kept twice, or lat_ns without one")
	}
	if r.Rate.SlotWaits < 40 {
		t.Errorf("%d I/Os waited for the slot: want about 49 per stall", r.Rate.SlotWaits)
	}
	p.Rate = results.Rate{}
	c, err := Run(context.Background(), tg, p, Options{Runtime: time.Second, Seed: 1, Engine: EngineUring})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("closed loop: %.0f IOPS, p99 %d µs", c.Read.IOPS, c.Read.LatNS.P99/1000)
	if c.Read.LatNS.P99 >= 50e6 || c.Read.ResponseLatNS != nil || c.Rate != nil {
		t.Errorf("closed loop: p99 %d µs, response %v, rate %v: want below 50 ms and no open-loop figures", c.Read.LatNS.P99/1000, c.Read.ResponseLatNS, c.Rate)
	}
}

// An open-loop run keeps its rate on a fast device: every I/O the
// schedule intended inside the window is issued, and the achieved rate is
// the schedule's own within 0.5 %; with uniform arrivals that is the
// target's.
func TestOpenLoopKeepsRate(t *testing.T) {
	testenv.Integration(t)
	testenv.Require(t, ProbeUring() == nil, "io_uring unavailable")
	dev := testenv.RAMDisk(t, 256<<20)
	tg := openPlan(t, dev, target.Options{})
	for _, arrival := range []string{results.ArrivalUniform, results.ArrivalPoisson} {
		p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 16, Jobs: 1,
			Rate: results.Rate{IOPS: 5000, Arrival: arrival}}
		r, err := Run(context.Background(), tg, p, Options{Runtime: time.Second, Ramp: 100 * time.Millisecond, Seed: 5, Engine: EngineUring})
		if err != nil {
			t.Fatal(err)
		}
		rs := r.Rate
		t.Logf("%s: scheduled %d (%.1f/s), achieved %.1f/s, lateness p50 %d p99 %d µs, %d late, backlog max %d end %d",
			arrival, rs.ScheduledIOs, rs.ScheduledIOPS, rs.AchievedIOPS, rs.LatenessNS.P50/1000, rs.LatenessNS.P99/1000, rs.LateIOs, rs.MaxBacklog, rs.BacklogAtEnd)
		if rs.BacklogAtEnd != 0 || !rs.Sustained {
			t.Errorf("%s: %d I/Os of the window never issued", arrival, rs.BacklogAtEnd)
		}
		// The window's completions are its schedule, plus what was due or
		// in flight at its start, less what was at its end: within 0.5 %,
		// or, on a machine busy enough that the stream fell behind, within
		// the backlog it built and its slots.
		d := math.Abs(float64(r.Total.IOs) - float64(rs.ScheduledIOs))
		if d > max(0.005*float64(rs.ScheduledIOs), float64(rs.MaxBacklog+uint64(p.QueueDepth))) {
			t.Errorf("%s: %d completed in the window against %d scheduled (%.1f against %.1f IOPS), backlog at most %d",
				arrival, r.Total.IOs, rs.ScheduledIOs, rs.AchievedIOPS, rs.ScheduledIOPS, rs.MaxBacklog)
		}
		if arrival == results.ArrivalUniform && rs.ScheduledIOs != 5000 {
			t.Errorf("uniform: %d scheduled in one second at 5,000 IOPS", rs.ScheduledIOs)
		}
		if !strings.HasSuffix(r.Name, "-rate5000"+map[string]string{results.ArrivalUniform: "-uniform"}[arrival]) {
			t.Errorf("name %s", r.Name)
		}
	}
}
