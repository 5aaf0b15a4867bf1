package results

import "testing"

func TestConfidence(t *testing.T) {
	for _, c := range []struct {
		samples uint64
		want    string
	}{
		{0, ""}, {1, "p99 p99.9 p99.99"}, {999, "p99 p99.9 p99.99"}, {1000, "p99.9 p99.99"},
		{9999, "p99.9 p99.99"}, {10000, "p99.99"}, {99999, "p99.99"}, {100000, ""},
	} {
		var l Latency
		l.MarkConfidence(c.samples)
		if l.LowConfidence != c.want {
			t.Errorf("%d samples: low confidence %q, want %q", c.samples, l.LowConfidence, c.want)
		}
	}
	if (Latency{}).Samples(42) != 42 || (Latency{Count: 7}).Samples(42) != 7 {
		t.Errorf("Samples: the count first, else the I/Os")
	}
}
