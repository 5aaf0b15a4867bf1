package session

import (
	"strings"
	"testing"
)

// Buffered writes escape a cap on v1 always, on v2 unless the cgroup has
// the memory controller as well as io: throttle says so exactly then.
func TestWritebackWarning(t *testing.T) {
	for _, tc := range []struct {
		version int
		enabled []string
		warn    string
	}{
		{1, []string{"blkio"}, "cgroup v1 limits direct I/O only"},
		{2, []string{"io"}, "memory controller"},
		{2, []string{"io", "memory"}, ""},
	} {
		got := writebackWarning(tc.version, tc.enabled)
		if (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
			t.Errorf("v%d with %q: %q, want %q", tc.version, tc.enabled, got, tc.warn)
		}
	}
}
