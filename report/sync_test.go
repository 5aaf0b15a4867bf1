package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

func TestDescribeSync(t *testing.T) {
	for sync, want := range map[string]string{
		"dsync":         "dsync: each write completes once it is durable (RWF_DSYNC)",
		"fdatasync:1":   "fdatasync:1: each write is followed by an fdatasync, its wait counted in that write's latency",
		"fsync:2:after": "fsync:2:after: every 2nd write is followed by an fsync issued once the write has completed, its wait counted in that write's latency",
		"fsync:2":       "fsync:2: every 2nd write is followed by an fsync, its wait counted in that write's latency",
		"fsync:11":      "fsync:11: every 11th write is followed by an fsync, its wait counted in that write's latency",
		"fsync:21":      "fsync:21: every 21st write is followed by an fsync, its wait counted in that write's latency",
	} {
		if got := DescribeSync(sync); got != want {
			t.Errorf("%s: %q, want %q", sync, got, want)
		}
	}
}

// A durable-write cell's text says its mode, shows its syncs' own latency
// as a row of its own and their counts, and the disk's flushes, and which
// of the requests not iomatrix's its syncs explain.
func TestRunTextSyncs(t *testing.T) {
	doc := loadFixture(t, "total-lat")
	res := *fixtureResult(t, doc, "rand-4k-r0-qd1")
	res.Pattern.Sync = "fdatasync:1"
	res.Syncs = &results.SyncStats{Submitted: 2656, Completed: 2655, LatNS: results.Latency{Min: 20000, Mean: 40000, P50: 38000, P90: 50000, P99: 90000, Max: 120000, Count: 2655}}
	res.Device = results.DevStats{IOs: 7965, UtilPct: 50, OtherIOs: 5310, SyncIOs: 5310, Flushes: 2655}
	var b bytes.Buffer
	testenv.Must(t, WriteRunText(&b, doc, &res))
	for _, want := range []string{
		"durable writes: fdatasync:1: each write is followed by an fdatasync, its wait counted in that write's latency\n",
		"\nsync                                20.0      40.0      38.0      50.0      90.0",
		"syncs: 2,656 submitted, 2,655 completed, 0 failed",
		"(5,310 of them not iomatrix's, 5,310 of those explained by its syncs' journal commits), 2,655 flushes\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("run text lacks %q:\n%s", want, b.String())
		}
	}
}

// OpenMetrics labels a durable-write cell with its mode, and a plain
// cell keeps its label set.
func TestOpenMetricsSyncLabel(t *testing.T) {
	p := results.Pattern{Access: results.Sequential, BlockSize: 4096, QueueDepth: 1, Jobs: 1}
	plain := results.Result{Name: p.Name(), Pattern: p}
	p.Sync = "fdatasync:1"
	synced := results.Result{Name: p.Name(), Pattern: p}
	has := func(r results.Result) bool {
		for _, l := range patternLabels(nil, r, "write") {
			if l.name == "sync" {
				return l.value == r.Pattern.Sync
			}
		}
		return false
	}
	if has(plain) || !has(synced) {
		t.Errorf("plain labelled %v, durable labelled %v", has(plain), has(synced))
	}
}
