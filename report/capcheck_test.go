package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// checkedFixture is the capped fixture as cap verify leaves it: every
// result judged, the cap binding where binding says so.
func checkedFixture(t *testing.T, binding func(name string) bool) *results.Document {
	t.Helper()
	doc := loadFixture(t, "capped")
	for i := range doc.Results {
		r := &doc.Results[i]
		ios := results.Counts{Reads: r.Read.IOs, Writes: r.Write.IOs}
		r.CgroupIOs = &ios
		r.CapCheck = &results.CapCheck{ExpectedIOPS: r.Total.IOPS, OK: true, Binding: binding(r.Name),
			RateOK: true, CountersOK: true, RequestsPerIO: 1, ExpectedRequests: ios}
	}
	return doc
}

func renderCapCheck(t *testing.T, doc *results.Document, run VerdictRun) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCapCheck(&b, doc, BuildCapVerdict(doc, run)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The "†" marks a cell where the cap does not bind; its footnote comes
// only with such a cell.
func TestCapCheckFootnoteOnlyWhereNotBinding(t *testing.T) {
	run := VerdictRun{TolerancePct: 5, Complete: true}
	all := renderCapCheck(t, checkedFixture(t, func(string) bool { return true }), run)
	if strings.Contains(all, NotBindingMark) {
		t.Errorf("every cell binding, yet a footnote or mark:\n%s", all)
	}
	one := renderCapCheck(t, checkedFixture(t, func(name string) bool { return name != "rand-4k-r100-qd1" }), run)
	if n := strings.Count(one, NotBindingMark+" the cap does not bind"); n != 1 {
		t.Errorf("one cell not binding: %d footnotes, want 1:\n%s", n, one)
	}
	if n := strings.Count(one, NotBindingMark); n != 2 { // the cell's mark and the footnote's
		t.Errorf("one cell not binding: %d marks, want the cell's and the footnote's:\n%s", n, one)
	}
}

// A tolerance of 0.05 % is shown as given, not rounded to 0.1 %.
func TestCapCheckHeaderTolerance(t *testing.T) {
	out := renderCapCheck(t, checkedFixture(t, func(string) bool { return true }), VerdictRun{TolerancePct: 0.05, Complete: true})
	if header, _, _ := strings.Cut(out, "\n"); !strings.HasSuffix(header, "tolerance 0.05 %") {
		t.Errorf("header %q", header)
	}
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
		if got := BuildCapVerdict(c.doc, VerdictRun{Complete: c.complete}).Summary; got != c.want {
			t.Errorf("summary %q, want %q", got, c.want)
		}
	}
	if got := BuildCapVerdict(failed(one), VerdictRun{Complete: true}).Summary; got != "the cap does not hold in 1 of 1 cell" {
		t.Errorf("summary %q", got)
	}
	if got := BuildCapVerdict(failed(two), VerdictRun{Complete: true}).Summary; got != "the cap does not hold in 1 of 2 cells" {
		t.Errorf("summary %q", got)
	}
}

// A cell another process's load kept from being judged is neither passed
// nor failed: the verdict is inconclusive when nothing failed, lists the
// cell with its reason, and a failure elsewhere still fails the whole.
func TestCapVerdictInconclusive(t *testing.T) {
	doc := checkedFixture(t, func(string) bool { return true })
	doc.Results = doc.Results[:3]
	k := doc.Results[1].CapCheck
	k.OK, k.RateOK, k.Inconclusive = false, false, true
	k.Reasons = []string{"another process loaded the device during this cell's window: not judged"}
	v := BuildCapVerdict(doc, VerdictRun{TolerancePct: 5, Complete: true})
	if v.Verdict != "inconclusive" || v.Passed != 2 || v.Failed != 0 || v.Inconclusive != 1 || !v.Cells[1].Inconclusive ||
		v.Summary != "the cap holds in 2 of 3 cells; 1 could not be judged: another process loaded the device while they were measured (run again on a quiet device)" {
		t.Errorf("verdict %q (%s), passed %d, failed %d, inconclusive %d", v.Verdict, v.Summary, v.Passed, v.Failed, v.Inconclusive)
	}
	out := renderCapCheck(t, doc, VerdictRun{TolerancePct: 5, Complete: true})
	if !strings.Contains(out, "\nINCONCLUSIVE: the cap holds in 2 of 3 cells") || !strings.Contains(out, doc.Results[1].Name+": another process loaded") ||
		!strings.Contains(out, "not judged") || strings.Contains(out, "FAIL") {
		t.Errorf("text:\n%s", out)
	}
	doc.Results[2].CapCheck.OK = false
	doc.Results[2].CapCheck.Reasons = []string{"measured 900 IOPS, the cap model expects 1000"}
	if v := BuildCapVerdict(doc, VerdictRun{Complete: true}); v.Verdict != "fail" || v.Failed != 1 || v.Inconclusive != 1 ||
		v.Summary != "the cap does not hold in 1 of 3 cells; 1 could not be judged: another process loaded the device" {
		t.Errorf("with a failure: verdict %q (%s)", v.Verdict, v.Summary)
	}
}
