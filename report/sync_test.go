package report

import "testing"

func TestDescribeSync(t *testing.T) {
	for sync, want := range map[string]string{
		"dsync":       "dsync: each write completes once it is durable (RWF_DSYNC)",
		"fdatasync:1": "fdatasync:1: each write is followed by an fdatasync, its wait counted in that write's latency",
		"fsync:2":     "fsync:2: every 2nd write is followed by an fsync, its wait counted in that write's latency",
		"fsync:11":    "fsync:11: every 11th write is followed by an fsync, its wait counted in that write's latency",
		"fsync:21":    "fsync:21: every 21st write is followed by an fsync, its wait counted in that write's latency",
	} {
		if got := DescribeSync(sync); got != want {
			t.Errorf("%s: %q, want %q", sync, got, want)
		}
	}
}
