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
		// The cap is its share: the cell's 60,000 IOPS split by need
		// (8,500 in all).
		share := func(need float64) uint64 { return uint64(math.Floor(need * 60000 / 8500)) }
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
// device says it fits, and the exit status follows the measurement.
func TestFitRehearseOverCapacity(t *testing.T) {
	loop := testenv.RAMDisk(t, 512<<20)
	lookup := lookupDoc(t, 5e6)
	work := workloadFile(t, `systems:
  - {name: a, reads: 700000, writes: 300000, block_size: 4k, concurrency: 8}
  - {name: b, reads: 700000, writes: 300000, block_size: 4k, concurrency: 8}
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
		t.Logf("%s: scheduled %.0f, achieved %.0f, sustained %v: %s", sys.Name, sys.ScheduledIOPS, sys.AchievedIOPS, sys.Sustained, sys.Why)
		if sys.Fits || sys.Sustained || !strings.Contains(sys.Why, "rate not sustained") {
			t.Errorf("%s: %+v", sys.Name, sys)
		}
	}
	if !strings.Contains(r.stdout, "rehearsal: DOES NOT FIT, but the lookup says FITS") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}
