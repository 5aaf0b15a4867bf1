package capverify

import (
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/results"
)

// provisionedCells are results measured against a volume's limits l at
// the IOPS given, by pattern, each judged as cap verify judges it, the
// depth rule applied as each one comes in.
func provisionedCells(t *testing.T, l Limits, iops map[results.Pattern]float64, order []results.Pattern) *results.Document {
	t.Helper()
	doc := &results.Document{Cap: l.Record("254:16")}
	for _, p := range order {
		n := uint64(iops[p] * 2)
		res := results.Result{Name: p.Name(), Pattern: p, DurationNS: int64(2 * time.Second), Total: results.Total{IOPS: iops[p]},
			Read: results.DirStats{IOs: n * uint64(p.ReadPct) / 100}, Completed: results.Counts{Reads: n * uint64(p.ReadPct) / 100}}
		res.Write.IOs, res.Completed.Writes = n-res.Read.IOs, n-res.Read.IOs
		k := Judge(LimitsOf(doc.Cap), Cell{ReadPct: p.ReadPct, BlockSize: p.BlockSize, MeasuredIOPS: res.Total.IOPS,
			Window: results.Counts{Reads: res.Read.IOs, Writes: res.Write.IOs}, Issued: res.Completed, Runtime: 2 * time.Second}, 5)
		res.CapCheck = &k
		JudgeDepths(append(doc.Results[:len(doc.Results):len(doc.Results)], res))
		doc.Results = append(doc.Results, res)
	}
	return doc
}

func rand4k(read, qd int) results.Pattern {
	return results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: read, QueueDepth: qd, Jobs: 1}
}

// At a shallow queue a volume's latency sets the rate: the cell holds,
// not binding, when a deeper queue of the same pattern reaches the
// limits, whichever is measured first; it fails when none does.
func TestJudgeDepths(t *testing.T) {
	l := Limits{IOPS: 3000, Provisioned: true}
	qd1, qd8, qd32 := rand4k(100, 1), rand4k(100, 8), rand4k(100, 32)
	w1, w32 := rand4k(0, 1), rand4k(0, 32)
	iops := map[results.Pattern]float64{qd1: 1100, qd8: 2700, qd32: 3010, w1: 900, w32: 2500}
	for _, order := range [][]results.Pattern{{qd1, qd8, qd32, w1, w32}, {w32, w1, qd32, qd8, qd1}} {
		doc := provisionedCells(t, l, iops, order)
		v := Verdict(doc, VerdictRun{TolerancePct: 5, Complete: true})
		byName := map[string]results.CapVerdictCell{}
		for _, c := range v.Cells {
			byName[c.Name] = c
		}
		for _, short := range []results.Pattern{qd1, qd8} {
			c := byName[short.Name()]
			if !c.OK || c.Binding || c.DeeperReached != qd32.Name() || len(c.Reasons) > 0 {
				t.Errorf("%v: %s short where QD32 reached the limits: %+v", order, c.Name, c.CapCheck)
			}
		}
		// Writes never reach the limits: each write cell fails, the
		// deeper as the shallower; the reads do not excuse them.
		for _, p := range []results.Pattern{w1, w32} {
			if c := byName[p.Name()]; c.OK || c.DeeperReached != "" || !c.Binding || !strings.Contains(c.Reasons[0], "does less than its limits") {
				t.Errorf("%v: %s: %+v", order, c.Name, c.CapCheck)
			}
		}
		if v.Verdict != "fail" || v.Failed != 2 || v.Passed != 3 || v.Summary != "the volume does less than its provisioned limits in 2 of 5 cells" {
			t.Errorf("%v: verdict %q (%s), passed %d, failed %d", order, v.Verdict, v.Summary, v.Passed, v.Failed)
		}
	}
	// A deeper cell above the limits (bursting) reached them too; one
	// that was not judged (starved) is no evidence.
	iops[qd32] = 9000
	doc := provisionedCells(t, l, iops, []results.Pattern{qd1, qd32})
	if k := doc.Results[0].CapCheck; !k.OK || k.DeeperReached != qd32.Name() || !doc.Results[1].CapCheck.Above {
		t.Errorf("behind a burst: %+v, %+v", k, doc.Results[1].CapCheck)
	}
	doc = provisionedCells(t, l, iops, []results.Pattern{qd32, qd1})
	if k := doc.Results[1].CapCheck; !k.OK {
		t.Fatalf("QD1 behind a burst at QD32: %+v", k)
	}
	doc = provisionedCells(t, l, iops, []results.Pattern{qd32})
	doc.Results[0].CapCheck.Above, doc.Results[0].CapCheck.Inconclusive = false, true
	cells := append(doc.Results, provisionedCells(t, l, iops, []results.Pattern{qd1}).Results...)
	JudgeDepths(cells)
	if k := cells[1].CapCheck; k.OK || k.DeeperReached != "" {
		t.Errorf("QD1 excused by a QD32 cell not judged: %+v", k)
	}
	// Other patterns never excuse each other: another block size, a
	// sequential access, another share.
	for _, other := range []results.Pattern{
		{Access: results.Random, BlockSize: 8192, ReadPct: 100, QueueDepth: 32, Jobs: 1},
		{Access: results.Sequential, BlockSize: 4096, ReadPct: 100, QueueDepth: 32, Jobs: 1},
		rand4k(90, 32),
	} {
		iops[other] = 3000
		doc := provisionedCells(t, l, iops, []results.Pattern{qd1, other})
		if k := doc.Results[0].CapCheck; k.OK || k.DeeperReached != "" {
			t.Errorf("%s excused by %s: %+v", qd1.Name(), other.Name(), k)
		}
	}
	// More jobs are a deeper queue too.
	jobs := rand4k(100, 8)
	jobs.Jobs = 4
	iops[jobs] = 3000
	if k := provisionedCells(t, l, iops, []results.Pattern{qd8, jobs}).Results[0].CapCheck; !k.OK || k.DeeperReached != jobs.Name() {
		t.Errorf("QD8 behind QD8 x 4 jobs: %+v", k)
	}
}

