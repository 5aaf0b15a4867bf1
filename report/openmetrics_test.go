package report

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// The OpenMetrics text of a full sweep and of a fleet, as golden files;
// every series is unique, every family announced once, the text ends
// with # EOF, and no quantile is published that rests on too few I/Os.
func TestOpenMetrics(t *testing.T) {
	full := loadFixture(t, "full-missing")
	for name, doc := range map[string]*results.Document{"full-missing.prom": full, "fleet.prom": fleetFixture(t)} {
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
	for name, doc := range map[string]*results.Document{"full": loadFixture(t, "full-missing"), "fleet": fleetFixture(t)} {
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
