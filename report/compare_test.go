package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
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
