package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

func TestCompareGolden(t *testing.T) {
	base, cur := loadFixture(t, "full-missing"), loadFixture(t, "capped")
	c := Compare(base, cur, "full-missing.json", "capped.json", IOPS)
	// cdm shares 6 patterns with full (4k QD1/QD32 read and write, and
	// sequential 1m QD8 read and write) ...
	if len(c.Cells) != 6 {
		t.Fatalf("%d shared cells", len(c.Cells))
	}
	// ... and has two of its own; the rest of full is only in the base.
	if len(c.OnlyNew) != 2 || len(c.OnlyBase) != len(base.Results)-6 {
		t.Errorf("only new %v, only base %d", c.OnlyNew, len(c.OnlyBase))
	}
	var logs float64
	for _, d := range c.Cells {
		if math.Abs(d.Ratio-d.New/d.Base) > 1e-12 {
			t.Errorf("%s ratio %v", d.Name, d.Ratio)
		}
		logs += math.Log(d.Ratio)
	}
	if gm := math.Exp(logs / 6); math.Abs(gm-*c.GeoMean) > 1e-9 {
		t.Errorf("geomean %v, want %v", *c.GeoMean, gm)
	}
	if c.Worst.Ratio > c.Best.Ratio {
		t.Error("worst above best")
	}
	for _, f := range ComparisonFormats {
		var b bytes.Buffer
		if err := WriteComparison(&b, c, f); err != nil {
			t.Fatal(err)
		}
		golden(t, "compare."+f, b.Bytes())
	}
	// For latency a lower ratio is the better one.
	l := Compare(base, cur, "a", "b", LatP99)
	if l.Best.Ratio > l.Worst.Ratio {
		t.Error("latency: best has the higher ratio")
	}
}

func TestCompareSummaryOnePattern(t *testing.T) {
	base, cur := loadFixture(t, "capped"), loadFixture(t, "capped")
	cur.Results = cur.Results[:1]
	s := Compare(base, cur, "a", "b", IOPS).Summary()
	if !strings.HasPrefix(s, "1 pattern compared on iops: ") {
		t.Errorf("summary %q", s)
	}
}

// Two runs with no pattern in common have no ratio: the summary says so,
// Err reports it, and JSON carries no geometric mean rather than a 0 that
// reads as -100 %.
func TestCompareNothingInCommon(t *testing.T) {
	base, cur := loadFixture(t, "capped"), loadFixture(t, "jobs")
	c := Compare(base, cur, "capped.json", "jobs.json", IOPS)
	if c.GeoMean != nil {
		t.Errorf("geometric mean %v of nothing", *c.GeoMean)
	}
	if s := c.Summary(); !strings.Contains(s, "no pattern in common") || strings.Contains(s, "ratio 0") || strings.Contains(s, "-100") {
		t.Errorf("summary %q", s)
	}
	if err := c.Err(); !errors.Is(err, ErrNoCommonPattern) || !strings.Contains(err.Error(), "capped.json") || !strings.Contains(err.Error(), "jobs.json") {
		t.Errorf("Err() = %v", err)
	}
	var text bytes.Buffer
	if err := WriteComparison(&text, c, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no pattern in common", "only in base capped.json (8): ", "only in new jobs.json (7): "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := WriteComparison(&js, c, "json"); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, js.String())
	}
	if g, ok := doc["geomean_ratio"]; ok && g != nil {
		t.Errorf("geomean_ratio %v", g)
	}
	if cells, ok := doc["cells"].([]any); !ok || len(cells) != 0 {
		t.Errorf("cells %#v, want []", doc["cells"])
	}
	// With a pattern in common there is a ratio and no error.
	if c := Compare(base, base, "a", "b", IOPS); c.Err() != nil || c.GeoMean == nil || *c.GeoMean != 1 {
		t.Errorf("same run: %v, %v", c.Err(), c.GeoMean)
	}
}

