package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// lookupDoc writes a results file whose random 4k cells (70 % reads, QD8)
// claim iops, with a p99 of 200 µs on a million I/Os: the lookup believes
// whatever it says, the rehearsal measures.
func lookupDoc(t *testing.T, iops float64) string {
	t.Helper()
	var rs []results.Result
	for _, read := range []int{100, 70, 50, 0} {
		p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: read, QueueDepth: 8, Jobs: 1}
		rs = append(rs, results.Result{Name: p.Name(), Pattern: p, Total: results.Total{IOs: 1 << 20, IOPS: iops,
			LatNS: &results.Latency{P50: 50_000, P99: 200_000, Count: 1 << 20}}})
	}
	doc := &results.Document{SchemaVersion: results.SchemaVersion, Tool: results.Tool{Name: "iomatrix", Version: results.Version}, Results: rs}
	path := filepath.Join(t.TempDir(), "lookup.json")
	testenv.Must(t, results.WriteFileAtomic(path, doc))
	return path
}

func workloadFile(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "systems.yaml")
	testenv.Must(t, os.WriteFile(path, []byte(yaml), 0o644))
	return path
}

// Three systems under the caps the lookup proposes, on a RAM disk, each
// in a cgroup of its own: each keeps its own rate within 1 % of its
// schedule, its p99 response time is reported, its cgroup counted its
// I/O, and the document says so and renders.
func TestFitRehearseWithCaps(t *testing.T) {
	loop := testenv.RAMDisk(t, 512<<20)
	lookup := lookupDoc(t, 60000)
	work := workloadFile(t, `systems:
  - {name: erp, reads: 3000, writes: 1000, block_size: 4k, concurrency: 8, latency: "p99<50ms"}
  - {name: web, reads: 2000, writes: 500, block_size: 4k, concurrency: 8, latency: "p99<50ms"}
  - {name: batch, reads: 1000, writes: 1000, block_size: 4k, concurrency: 8}
`)
	out := filepath.Join(t.TempDir(), "rehearsal.json")
	r := runInProcess("fit", lookup, "--workload", work, "--rehearse", loop, "--with-caps", "--allow-destructive",
		"--runtime", "2s", "--ramp", "500ms", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	doc, err := results.ReadDocumentFile(out)
	testenv.Must(t, err)
	reh := doc.Rehearsal
	if reh == nil || !reh.Fits || !reh.LookupFits || !reh.WithCaps || len(reh.Systems) != 3 || len(doc.Results) != 3 || doc.FinishedAt == "" {
		t.Fatalf("rehearsal %+v, %d results", reh, len(doc.Results))
	}
	for i, sys := range reh.Systems {
		res := doc.Results[i]
		t.Logf("%s: scheduled %.1f, achieved %.1f (%+.3f %%), p99 response %.0f µs, cap %+v, cgroup %+v",
			sys.Name, sys.ScheduledIOPS, sys.AchievedIOPS, sys.DeviationPct, sys.ResponseP99US, sys.Cap, res.CgroupIOs)
		target := sys.ReadIOPS + sys.WriteIOPS
		if res.Name != sys.Name || res.Rate == nil || !sys.Sustained || math.Abs(sys.DeviationPct) > 1 ||
			math.Abs(sys.AchievedIOPS/target-1) > 0.01 || sys.ResponseP99US <= 0 {
			t.Errorf("%s: %+v", sys.Name, sys)
		}
		// The cap is its share: its need and a sixth of the room the
		// cell's 60,000 IOPS leave over the 8,500 needed.
		share := func(need float64) uint64 { return uint64(math.Floor(need + (60000-8500)/6.0)) }
		if sys.Cap == nil || sys.Cap.ReadIOPS != share(sys.ReadIOPS) || sys.Cap.WriteIOPS != share(sys.WriteIOPS) {
			t.Errorf("%s: cap %+v", sys.Name, sys.Cap)
		}
		if c := res.CgroupIOs; c == nil || c.Reads < res.Completed.Reads || c.Writes < res.Completed.Writes {
			t.Errorf("%s: the cgroup counted %+v of %+v completed", sys.Name, c, res.Completed)
		}
	}
	for _, want := range []string{"rehearsal of 3 systems at once", "| erp ", "| batch ", "rehearsal: FITS (the lookup agrees)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	rep := runInProcess("report", out)
	if rep.code != 0 || !strings.Contains(rep.stdout, "rehearsal of 3 systems at once") {
		t.Errorf("report: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
}

// A workload far above what the device carries does not fit by the
// rehearsal, whatever the lookup says: a lookup file that overstates the
// device says it fits, and the exit status follows the measurement. The
// device serves 2,000 IOPS and the systems need 8,000: the machine's CPUs
// drive that with room to spare, so that the shortfall is the device's
// and not a starved CPU's (which would make the rehearsal inconclusive).
func TestFitRehearseOverCapacity(t *testing.T) {
	_, loop := testenv.CapacityLoop(t, testenv.CapacityOptions{IOPS: 2000, Size: 512 << 20})
	lookup := lookupDoc(t, 5e6)
	work := workloadFile(t, `systems:
  - {name: a, reads: 3000, writes: 1000, block_size: 4k, concurrency: 8}
  - {name: b, reads: 3000, writes: 1000, block_size: 4k, concurrency: 8}
`)
	out := filepath.Join(t.TempDir(), "rehearsal.json")
	r := runInProcess("fit", lookup, "--workload", work, "--rehearse", loop, "--allow-destructive",
		"--runtime", "1s", "--ramp", "250ms", "-o", out)
	if r.code != exitFailure {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	doc, err := results.ReadDocumentFile(out)
	testenv.Must(t, err)
	reh := doc.Rehearsal
	if reh == nil || reh.Fits || !reh.LookupFits {
		t.Fatalf("rehearsal %+v", reh)
	}
	for _, sys := range reh.Systems {
		t.Logf("%s: scheduled %.0f, achieved %.0f, sustained %v, CPU wait %.1f %%: %s", sys.Name, sys.ScheduledIOPS, sys.AchievedIOPS, sys.Sustained, sys.CPUWaitPct, sys.Why)
		if sys.Fits || sys.Sustained || sys.Inconclusive || !strings.Contains(sys.Why, "rate not sustained") {
			t.Errorf("%s: %+v", sys.Name, sys)
		}
	}
	if !strings.Contains(r.stdout, "rehearsal: DOES NOT FIT, but the lookup says FITS") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}

// A version 2 workload's systems replay their observed shapes: each its
// timeline from the observation the file names (its I/Os per second
// following it), its size mix and its durable writes; the document and
// the notices say what was replayed, and --flat keeps the rates flat.
func TestFitRehearseShape(t *testing.T) {
	loop := testenv.RAMDisk(t, 512<<20)
	lookup := lookupDoc(t, 60000)
	dir := t.TempDir()
	// An observation of two systems, eight seconds: erp's reads step
	// from 400/s to 1,600/s at 4 s with 200 writes/s; web reads 300/s.
	obs := results.NewObservation(results.ObserveSettings{IntervalNS: 1e9}, "2026-12-01T00:00:00Z")
	series := func(reads, writes []uint64) *results.ObservedSeries {
		tl := results.Timeline{StepNS: 1e9, Counters: map[string][]uint64{"rios": reads, "wios": writes}}
		for i := range reads {
			tl.EndMS, tl.ElapsedUS = append(tl.EndMS, int64(i+1)*1000), append(tl.ElapsedUS, 1e6)
		}
		return &results.ObservedSeries{Kind: "cgroup", Seconds: tl}
	}
	obs.Systems = []results.ObservedSystem{
		{Name: "erp", Cgroup: "/erp", IO: series([]uint64{400, 400, 400, 400, 1600, 1600, 1600, 1600}, []uint64{200, 200, 200, 200, 200, 200, 200, 200})},
		{Name: "web", Cgroup: "/web", IO: series([]uint64{300, 300, 300, 300, 300, 300, 300, 300}, []uint64{0, 0, 0, 0, 0, 0, 0, 0})},
	}
	data, err := results.EncodeObservation(obs)
	testenv.Must(t, err)
	testenv.Must(t, results.WriteBytesAtomic(filepath.Join(dir, "obs.json"), data))
	work := filepath.Join(dir, "systems.yaml")
	testenv.Must(t, os.WriteFile(work, []byte(`version: 2
headroom_pct: 0
systems:
  - {name: erp, reads: 1600, writes: 200, block_size: 4k, concurrency: 8, read_share: 0.8, bssplit: "4k/50:16k/50,16k/100", durable_writes: 50,
     timeline: {observation: obs.json, system: erp, series: io}}
  - {name: web, reads: 300, block_size: 4k, concurrency: 4, timeline: {observation: obs.json, system: web, series: io}}
`), 0o644))
	out := filepath.Join(t.TempDir(), "rehearsal.json")
	r := runInProcess("fit", lookup, "--workload", work, "--rehearse", loop, "--allow-destructive", "--speed", "2",
		"--ramp", "0", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	doc, err := results.ReadDocumentFile(out)
	testenv.Must(t, err)
	reh := doc.Rehearsal
	if reh == nil || len(reh.Systems) != 2 {
		t.Fatalf("rehearsal %+v", reh)
	}
	erp, web := reh.Systems[0], reh.Systems[1]
	// Eight observed seconds at speed 2: steps of 500 ms, four seconds,
	// and the window (at least 10 s) replays them two and a half times.
	// Of erp's 200 writes a second, 50 are its durable writes' flushes:
	// 150 data writes, a sync after every third.
	if x := erp.Replayed; x == nil || x.Steps != 8 || x.StepNS != 5e8 || x.MeanReadIOPS != 1000 || x.MeanWriteIOPS != 150 || x.FlushIOPS != 50 ||
		x.BSSplit != "4k/50:16k/50,16k/100" || x.Sync != "fdatasync:3:after" || !strings.HasSuffix(x.Timeline, "obs.json: erp io") {
		t.Errorf("erp replayed %+v", erp.Replayed)
	}
	if web.Replayed == nil || web.Replayed.Steps != 8 || web.Replayed.MeanReadIOPS != 300 {
		t.Errorf("web replayed %+v", web.Replayed)
	}
	res := doc.Results[0]
	if res.Rate == nil || res.Rate.ProfileSteps != 8 || !erp.Sustained || math.Abs(erp.DeviationPct) > 1 || res.Pattern.Sync != "fdatasync:3:after" ||
		res.Pattern.BSSplit == "" {
		t.Errorf("erp: %+v, rate %+v, pattern %+v", erp, res.Rate, res.Pattern)
	}
	// The schedule: the 10 s window holds two cycles of the profile
	// (4,600 I/Os each) and the first half of a third (1,100).
	if sched := res.Rate.ScheduledIOPS; math.Abs(sched-1030) > 11 {
		t.Errorf("erp's schedule %.1f IOPS, want 1,030", sched)
	}
	if !strings.Contains(r.stderr, "replaying erp: its timeline (") || !strings.Contains(r.stderr, "its size mix 4k/50:16k/50,16k/100, its durable writes as fdatasync:3:after (50 of its writes a second their flushes, not data writes)") {
		t.Errorf("notices:\n%s", r.stderr)
	}
	// --flat: the file's rates, no profile.
	out2 := filepath.Join(t.TempDir(), "flat.json")
	r = runInProcess("fit", lookup, "--workload", work, "--rehearse", loop, "--allow-destructive", "--flat", "--runtime", "2s", "--ramp", "0", "-o", out2)
	if r.code != 0 {
		t.Fatalf("--flat: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	doc, err = results.ReadDocumentFile(out2)
	testenv.Must(t, err)
	if s := doc.Rehearsal.Systems[0]; s.Replayed != nil || doc.Results[0].Rate.ProfileSteps != 0 || doc.Results[0].Rate.TargetIOPS != 1800 {
		t.Errorf("--flat: %+v, rate %+v", s, doc.Results[0].Rate)
	}
	// Refused before any I/O: --speed without a timeline to replay, an
	// observation that is not there, --out naming the observation.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--flat", "--speed", "2"}, "iomatrix: --speed: replays observed timelines"},
		{[]string{"--speed", "0"}, "iomatrix: --speed: 0 is not a speed"},
		{[]string{"-o", filepath.Join(dir, "obs.json"), "--force"}, "is also --workload's timeline (an input)"},
	} {
		args := append([]string{"fit", lookup, "--workload", work, "--rehearse", loop, "--allow-destructive"}, c.args...)
		r := runInProcess(args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d\n%s", c.args, r.code, r.stderr)
		}
	}
	testenv.Must(t, os.Rename(filepath.Join(dir, "obs.json"), filepath.Join(dir, "moved.json")))
	r = runInProcess("fit", lookup, "--workload", work, "--rehearse", loop, "--allow-destructive", "-o", filepath.Join(t.TempDir(), "x.json"))
	if r.code != 2 || !strings.Contains(r.stderr, "--workload "+work+": system erp: timeline:") {
		t.Errorf("a missing observation: exit %d\n%s", r.code, r.stderr)
	}
}
