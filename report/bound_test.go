package report

import (
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// --metric iops@p99<2ms: per row, the best IOPS among the cells whose
// p99 proves the bound, computed here from the results directly; a row
// whose cells cannot prove it (approximate mixed cells) is empty.
func TestBoundMetricBestPerRow(t *testing.T) {
	m, err := ParseMetric("iops@p99<2ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range []string{"full-missing", "total-lat"} {
		doc := loadFixture(t, fx)
		mx := BuildMetric(doc.Results, m)
		for _, tb := range mx.Tables {
			if tb.Access != results.Random {
				continue
			}
			for i, row := range tb.Rows {
				want := 0.0
				for _, r := range doc.Results {
					if r.Pattern.Access != results.Random || r.Pattern.BlockSize != tb.BlockSize || ReadLabel(r.Pattern.ReadPct) != row {
						continue
					}
					p99, f := LatP99.Measure(r)
					if p99 < 2000 && f&(FlagApprox|FlagFewIOs) == 0 && r.Total.IOPS > want {
						want = r.Total.IOPS
					}
				}
				c := tb.Cells[i][0]
				switch {
				case want == 0 && c != nil:
					t.Errorf("%s %s %s: %v, want empty", fx, tb.Title, row, c.Value)
				case want > 0 && (c == nil || c.Value != want):
					t.Errorf("%s %s %s: %v, want %v", fx, tb.Title, row, c, want)
				}
			}
		}
	}
	text := string(render(t, writeText, loadFixture(t, "full-missing"), Options{Metric: m}))
	if !strings.Contains(text, "121,770 @QD64") || !strings.Contains(text, "best IOPS with p99<2ms") {
		t.Errorf("text rendering:\n%s", text)
	}
}