// A comparison names every setting in which the runs differ: cells side by
// side from two targets, sizes, engines or caps are not like for like.
func TestCompareNamesDifferences(t *testing.T) {
	full, capped, small := loadFixture(t, "full-missing"), loadFixture(t, "capped"), loadFixture(t, "total-lat")
	small.Settings.Engine, small.Settings.EngineOptions = "psync", "sqpoll"
	small.Target.Path = "/mnt/other/iomatrix.dat"
	c := Compare(full, small, "full.json", "small.json", IOPS)
	want := []Difference{
		{"target", "/mnt/vol/iomatrix.dat", "/mnt/other/iomatrix.dat"},
		{"target size", "1GiB", "64MiB"},
		{"profile", "full", "mixed"},
		{"engine", "uring", "psync"},
		{"engine options", "none", "sqpoll"},
		{"runtime", "1s", "300ms"},
		{"kernel", "6.18.44-fc-v769", "6.18.44-fc-v595"},
	}
	if !slices.Equal(c.Differences, want) {
		t.Errorf("differences\n%v\nwant\n%v", c.Differences, want)
	}
	c = Compare(full, capped, "full.json", "capped.json", IOPS)
	want = []Difference{
		{"profile", "full", "cdm"},
		{"runtime", "1s", "500ms"},
		{"cap", "none", "riops=2000,wiops=1000 on 254:0 (cgroup v1)"},
	}
	if !slices.Equal(c.Differences, want) {
		t.Errorf("differences\n%v\nwant\n%v", c.Differences, want)
	}
	outputs := map[string]string{}
	for _, f := range ComparisonFormats {
		var b bytes.Buffer
		if err := WriteComparison(&b, c, f); err != nil {
			t.Fatal(err)
		}
		outputs[f] = b.String()
	}
	for f, lines := range map[string][]string{
		"text":     {"\n  profile: full → cdm\n", "\n  runtime: 1s → 500ms\n", "\n  cap: none → riops=2000,wiops=1000 on 254:0 (cgroup v1)\n"},
		"markdown": {"\n- profile: full → cdm\n", "\n- runtime: 1s → 500ms\n", "\n- cap: none → riops=2000,wiops=1000 on 254:0 (cgroup v1)\n"},
	} {
		head, _, _ := strings.Cut(outputs[f], "IOPS")
		for _, l := range lines {
			if !strings.Contains(head, l) {
				t.Errorf("%s: the header lacks %q:\n%s", f, l, head)
			}
		}
	}
	var js struct {
		Differences []Difference `json:"differences"`
	}
	if err := json.Unmarshal([]byte(outputs["json"]), &js); err != nil || !slices.Equal(js.Differences, want) {
		t.Errorf("json differences %v (%v)", js.Differences, err)
	}
	// CSV stays cells only: a row of settings would be read as a cell.
	if strings.Contains(outputs["csv"], "profile") || strings.Contains(outputs["csv"], "cap") {
		t.Errorf("csv carries settings:\n%s", outputs["csv"])
	}
	// The same run: no difference, and the header says so.
	same := Compare(full, full, "a", "b", IOPS)
	var b bytes.Buffer
	if err := WriteComparison(&b, same, "text"); err != nil {
		t.Fatal(err)
	}
	if same.Differences == nil || len(same.Differences) != 0 || !strings.Contains(b.String(), "same target, size, settings, cap and host") {
		t.Errorf("same run: %v\n%s", same.Differences, b.String())
	}
}

// A fio import knows neither the disk nor whether it rotates: unknown, not
// "false".
func TestDifferenceRotationalUnknownWithoutDisk(t *testing.T) {
	full := loadFixture(t, "full-missing")
	imported := loadFixture(t, "full-missing")
	imported.Target = results.TargetInfo{Path: full.Target.Path}
	for _, d := range Compare(full, imported, "a", "b", IOPS).Differences {
		if d.Setting == "rotational" && d.New != "unknown" {
			t.Errorf("%v", d)
		}
	}
}

