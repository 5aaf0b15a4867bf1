package report

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// The OpenMetrics text of a full sweep and of a fleet, as golden files;
// every series is unique, every family announced once, the text ends
// with # EOF, and no quantile is published that rests on too few I/Os.
func TestOpenMetrics(t *testing.T) {
	full := loadFixture(t, "full-missing")
	for name, doc := range map[string]*results.Document{"full-missing.prom": full, "fleet.prom": fleetFixture(t), "hist.prom": loadFixture(t, "hist")} {
		out := render(t, writeOpenMetrics, doc, Options{})
		golden(t, name, out)
		text := string(out)
		if !strings.HasSuffix(text, "\n# EOF\n") {
			t.Errorf("%s: does not end with # EOF", name)
		}
		seen := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			series := line[:strings.LastIndexByte(line, ' ')]
			if seen[series] {
				t.Errorf("%s: series twice: %s", name, series)
			}
			seen[series] = true
		}
		if strings.Count(text, "# TYPE iomatrix_iops gauge\n") != 1 || strings.Count(text, "# TYPE iomatrix_latency_seconds summary\n") != 1 {
			t.Errorf("%s: families not announced once each", name)
		}
	}
	// A low-confidence percentile is left out: the p99.99 of a read cell
	// of fewer than 100,000 I/Os.
	var r *results.Result
	for i := range full.Results {
		if c := full.Results[i]; c.Pattern.ReadPct == 100 && c.Read.IOs >= 1000 && c.Read.IOs < 100000 {
			r = &full.Results[i]
			break
		}
	}
	if r == nil {
		t.Fatal("no read cell of fewer than 100,000 I/Os in the fixture")
	}
	text := string(render(t, writeOpenMetrics, &results.Document{Host: full.Host, Target: full.Target, Results: []results.Result{*r}}, Options{}))
	if strings.Contains(text, `op="read",quantile="0.9999"`) || !strings.Contains(text, `op="read",quantile="0.99"}`) {
		t.Errorf("%s (%d I/Os): p99.99 published or p99 missing:\n%s", r.Name, r.Read.IOs, text)
	}
}

// promtool, Prometheus's own checker, accepts both documents.
func TestOpenMetricsPromtool(t *testing.T) {
	promtool := testenv.Command(t, "promtool")
	for name, doc := range map[string]*results.Document{"full": loadFixture(t, "full-missing"), "fleet": fleetFixture(t), "hist": loadFixture(t, "hist")} {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(render(t, writeOpenMetrics, doc, Options{}))
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("%s: promtool check metrics: %v\n%s", name, err, out)
		}
	}
}

// OpenMetrics carries every figure of every result whatever the metric;
// a metric that picks one cell per row has nothing to pick there and is
// refused, naming the option, while the formats that draw matrices take it.
func TestCheckMetric(t *testing.T) {
	bound, err := ParseMetric("iops@p99<2ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range Formats() {
		for _, m := range append(append([]Metric(nil), Metrics...), bound) {
			err := CheckMetric(format, m)
			_, bounded := m.Bounded()
			if refuse := bounded && format == "openmetrics"; !refuse {
				if err != nil {
					t.Errorf("%s, %s: %v", format, m, err)
				}
				continue
			}
			var ie *fault.InputError
			if !errors.As(err, &ie) || ie.Option != "metric" || !strings.Contains(err.Error(), string(m)) {
				t.Errorf("%s, %s: %v, want bad input naming the metric option and %s", format, m, err, m)
			}
		}
	}
	if _, err := Lookup("openmetrics"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeOpenMetrics(&buf, loadFixture(t, "full-missing"), Options{Metric: bound}); err == nil {
		t.Error("the writer took a metric it cannot show")
	}
}

// The distribution family: per series the buckets rise to the count, the
// +Inf bucket is the count, the total's count is both directions', and a
// bucket bound holds as many I/Os as the histogram has at or below it.
func TestOpenMetricsDistribution(t *testing.T) {
	doc := loadFixture(t, "hist")
	text := string(render(t, writeOpenMetrics, doc, Options{}))
	const family = "iomatrix_latency_distribution_seconds"
	if strings.Count(text, "# TYPE "+family+" histogram\n") != 1 {
		t.Fatal("the distribution family is not announced once")
	}
	for _, r := range doc.Results {
		for _, op := range []string{"read", "write", "total"} {
			sel := `pattern="` + r.Name + `",`
			var buckets []float64
			var count float64 = -1
			for _, line := range strings.Split(text, "\n") {
				if !strings.Contains(line, sel) || !strings.Contains(line, `op="`+op+`"`) {
					continue
				}
				v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				testenv.Must(t, err)
				switch {
				case strings.HasPrefix(line, family+"_bucket"):
					buckets = append(buckets, v)
				case strings.HasPrefix(line, family+"_count"):
					count = v
				}
			}
			want := map[string]uint64{"read": r.Read.IOs, "write": r.Write.IOs, "total": r.Total.IOs}[op]
			if want == 0 {
				if buckets != nil {
					t.Errorf("%s %s: buckets without I/O", r.Name, op)
				}
				continue
			}
			if len(buckets) != len(omBounds)+1 || count != float64(want) || buckets[len(buckets)-1] != count || !slices.IsSorted(buckets) {
				t.Errorf("%s %s: %d buckets %v, count %v, want %d I/Os", r.Name, op, len(buckets), buckets, count, want)
			}
		}
	}
	// A bound counts the histogram's buckets whose value is at or below it.
	r := doc.Results[0]
	h, err := r.Read.LatNS.Histogram()
	if err != nil || h == nil {
		t.Fatal(err)
	}
	var below uint64
	for i := range hist.Buckets {
		if hist.Value(i) <= 1e6 { // 1 ms
			below += h.At(i)
		}
	}
	want := fmt.Sprintf(`pattern="%s",access="sequential",block_size_bytes="1048576",read_pct="100",queue_depth="8",jobs="1",op="read",le="0.001"} %d`, r.Name, below)
	if !strings.Contains(text, want) {
		t.Errorf("no line ending %s", want)
	}
}
