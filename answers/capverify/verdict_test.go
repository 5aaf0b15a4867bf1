package capverify

import (
	"path/filepath"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// checkedFixture is the capped fixture as cap verify leaves it: every
// result judged, the cap binding where binding says so.
func checkedFixture(t *testing.T, binding func(name string) bool) *results.Document {
	t.Helper()
	doc, err := results.ReadDocumentFile(filepath.Join("..", "..", "report", "testdata", "capped.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range doc.Results {
		r := &doc.Results[i]
		ios := results.Counts{Reads: r.Read.IOs, Writes: r.Write.IOs}
		r.CgroupIOs = &ios
		r.CapCheck = &results.CapCheck{ExpectedIOPS: r.Total.IOPS, OK: true, Binding: binding(r.Name),
			RateOK: true, CountersOK: true, RequestsPerIO: 1, ExpectedRequests: ios}
	}
	return doc
}

func TestCapVerdictSummaryPlurals(t *testing.T) {
	one := checkedFixture(t, func(string) bool { return true })
	one.Results = one.Results[:1]
	two := checkedFixture(t, func(string) bool { return true })
	two.Results = two.Results[:2]
	failed := func(d *results.Document) *results.Document {
		d.Results[0].CapCheck.OK = false
		return d
	}
	for _, c := range []struct {
		doc      *results.Document
		complete bool
		want     string
	}{
		{one, true, "the cap holds in 1 cell"},
		{two, true, "the cap holds in all 2 cells"},
		{one, false, "interrupted: the cap holds in the 1 cell measured"},
		{two, false, "interrupted: the cap holds in the 2 cells measured"},
	} {
		if got := Verdict(c.doc, VerdictRun{Complete: c.complete}).Summary; got != c.want {
			t.Errorf("summary %q, want %q", got, c.want)
		}
	}
	if got := Verdict(failed(one), VerdictRun{Complete: true}).Summary; got != "the cap does not hold in 1 of 1 cell" {
		t.Errorf("summary %q", got)
	}
	if got := Verdict(failed(two), VerdictRun{Complete: true}).Summary; got != "the cap does not hold in 1 of 2 cells" {
		t.Errorf("summary %q", got)
	}
}

// A cell another process's load kept from being judged is neither passed
// nor failed: the verdict is inconclusive when nothing failed, and a
// failure elsewhere still fails the whole (report's test renders it).
func TestCapVerdictInconclusive(t *testing.T) {
	doc := checkedFixture(t, func(string) bool { return true })
	doc.Results = doc.Results[:3]
	k := doc.Results[1].CapCheck
	k.OK, k.RateOK, k.Inconclusive = false, false, true
	k.Reasons = []string{"another process loaded the device during this cell's window: not judged"}
	v := Verdict(doc, VerdictRun{TolerancePct: 5, Complete: true})
	if v.Verdict != "inconclusive" || v.Passed != 2 || v.Failed != 0 || v.Inconclusive != 1 || !v.Cells[1].Inconclusive ||
		v.Summary != "the cap holds in 2 of 3 cells; 1 could not be judged: another process loaded the device while they were measured (run again on a quiet device)" {
		t.Errorf("verdict %q (%s), passed %d, failed %d, inconclusive %d", v.Verdict, v.Summary, v.Passed, v.Failed, v.Inconclusive)
	}
	k.Starved = true
	if v := Verdict(doc, VerdictRun{TolerancePct: 5, Complete: true}); v.Verdict != "inconclusive" ||
		v.Summary != "the cap holds in 2 of 3 cells; 1 could not be judged: the run waited for a CPU long enough to explain the shortfall while they were measured (run again on idle CPUs)" {
		t.Errorf("starved: verdict %q (%s)", v.Verdict, v.Summary)
	}
	k.OtherLoad = true
	if v := Verdict(doc, VerdictRun{TolerancePct: 5, Complete: true}); v.Verdict != "inconclusive" ||
		v.Summary != "the cap holds in 2 of 3 cells; 1 could not be judged: another process loaded the device, and the run waited for a CPU long enough to explain the shortfall while they were measured (run again on a quiet device with idle CPUs)" {
		t.Errorf("loaded and starved: verdict %q (%s)", v.Verdict, v.Summary)
	}
	k.Starved, k.OtherLoad = false, false
	doc.Results[2].CapCheck.OK = false
	doc.Results[2].CapCheck.Reasons = []string{"measured 900 IOPS, the cap model expects 1000"}
	if v := Verdict(doc, VerdictRun{Complete: true}); v.Verdict != "fail" || v.Failed != 1 || v.Inconclusive != 1 ||
		v.Summary != "the cap does not hold in 1 of 3 cells; 1 could not be judged: another process loaded the device" {
		t.Errorf("with a failure: verdict %q (%s)", v.Verdict, v.Summary)
	}
}
