package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// provisionedRun is a cap verify --provisioned: its output, and the
// results file it wrote.
type provisionedRun struct {
	cmdResult
	doc *results.Document
}

// verifyProvisioned runs cap verify on target against the provisioned
// limits, with a profile of the patterns given (each a YAML flow
// mapping), under `iomatrix throttle --cap throttle` when throttle is
// set: a cgroup's cap standing in for a provider's limit. The volume's
// cap must hold it to its limits, and nothing of the verify may slip
// past it, so the whole verify runs in the capped cgroup, as a program
// does on a volume.
func verifyProvisioned(t *testing.T, target, throttle, limits string, patterns []string, flags ...string) provisionedRun {
	t.Helper()
	dir := t.TempDir()
	profile := filepath.Join(dir, "p.yaml")
	testenv.Must(t, os.WriteFile(profile, []byte("name: p\npatterns:\n  - "+strings.Join(patterns, "\n  - ")+"\n"), 0o644))
	out := filepath.Join(dir, "verify.json")
	args := append([]string{"cap", "verify", target, "--provisioned", limits, "--profile", profile, "--out", out, "--allow-destructive"}, flags...)
	if throttle != "" {
		exe, err := os.Executable()
		testenv.Must(t, err)
		args = append([]string{"throttle", "--cap", throttle, "--device", target, "--", exe}, args...)
	}
	r := provisionedRun{cmdResult: runIomatrix(t, iomatrixCmd(t, args...))}
	var err error
	if r.doc, err = results.ReadDocumentFile(out); err != nil {
		t.Fatalf("%v: exit %d, %v\n%s%s", args, r.code, err, r.stdout, r.stderr)
	}
	if c := r.doc.Cap; c == nil || !c.Provisioned || c.Cgroup != "" || c.CgroupVersion != 0 {
		t.Errorf("the results record the limits as %+v, not as provisioned", c)
	}
	if _, err := os.Stat(strings.TrimSuffix(out, ".json") + "-baseline.json"); !os.IsNotExist(err) {
		t.Errorf("a baseline was measured against provisioned limits: %v", err)
	}
	for _, res := range r.doc.Results {
		if k := res.CapCheck; k != nil {
			t.Logf("%s: %.0f IOPS (%d reads, %d writes in the window), expected %.0f (%+.1f %%), ok %v, above %v, inconclusive %v, cpu wait %.1f %%, %q",
				res.Name, res.Total.IOPS, res.Read.IOs, res.Write.IOs, k.ExpectedIOPS, k.DeviationPct, k.OK, k.Above, k.Inconclusive, k.CPUWaitPct, k.Reasons)
		}
	}
	return r
}

