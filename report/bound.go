package report

import (
	"strings"
	"time"
)

// Bound is a latency limit on one metric: p99 < 2ms.
type Bound struct {
	Metric Metric // LatP50, LatP99, LatP999 or LatMean
	Max    time.Duration
}

func (b Bound) String() string {
	return strings.TrimPrefix(string(b.Metric), "lat-") + "<" + b.Max.String()
}

// BoundError says why a latency bound is not one; Text is the bound as
// given ("p99<soon"), for the caller to place in its own terms.
type BoundError struct {
	Text, Why string
}

func (e *BoundError) Error() string { return e.Text + ": " + e.Why }

var boundMetrics = map[string]Metric{"p50": LatP50, "p99": LatP99, "p99.9": LatP999, "mean": LatMean}

// ParseBound reads a latency bound given as its two sides, metric < max:
// "p99" (p50, p99, p99.9 or mean) and "2ms" (a positive duration; µs may
// be written as such). Its errors are *BoundError.
func ParseBound(metric, max string) (Bound, error) {
	m, ok := boundMetrics[metric]
	if !ok {
		return Bound{}, &BoundError{Text: metric + "<" + max, Why: "not a latency bound: p50, p99, p99.9 or mean, e.g. p99<2ms"}
	}
	d, err := time.ParseDuration(strings.ReplaceAll(max, "µs", "us"))
	if err != nil || d <= 0 {
		return Bound{}, &BoundError{Text: metric + "<" + max, Why: "not a duration (e.g. 2ms, 500us)"}
	}
	return Bound{Metric: m, Max: d}, nil
}
