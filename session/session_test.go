package session

import (
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// A cell where another process loaded the disk gets a notice: a fifth of
// its requests, or of its bytes, not iomatrix's.
func TestOtherLoadNotice(t *testing.T) {
	res := results.Result{Name: "rand-4k-r70-qd8"}
	const mib = 1 << 20
	for _, tc := range []struct {
		ios, other, bytes, otherBytes uint64
		notice                        bool
	}{
		{85417, 79202, 0, 0, true},
		{10000, 400, 0, 0, false}, // a few hundred: timing at the window's edges
		{100000, 5000, 0, 0, false},
		{10000, 2500, 0, 0, true},
		// A writeback storm beside 4K reads at QD1: few requests, most of
		// the bytes (1,653 reads and 280 MiB in 300 requests of 1 MiB).
		{1953, 300, 286 * mib, 280 * mib, true},
		{10000, 100, 100 * mib, 10 * mib, false}, // a tenth of the bytes
		{2000, 50, 18 * mib, 10 * mib, false},    // under 16 MiB
	} {
		r := res
		r.Device = results.DevStats{IOs: tc.ios, OtherIOs: tc.other, Bytes: tc.bytes, OtherBytes: tc.otherBytes}
		e := OtherLoadNotice(r, "vda")
		if got := strings.Contains(e, "another process was loading the device"); got != tc.notice {
			t.Errorf("%d of %d requests, %d of %d bytes not iomatrix's: notice %v, want %v (%q)", tc.other, tc.ios, tc.otherBytes, tc.bytes, got, tc.notice, e)
		}
	}
}
