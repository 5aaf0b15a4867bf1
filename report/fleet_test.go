package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/iomatrix/iomatrix/internal/stats"
	"github.com/iomatrix/iomatrix/results"
)

// The fleet fixtures are three real quick-profile sweeps of this project's
// test machine (1 s cells), each under a cap so that the members agree
// where they should: node-a and node-b under riops=2000,wiops=2000, node-c
// under 1600/1600, a member 20 % slower. Hostnames and the target path
// were set afterwards, as three machines would have them.
func fleetFixture(t *testing.T) *results.Document {
	t.Helper()
	var in []MemberInput
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		in = append(in, MemberInput{Doc: loadFixture(t, "fleet/"+n), Source: n + ".json"})
	}
	doc, err := Merge(in)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestMergeFlagsTheSlowMember(t *testing.T) {
	doc := fleetFixture(t)
	if len(doc.Members) != 3 || len(doc.Results) != 14 || doc.Cap != nil || doc.Host.Hostname != "fleet of 3" {
		t.Fatalf("%d members, %d cells, cap %v, host %q", len(doc.Members), len(doc.Results), doc.Cap, doc.Host.Hostname)
	}
	rows := Members(doc, IOPS, DefaultOutlier)
	for _, r := range rows {
		if r.Outlier != (r.Label == "node-c") || r.Cells != 14 {
			t.Errorf("%+v: only node-c, 20 %% slower, is an outlier", r)
		}
	}
	if c := rows[2]; c.Ratio > 0.85 || c.Ratio < 0.75 {
		t.Errorf("node-c at %.3f of the fleet median, want about 0.8", c.Ratio)
	}
	// Each cell: the median member's figure, and the range.
	for _, r := range doc.Results {
		sp := r.Fleet.Metrics[string(IOPS)]
		var vals []float64
		for _, m := range doc.Members {
			for _, mr := range m.Results {
				if mr.Name == r.Name {
					vals = append(vals, mr.Total.IOPS)
				}
			}
		}
		if len(r.Fleet.Members) != 3 || sp.Median != stats.Median(vals) || sp.Min > sp.Median || sp.Max < sp.Median || r.Total.IOPS != sp.Median {
			t.Errorf("%s: %+v from %v", r.Name, sp, vals)
		}
	}
	// report and compare read it as any results file: the median.
	if v, _ := IOPS.Measure(doc.Results[0]); v != doc.Results[0].Fleet.Metrics["iops"].Median {
		t.Errorf("Measure %v", v)
	}
	c := Compare(doc, doc, "a", "b", IOPS)
	if c.GeoMean == nil || *c.GeoMean != 1 || len(c.Cells) != 14 {
		t.Errorf("compare of a fleet with itself: %+v", c)
	}
}

func TestFleetReportGolden(t *testing.T) {
	doc := fleetFixture(t)
	for _, c := range []struct {
		format, file string
		o            Options
	}{
		{"text", "fleet.txt", Options{}}, {"markdown", "fleet.md", Options{}}, {"csv", "fleet.csv", Options{}},
		{"csv", "fleet.wide.csv", Options{Wide: true}}, {"json", "fleet.json", Options{}}, {"html", "fleet.html", Options{}},
	} {
		f, err := Lookup(c.format)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := f(&b, doc, c.o); err != nil {
			t.Fatal(err)
		}
		golden(t, c.file, b.Bytes())
		out := b.String()
		for _, label := range []string{"node-a", "node-b", "node-c"} {
			if !strings.Contains(out, label) {
				t.Errorf("%s: member %s not named", c.file, label)
			}
		}
		// node-c's flag and the note that explains it.
		if c.format != "json" && c.file != "fleet.csv" && strings.Count(out, "OUTLIER") != 2 {
			t.Errorf("%s: %d OUTLIER flags, want node-c's and the note's", c.file, strings.Count(out, "OUTLIER"))
		}
	}
	var x bytes.Buffer
	if err := writeXLSX(&x, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	book, err := excelize.OpenReader(&x)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = book.Close() }()
	rows, err := book.GetRows("members")
	if err != nil || len(rows) < 6 || rows[5][0] != "node-c" || rows[5][7] != "TRUE" || rows[3][7] != "FALSE" {
		t.Errorf("XLSX members sheet: %v %q", err, rows)
	}
	// Its results sheet holds the members' own rows, not the fleet's cells.
	res, _ := book.GetRows("results")
	if len(res) != 1+3*14 || res[0][0] != "member" || res[len(res)-1][0] != "node-c" {
		t.Errorf("XLSX results sheet: %d rows, header %v", len(res), res[0])
	}
	var back results.Document
	var b bytes.Buffer
	_ = writeJSON(&b, doc, Options{})
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Members) != 3 || back.Results[0].Fleet == nil {
		t.Errorf("the JSON fleet document does not read back: %v", err)
	}
}

func TestMergeRefuses(t *testing.T) {
	one := loadFixture(t, "fleet/node-a")
	fleet := fleetFixture(t)
	for _, c := range []struct {
		name string
		in   []MemberInput
		want string
	}{
		{"one member", []MemberInput{{Doc: one, Source: "a.json"}}, "two members or more"},
		{"a fleet", []MemberInput{{Doc: one, Source: "a.json"}, {Doc: fleet, Source: "f.json"}}, "f.json is a fleet document already"},
		{"same label", []MemberInput{{Doc: one, Source: "a.json"}, {Doc: one, Source: "b.json"}}, "both be labelled"},
		{"same given label", []MemberInput{{Doc: one, Source: "a.json", Label: "x"}, {Doc: loadFixture(t, "fleet/node-b"), Source: "b.json", Label: "x"}}, `"x"`},
		{"a label of two lines", []MemberInput{{Doc: one, Source: "a.json", Label: "x\ny"}, {Doc: loadFixture(t, "fleet/node-b"), Source: "b.json", Label: "z"}},
			`a.json: label "x\ny" holds a character that is not printable`},
	} {
		_, err := Merge(c.in)
		if !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// One host twice: host and target tell the members apart.
	two := *one
	two.Target.Path = "/mnt/other/iomatrix.dat"
	doc, err := Merge([]MemberInput{{Doc: one, Source: "a.json"}, {Doc: &two, Source: "b.json"}})
	if err != nil || doc.Members[0].Label != "node-a:/mnt/vol/iomatrix.dat" || doc.Members[1].Label != "node-a:/mnt/other/iomatrix.dat" {
		t.Errorf("labels %v", err)
	}
}
