package report_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/answers/capverify"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// checkedFixture is the capped fixture as cap verify leaves it: every
// result judged, the cap binding where binding says so.
func checkedFixture(t *testing.T, binding func(name string) bool) *results.Document {
	t.Helper()
	doc, err := results.ReadDocumentFile(filepath.Join("testdata", "capped.json"))
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

// renderCapCheck renders doc's verdict as cap verify decides it.
func renderCapCheck(t *testing.T, doc *results.Document, run capverify.VerdictRun) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteCapCheck(&b, doc, capverify.Verdict(doc, run)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The "†" marks a cell where the cap does not bind; its footnote comes
// only with such a cell.
func TestCapCheckFootnoteOnlyWhereNotBinding(t *testing.T) {
	run := capverify.VerdictRun{TolerancePct: 5, Complete: true}
	all := renderCapCheck(t, checkedFixture(t, func(string) bool { return true }), run)
	if strings.Contains(all, report.NotBindingMark) {
		t.Errorf("every cell binding, yet a footnote or mark:\n%s", all)
	}
	one := renderCapCheck(t, checkedFixture(t, func(name string) bool { return name != "rand-4k-r100-qd1" }), run)
	if n := strings.Count(one, report.NotBindingMark+" the cap does not bind"); n != 1 {
		t.Errorf("one cell not binding: %d footnotes, want 1:\n%s", n, one)
	}
	if n := strings.Count(one, report.NotBindingMark); n != 2 { // the cell's mark and the footnote's
		t.Errorf("one cell not binding: %d marks, want the cell's and the footnote's:\n%s", n, one)
	}
}

// A tolerance of 0.05 % is shown as given, not rounded to 0.1 %.
func TestCapCheckHeaderTolerance(t *testing.T) {
	out := renderCapCheck(t, checkedFixture(t, func(string) bool { return true }), capverify.VerdictRun{TolerancePct: 0.05, Complete: true})
	if header, _, _ := strings.Cut(out, "\n"); !strings.HasSuffix(header, "tolerance 0.05 %") {
		t.Errorf("header %q", header)
	}
}

// A cell another process's load kept from being judged is listed with
// its reason, as not judged, under an INCONCLUSIVE verdict.
func TestCapVerdictInconclusive(t *testing.T) {
	doc := checkedFixture(t, func(string) bool { return true })
	doc.Results = doc.Results[:3]
	k := doc.Results[1].CapCheck
	k.OK, k.RateOK, k.Inconclusive = false, false, true
	k.Reasons = []string{"another process loaded the device during this cell's window: not judged"}
	out := renderCapCheck(t, doc, capverify.VerdictRun{TolerancePct: 5, Complete: true})
	if !strings.Contains(out, "\nINCONCLUSIVE: the cap holds in 2 of 3 cells") || !strings.Contains(out, doc.Results[1].Name+": another process loaded") ||
		!strings.Contains(out, "not judged") || strings.Contains(out, "FAIL") {
		t.Errorf("text:\n%s", out)
	}
}

// Against a volume's provisioned limits: the header names them as the
// volume's own, no cgroup's counters are shown, a cell above the limits
// is ABOVE with "bursting" in its reason and in the verdict, and a cell
// excused by a deeper queue has its own footnote.
func TestCapCheckProvisioned(t *testing.T) {
	doc := checkedFixture(t, func(name string) bool { return name != "rand-4k-r100-qd1" })
	l, err := capverify.ParseProvisioned("iops=3000,bps=125MiB")
	if err != nil {
		t.Fatal(err)
	}
	doc.Cap = l.Record("254:16")
	for i := range doc.Results {
		doc.Results[i].CgroupIOs = nil
	}
	doc.Results[6].CapCheck.DeeperReached = "rand-4k-r100-qd32"
	k := doc.Results[4].CapCheck
	k.OK, k.RateOK, k.Above = false, false, true
	k.Reasons = []string{"measured 9000 IOPS, above the 3000 the provisioned limits allow (+200.0 %, tolerance 5 %): bursting or uncapped"}
	out := renderCapCheck(t, doc, capverify.VerdictRun{TolerancePct: 5, Complete: true})
	for _, want := range []string{
		"provisioned limits iops=3000,bps=125MiB on 254:16 (the volume's own: no cgroup)",
		" ABOVE |", "ABOVE marks a cell that did more than the provisioned limits allow: the volume is bursting",
		"limits: provisioned, the volume's own as its provider advertises them; no cgroup was made or joined",
		report.NotBindingMark + " the limits do not bind at that depth",
		"window: " + capverify.ProvisionedWindowRule,
		"\nABOVE: the volume did more than its provisioned limits in 1 of 8 cells: bursting or uncapped",
		"rand-4k-r100-qd32: measured 9000 IOPS, above the 3000 the provisioned limits allow (+200.0 %, tolerance 5 %): bursting or uncapped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"cgroup requests", "unavailable", " FAIL |", "\nFAIL", "cap does not bind", "cgroup v"} {
		if strings.Contains(out, not) {
			t.Errorf("text holds %q:\n%s", not, out)
		}
	}
}