// Two load–latency sweeps of the same shares compare load by load: each
// share of its own run's maximum (so at other offered IOPS, and under
// other names) against the same share of the other's, on p99 response
// time; no load is listed as only in one run.
func TestCompareLoads(t *testing.T) {
	base := curveDoc()
	cur := curveDoc()
	// The new run's device is 10 % faster: every load offers 10 % more,
	// and its 50 % load's tail is half as long.
	cur.Results[0].Total.IOPS = 55000
	for i := 1; i < len(cur.Results); i++ {
		r := &cur.Results[i]
		offered := math.Round(r.Pattern.Rate.IOPS * 1.1)
		p99 := float64(r.Total.ResponseLatNS.P99) / 1000
		if i == 5 {
			p99 /= 2
		}
		*r = rateResult(offered, offered, p99, results.ArrivalPoisson)
	}
	c := Compare(base, cur, "a.json", "b.json", IOPS)
	if c.Err() != nil || len(c.Loads) != 10 || len(c.OnlyBase) != 0 || len(c.OnlyNew) != 0 || len(c.Cells) != 1 {
		t.Fatalf("loads %d, only %v %v, cells %d, err %v", len(c.Loads), c.OnlyBase, c.OnlyNew, len(c.Cells), c.Err())
	}
	half := c.Loads[4]
	if half.SharePct != 50 || half.BaseOffered != 25000 || half.NewOffered != 27500 || math.Abs(half.Ratio-0.5) > 0.01 {
		t.Errorf("the 50 %% load: %+v", half)
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, c, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"load–latency rand-4k-r100-qd32, poisson arrivals: p99 response time", "| 50% of max ", "-50.0 %", "| 100% of max "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	// Without a maximum, loads pair on their offered IOPS, and loads
	// alone are something compared; at other IOPS they do not pair.
	base.Results = base.Results[1:]
	same := curveDoc()
	same.Results = same.Results[1:]
	if c := Compare(base, same, "a.json", "b.json", IOPS); c.Err() != nil || len(c.Loads) != 10 || c.Loads[0].SharePct != 0 {
		t.Errorf("without the maxima: %d loads, %v", len(c.Loads), c.Err())
	}
	cur.Results = cur.Results[1:]
	if c := Compare(base, cur, "a.json", "b.json", IOPS); len(c.Loads) != 0 || len(c.OnlyBase) != 10 || c.Err() == nil {
		t.Errorf("other IOPS without the maxima: %d loads paired, %d only in base, %v", len(c.Loads), len(c.OnlyBase), c.Err())
	}
}

// The same run on plain data and on data that compresses: the cells pair
// by their names without the content, and the differences name each
// side's content.
func TestComparePairsAcrossDataContent(t *testing.T) {
	base, cur := loadFixture(t, "capped"), loadFixture(t, "capped")
	for i := range cur.Results {
		r := &cur.Results[i]
		if r.Pattern.Writes() {
			r.Pattern.Compress = 50
			r.Name = r.Pattern.Name()
		}
	}
	c := Compare(base, cur, "a", "b", IOPS)
	if len(c.OnlyBase) != 0 || len(c.OnlyNew) != 0 || len(c.Cells) != len(base.Results) {
		t.Errorf("only base %v, only new %v, %d cells of %d", c.OnlyBase, c.OnlyNew, len(c.Cells), len(base.Results))
	}
	want := []Difference{{"data content", "random, unique", "compress 50 %"}}
	if !slices.Equal(c.Differences, want) {
		t.Errorf("differences %v, want %v", c.Differences, want)
	}
	// A run of several contents pairs by whole names.
	i := slices.IndexFunc(cur.Results, func(r results.Result) bool { return r.Pattern.Writes() })
	cur.Results[i].Pattern.Compress = 0
	cur.Results[i].Name = cur.Results[i].Pattern.Name()
	c = Compare(base, cur, "a", "b", IOPS)
	if len(c.OnlyNew) == 0 || c.Differences[0].New != "compress 50 %; random, unique" {
		t.Errorf("mixed contents: only new %v, differences %v", c.OnlyNew, c.Differences)
	}
}
