package results

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/hist"
)

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

// A result's histograms go through the results file and come back exactly;
// one that disagrees with its summary is refused on reading.
func TestHistogramRoundTrip(t *testing.T) {
	var reads, writes hist.Histogram
	for i := range 5000 {
		reads.Record(int64(20_000 + i*7%3000))
		writes.Record(int64(400_000 + i*131%900_000))
	}
	r := Result{Name: "rand-4k-r50-qd4", Pattern: Pattern{Access: Random, BlockSize: 4096, ReadPct: 50, QueueDepth: 4, Jobs: 1},
		Read:  DirStats{IOs: reads.Count(), LatNS: Summarize(&reads)},
		Write: DirStats{IOs: writes.Count(), LatNS: Summarize(&writes)}}
	doc := &Document{SchemaVersion: SchemaVersion, Tool: Tool{Name: "iomatrix", Version: Version}, Results: []Result{r}}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadDocument(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		got  Latency
		want *hist.Histogram
	}{{back.Results[0].Read.LatNS, &reads}, {back.Results[0].Write.LatNS, &writes}} {
		h, err := d.got.Histogram()
		if err != nil || h == nil || !h.Equal(d.want) {
			t.Errorf("histogram read back differs (%v)", err)
		}
	}
	var union hist.Histogram
	union.Merge(&reads)
	union.Merge(&writes)
	if all, err := back.Results[0].LatencyHistogram(); err != nil || all == nil || !all.Equal(&union) {
		t.Errorf("the total's histogram is not the union of the directions' (%v)", err)
	}
	again, _ := json.Marshal(back)
	if !bytes.Equal(again, data) {
		t.Error("written again, the file differs")
	}

	doc.Results[0].Read.LatNS.Count++
	data, _ = json.Marshal(doc)
	if _, err := ReadDocument(bytes.NewReader(data)); err == nil || !strings.Contains(err.Error(), "read.lat_ns.hist") {
		t.Errorf("a histogram that disagrees with its count: %v", err)
	}
}
