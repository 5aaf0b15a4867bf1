package report

import (
	"bytes"
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
	if gm := math.Exp(logs / 6); math.Abs(gm-c.GeoMean) > 1e-9 {
		t.Errorf("geomean %v, want %v", c.GeoMean, gm)
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