// The acceptance of issue 41's provisioned limits, with a cgroup's cap
// standing in for a provider's limit: on a RAM disk (far faster than
// either cap, see TestCapClassicTable) held at riops=wiops=500, a verify
// against those limits is OK; held 20 % below them, it is FAIL. The
// stand-in's windows are not aligned to its throttle's slices (a
// provider's limit has none), so a window may count one 100 ms slice of
// budget more or less than its share: 3 s windows keep that within 3.3 %,
// inside the 5 % tolerance; the cell 20 % short needs no such care.
//
// A cell whose wait for a CPU explains its rate is not judged, by the
// rule (docs/caps.md, "CPU wait"), and each case is run again while that
// is so (unlessStarved): beside the suite's other cap tests the cell 20 %
// short once waited 85 % of its window and ran 147 ms of it. Starved
// three times is the rule's answer, never a false verdict: logged.
func TestCapVerifyProvisioned(t *testing.T) {
	capController(t)
	t.Parallel()
	dev := testenv.RAMDisk(t, 64<<20)
	read, write := "{block_size: 4k, read_pct: 100, queue_depth: 4}", "{block_size: 4k, read_pct: 0, queue_depth: 4}"
	t.Run("held at its limits", func(t *testing.T) {
		r := unlessStarved(t, func() cmdResult {
			return verifyProvisioned(t, dev, "riops=500,wiops=500", "riops=500,wiops=500", []string{read, write}, "--runtime", "3s", "--ramp", "500ms").cmdResult
		})
		if starvedThrice(t, r) {
			return
		}
		if r.code != 0 || !strings.Contains(r.stdout, "\nOK: the volume holds at its provisioned limits in all 2 cells") ||
			!strings.Contains(r.stdout, "provisioned limits riops=500,wiops=500 on ") || strings.Contains(r.stdout, "cgroup requests") {
			t.Errorf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("20 % below them", func(t *testing.T) {
		var run provisionedRun
		r := unlessStarved(t, func() cmdResult {
			run = verifyProvisioned(t, dev, "riops=400", "riops=500", []string{read}, "--runtime", "1s", "--ramp", "250ms")
			return run.cmdResult
		})
		if starvedThrice(t, r) {
			return
		}
		res := run.doc.Results[0]
		if r.code != 1 || !strings.Contains(r.stdout, "\nFAIL: the volume does less than its provisioned limits in 1 of 1 cell") ||
			res.CapCheck.OK || res.CapCheck.DeviationPct > -15 || res.CapCheck.DeviationPct < -25 ||
			!strings.Contains(r.stdout, "the volume does less than its limits") {
			t.Errorf("exit %d, %.0f IOPS:\n%s%s", r.code, res.Total.IOPS, r.stdout, r.stderr)
		}
	})
}

// starvedThrice tells whether r, the last of unlessStarved's tries, was
// still not judged for its wait for a CPU: the rule's answer on a loaded
// machine, logged.
func starvedThrice(t *testing.T, r cmdResult) bool {
	t.Helper()
	if r.code == 3 && strings.Contains(r.stdout, "the run waited for a CPU long enough to explain the shortfall") {
		t.Logf("starved three times: not judged, by the rule\n%s", r.stdout)
		return true
	}
	return false
}

// A volume of burst credits (testenv's capacity disk: a bucket that earns
// 300 IOPS, holds 30,000 credits and serves at most 3,000 IOPS while they
// last, reads and writes alike) is above --provisioned iops=300 while
// its credits last, and the verdict says it is bursting; a volume held
// at 300 IOPS, reads and writes together, is OK against the same limit,
// which the model takes on the total whatever the read share.
func TestCapVerifyProvisionedBurst(t *testing.T) {
	testenv.Root(t)
	t.Run("held at a combined limit", func(t *testing.T) {
		_, dev := testenv.CapacityLoop(t, testenv.CapacityOptions{IOPS: 300, Size: 64 << 20})
		r := unlessStarved(t, func() cmdResult {
			return verifyProvisioned(t, dev, "", "iops=300", []string{"{block_size: 4k, read_pct: 50, queue_depth: 4}"}, "--runtime", "2s", "--ramp", "250ms", "--format", "json").cmdResult
		})
		if starvedThrice(t, r) {
			return
		}
		var v results.CapVerdict
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || dec.More() {
			t.Fatalf("stdout is not one verdict document: %v\n%s%s", err, r.stdout, r.stderr)
		}
		if r.code != 0 || v.Verdict != "ok" || v.Passed != 1 || v.Above != 0 || v.Cap == nil || !v.Cap.Provisioned || v.Cap.IOPS != 300 ||
			v.Cells[0].KernelRequests != nil || v.Cells[0].CarryPct != 0 || v.Settings.CounterTolerancePct != 0 || v.BaselineFile != "" {
			t.Errorf("exit %d, verdict %+v\n%s", r.code, v, r.stderr)
		}
	})
	t.Run("bursting", func(t *testing.T) {
		disk, dev := testenv.CapacityLoop(t, testenv.CapacityOptions{IOPS: 300, Burst: 30000, Size: 64 << 20})
		disk.Bucket().SetPeak(3000)
		disk.Reset()
		r := verifyProvisioned(t, dev, "", "iops=300", []string{"{block_size: 4k, read_pct: 100, queue_depth: 8}"}, "--runtime", "1s", "--ramp", "250ms")
		res, served := r.doc.Results[0], disk.Counts()
		t.Logf("the volume served %s", served)
		// Still on credits: the verify spent a few thousand of the 30,000.
		if served.Requests() >= 25000 {
			t.Fatalf("the credits ran out: %s", served)
		}
		if r.code != 3 || !strings.Contains(r.stdout, "\nABOVE: the volume did more than its provisioned limits in 1 of 1 cell: bursting or uncapped") ||
			!strings.Contains(r.stdout, res.Name+": measured ") || !res.CapCheck.Above || res.CapCheck.OK || res.CapCheck.Inconclusive ||
			res.Total.IOPS < 2*300 || res.Total.IOPS > 3000*1.05 {
			t.Errorf("exit %d, %.0f IOPS:\n%s%s", r.code, res.Total.IOPS, r.stdout, r.stderr)
		}
	})
}