// The verdict on a volume's limits: its words, its window, no counter
// rule, and "above" for a volume that does more than its limits, between
// a failure, which outranks it, and an inconclusive cell.
func TestProvisionedVerdict(t *testing.T) {
	l := Limits{IOPS: 300, Provisioned: true}
	r, w := rand4k(100, 8), rand4k(0, 8)
	at := provisionedCells(t, l, map[results.Pattern]float64{r: 300, w: 297}, []results.Pattern{r, w})
	v := Verdict(at, VerdictRun{TolerancePct: 5, Complete: true})
	if v.Verdict != "ok" || v.Summary != "the volume holds at its provisioned limits in all 2 cells" || v.Settings.Window != ProvisionedWindowRule ||
		v.Settings.CounterTolerancePct != 0 || v.Cap == nil || !v.Cap.Provisioned || v.Cap.IOPS != 300 || v.BaselineFile != "" {
		t.Errorf("at the limits: %+v", v)
	}
	bursting := provisionedCells(t, l, map[results.Pattern]float64{r: 2990, w: 300}, []results.Pattern{r, w})
	v = Verdict(bursting, VerdictRun{TolerancePct: 5, Complete: true})
	if v.Verdict != "above" || v.Above != 1 || v.Passed != 1 || v.Failed != 0 || v.Inconclusive != 0 ||
		!strings.HasPrefix(v.Summary, "the volume did more than its provisioned limits in 1 of 2 cells: bursting or uncapped") {
		t.Errorf("bursting: %q (%s), above %d, passed %d", v.Verdict, v.Summary, v.Above, v.Passed)
	}
	bursting.Results[1].CapCheck.OK, bursting.Results[1].CapCheck.Inconclusive = false, true
	bursting.Results[1].CapCheck.Starved = true
	if v := Verdict(bursting, VerdictRun{Complete: true}); v.Verdict != "above" || v.Inconclusive != 1 ||
		!strings.HasSuffix(v.Summary, "; 1 could not be judged: the run waited for a CPU long enough to explain the shortfall") {
		t.Errorf("bursting and starved: %q (%s)", v.Verdict, v.Summary)
	}
	if v := Verdict(bursting, VerdictRun{Complete: false}); v.Verdict != "incomplete" ||
		v.Summary != "interrupted: the volume holds at its provisioned limits in 0 of the 2 cells measured; 1 could not be judged: "+
			"the run waited for a CPU long enough to explain the shortfall; 1 did more than the limits: bursting or uncapped" {
		t.Errorf("interrupted: %q (%s)", v.Verdict, v.Summary)
	}
	mixed := provisionedCells(t, l, map[results.Pattern]float64{r: 2990, w: 200}, []results.Pattern{r, w})
	if v := Verdict(mixed, VerdictRun{Complete: true}); v.Verdict != "fail" || v.Failed != 1 || v.Above != 1 ||
		v.Summary != "the volume does less than its provisioned limits in 1 of 2 cells; 1 did more than the limits: bursting or uncapped" {
		t.Errorf("one short, one above: %q (%s)", v.Verdict, v.Summary)
	}
}
